"""Diagnostics as the service answers them: `diagnostics(path) -> FileDiagnostics`,
`files_diagnostics(paths, first)` (each file's, or its error, asked at once; the others
wait no longer than the `first` took), `workspace_diagnostics(folder=...) ->
FolderDiagnostics` (fresh, as get_diagnostics shows them: a folder asks every diagnostic
server of each of its languages; a server that pulls workspace diagnostics is pulled, one
that reports only open files has the folder's files opened in batches while the call's
time lasts, the rest making the answer `partial`), `server_diagnostics(path)` (each
server's own items, for code actions), and `open_files(languages, limit)` (the files an
edit of another may break).

The diagnostics part gathers them (inside the gate) and calls the servers itself: these
hand over its coroutines, so the service is not a step of their line.

`ServiceDiagnostics` is the part of `service.LanguageService` (one of its bases) that hands
them over: its methods are the service's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeward.daemon.lsp.diagnostics import (
        Diagnostics,
        FileDiagnostics,
        FolderDiagnostics,
        ServerDiagnostics,
    )
    from codeward.daemon.lsp.folder_diagnostics import Folders
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.routing import Languages
    from codeward.protocol.errors import ToolError


class ServiceDiagnostics:
    """A service's diagnostics, handed to its diagnostics parts (a base of
    `LanguageService`, which gives the state below)."""

    if TYPE_CHECKING:
        root: Path
        pool: ServerPool
        languages: Languages
        diagnostics_of: Diagnostics
        folders: Folders

    def diagnostics(
        self, path: Path, servers: Sequence[str] | None = None
    ) -> Awaitable[FileDiagnostics]:
        """Diagnostics of every diagnostic server (or those of `servers`) for the file's
        current content (fresh); inside a preview of the file, for the preview's text."""
        return self.diagnostics_of.file(path, servers)

    def files_diagnostics(
        self, paths: Sequence[Path], first: Collection[Path] = ()
    ) -> Awaitable[dict[Path, FileDiagnostics | ToolError]]:
        """Each file's diagnostics (as `diagnostics`), asked at once: by path, its answer
        or the error it failed with; the others than `first` wait no longer than those
        (see `Diagnostics.files`)."""
        return self.diagnostics_of.files(paths, first)

    def workspace_diagnostics(
        self, languages: Sequence[str] | None = None, folder: Path | None = None
    ) -> Awaitable[FolderDiagnostics]:
        """Diagnostics of every file under `folder` (default: the root), fresh."""
        return self.folders.folder(languages, folder)

    def server_diagnostics(self, path: Path) -> Awaitable[ServerDiagnostics]:
        """Each diagnostic server's own diagnostics of the file now, for code actions."""
        return self.diagnostics_of.by_server(path)

    def open_files(self, languages: Sequence[str], limit: int) -> list[Path]:
        """Up to `limit` files under the root the servers of `languages` have open, most
        recently used first (the files an edit of another file may break)."""
        names = set(self.languages.servers_of(languages))
        found: dict[Path, None] = {}
        for name in sorted(names):
            server = self.pool.servers.get(name)
            if server is not None:
                for doc in reversed(server.open_documents()):
                    if doc.path.is_relative_to(self.root):  # not another root's (shared)
                        found.setdefault(doc.path, None)
        return list(found)[:limit]
