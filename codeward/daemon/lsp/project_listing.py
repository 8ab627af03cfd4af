"""Languages of paths and the project's files by language, as the service answers them:
`language_or_none(path)` (remembered; codeward's own `.codeward.toml` has none),
`language(path)`, `project_files()` (the one walk of `project.project_files`, kept while
the watcher sees no file come or go), `listing()` (the same off the event loop),
`project_languages()`, and `workspace_languages(files)`: the languages a question about
the whole project is about (running ones, and the main ones by file count; configuration
files' never).

`ProjectListing` is the part of `service.LanguageService` (one of its bases) that keeps the
last walk: its methods are the service's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from codeward.daemon.lsp.project import WALK_LIMIT, main_languages, project_files

if TYPE_CHECKING:
    from codeward.daemon.lsp.file_events import FileEvents
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.routing import Languages

Listing = tuple[dict[str, list[Path]], bool]  # files by language, and whether that is all


class ProjectListing:
    """The languages and the project's files of a service (a base of `LanguageService`,
    which gives the state below)."""

    if TYPE_CHECKING:
        root: Path
        pool: ServerPool
        languages: Languages
        events: FileEvents
        _watching: bool  # the watcher reports creations and deletions
        _listing: tuple[tuple[int, Path | None, int], Listing] | None

    def language_or_none(self, path: Path) -> str | None:
        """The language whose patterns match `path` (codeward's own files match none)."""
        return self.languages.of(path)

    def language(self, path: Path) -> str:
        """The language of `path`, or `unsupported_file_type`."""
        return self.languages.require(path)

    def configured_languages(self) -> list[str]:
        return sorted(self.languages.configs)

    def project_files(self, limit: int = WALK_LIMIT, folder: Path | None = None) -> Listing:
        """The files under `folder` (default: the root) by language, and whether that is
        all of them (see `project.project_files`; not to be changed by the caller). While
        the watcher runs, the last walk serves until a file is created or deleted."""
        key = (self.events.listing, folder, limit)
        listing = self._walked(key)
        if listing is None:
            listing = project_files(self.root, self.languages.configs, folder, limit)
            self._listing = (key, listing)
        return listing

    async def listing(self) -> Listing:
        """`project_files()` off the event loop: the walk in a worker thread, unless the
        last walk serves (then with no hop to a thread: an editor's `initialize` waits)."""
        listing = self._walked((self.events.listing, None, WALK_LIMIT))
        return listing or await trio.to_thread.run_sync(self.project_files)

    def _walked(self, key: tuple[int, Path | None, int]) -> Listing | None:
        if self._watching and self._listing is not None and self._listing[0] == key:
            return self._listing[1]
        return None

    def project_languages(self, limit: int = WALK_LIMIT) -> list[str]:
        """Languages with at least one file under the root (ignored folders skipped)."""
        return sorted(self.project_files(limit)[0])

    def workspace_languages(self, files: Mapping[str, Sequence[Path]]) -> list[str]:
        """The languages a question about the whole project (`files`: its walk) is about:
        those with files whose servers already run for the root, and its main languages
        by file count (`project.main_languages`: configuration files' languages never)."""
        running = {
            lang
            for lang in files
            if lang in self.languages.configs
            and any(
                (server := self.pool.servers.get(name)) is not None and server.live
                for name in self.languages.servers(lang)
            )
        }
        return sorted(running | set(main_languages(files)))
