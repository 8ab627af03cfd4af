"""The service's life in its session and the session's hooks: `run` (the server actors and
the root watcher, owned until cancelled), `status()`, `park(reason)`, `restart_failed()`,
`warm()` (start the main languages' first servers: an agent's session), `await
set_restricted(bool)`, `files_changed(paths)`, `flush()`, `busy`, `restricted`;
`formatting_off(server)` says why a server does not format in an untrusted root,
`servers_of(language)` and `code_actions_at(server)` what the session's tools ask of its
config.

`SessionHooks` is the part of `service.LanguageService` (one of its bases) the session
calls: its methods are the service's own, the state they share declared below."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.lsp.project import main_languages
from codeward.daemon.lsp.restricted import FORMATTING_OFF
from codeward.daemon.lsp.watcher import watch_root
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.budget import ServerBudget
    from codeward.daemon.lsp.editors import Editors
    from codeward.daemon.lsp.file_events import FileEvents
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.project_listing import Listing
    from codeward.daemon.lsp.routing import Languages
    from codeward.daemon.lsp.shared import SharedServers

WARM_WALK_LIMIT = 5000  # files `warm` looks at to tell the main languages (as session/open)


class SessionHooks:
    """What the session calls on its service (a base of `LanguageService`, which gives the
    state below)."""

    if TYPE_CHECKING:
        root: Path
        budget: ServerBudget | None
        shared: SharedServers | None
        repository: str | None
        pool: ServerPool
        languages: Languages
        events: FileEvents
        editors: Editors
        last_used: float  # trio time of its last request's end
        _in_flight: int
        _watching: bool

        def project_files(self, limit: int = ..., folder: Path | None = None) -> Listing: ...

    async def run(
        self, *, watch: bool = True, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the server actors and the root watcher until cancelled; then stop every server."""
        async with trio.open_nursery() as nursery:
            self.pool.nursery = nursery
            if watch:
                await nursery.start(watch_root, self.root, self.events.on_watch)
                self._watching = True
            nursery.start_soon(self.events.run)
            task_status.started()
            if self.budget is not None:
                self.budget.managers.add(self)
            try:
                await trio.sleep_forever()
            finally:
                self._watching = False
                self.pool.nursery = None
                self.pool.release()
                if self.shared is not None and self.repository is not None:
                    self.shared.leave(self.repository)
                if self.budget is not None:
                    self.budget.managers.discard(self)

    def status(self) -> list[dict[str, Any]]:
        return self.pool.status()

    @property
    def restricted(self) -> bool:
        return self.pool.restricted

    def formatting_off(self, server: str) -> str | None:
        """Why server `server` does not format in this (untrusted) root, else None."""
        return FORMATTING_OFF.get(server) if self.pool.restricted else None

    def servers_of(self, language: str) -> list[str]:
        """The servers of `language` in routing order, as the project narrowed them."""
        return self.languages.servers(language)

    def code_actions_at(self, server: str) -> str:
        """Where server `server` answers quick fixes: its config's `code_actions_at`."""
        config = self.pool.configs.get(server)
        return config.code_actions_at if config is not None else "range"

    @property
    def busy(self) -> bool:
        """Whether a request is in flight on any of its servers."""
        return self._in_flight > 0 or any(s.busy for s in self.pool.servers.values())

    def park(self, reason: str) -> None:
        """Stop every live server; each starts again on its next need."""
        self.pool.park(reason)

    def restart_failed(self) -> None:
        """Failed or missing servers start again on their next need."""
        self.pool.restart_failed()

    def warm(self) -> list[str]:
        """Start, in the background, the first installed server of each of the project's
        main languages (`project.main_languages`: configuration files' never), which an
        agent's first question will need: their start overlaps the rest of the daemon's.
        The servers started (or already running)."""
        started: list[str] = []
        for language in main_languages(self.project_files(limit=WARM_WALK_LIMIT)[0]):
            for name in self.languages.servers(language):
                if self.pool.unavailable(name, language) is not None:
                    continue  # not installed, or not in an untrusted root: the next one
                with contextlib.suppress(ToolError):  # failed lately: on its next need
                    self.pool.server_for(name, language).start()
                    started.append(name)
                break
        return started

    async def set_restricted(self, restricted: bool) -> None:
        """The root's trust changed: servers restart in the configuration it allows."""
        await self.pool.set_restricted(restricted)
        await self.editors.reshow()  # new actors: the editors' buffers again

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        """Files changed by git writes or edits (`created`: the new ones among them): the
        servers are told before the next request."""
        self.events.files_changed(paths, created)

    async def flush(self) -> None:
        """Tell running servers everything that changed on disk up to now."""
        await self.events.flush()
