"""A language server's life as its actor shows it: its process's state and its start, stop,
halt and retry, handed to the actor's `Supervisor`, its connection on first need and its
status.

`ServerLifecycle` is the part of `server.LanguageServer` (one of its bases) that faces its
`Supervisor`: its methods are the actor's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import trio

from codeward.daemon.lsp.supervisor import ServerState
from codeward.daemon.paths import scrub

if TYPE_CHECKING:
    from codeward.daemon.config import ServerConfig
    from codeward.daemon.lsp.connection import LspConnection
    from codeward.daemon.lsp.freshness import Freshness
    from codeward.daemon.lsp.supervisor import Supervisor
    from codeward.daemon.lsp.sync import DocumentSync
    from codeward.protocol.errors import ToolError


class ServerLifecycle:
    """The process life of a server's actor (a base of `LanguageServer`, which gives the
    state below)."""

    if TYPE_CHECKING:
        name: str
        language: str
        root: Path
        _life: Supervisor
        _on_start: Callable[[Self], None] | None
        _docs: DocumentSync
        _freshness: Freshness

        @property
        def roots(self) -> list[Path]: ...

    @property
    def config(self) -> ServerConfig:
        return self._life.config

    @config.setter
    def config(self, config: ServerConfig) -> None:
        self._life.config = config

    @property
    def state(self) -> ServerState:
        return self._life.state

    @property
    def pid(self) -> int | None:
        return self._life.pid

    @property
    def restarts(self) -> int:
        return self._life.restarts

    @property
    def last_used(self) -> float:
        return self._life.last_used

    @property
    def stopped(self) -> trio.Event:
        return self._life.stopped

    @property
    def on_start(self) -> Callable[[Self], None] | None:
        return self._on_start

    @on_start.setter
    def on_start(self, hook: Callable[[Self], None] | None) -> None:
        """The daemon's budget, asked before each start."""
        self._on_start = hook
        self._life.on_start = None if hook is None else (lambda: hook(self))

    @property
    def running(self) -> bool:
        return self._life.running

    @property
    def live(self) -> bool:
        return self._life.live

    @property
    def busy(self) -> bool:
        return self._life.busy

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Supervise the server until cancelled or `stop()`; then stop it."""
        task_status.started()
        await self._life.run()

    def start(self) -> None:
        """Start the server now rather than on its first need."""
        self._life.want()

    def stop(self) -> None:
        self._life.stop()

    def halt(self, reason: str, *, park: bool = False, graceful: bool = True) -> None:
        self._life.halt(reason, park=park, graceful=graceful)

    def retry(self) -> None:
        self._life.retry()

    def unavailable(self) -> ToolError:
        return self._life.unavailable()

    async def connection(self) -> LspConnection:
        """The running server's connection, starting it on first need."""
        life = self._life
        conn = life.conn
        if life.state is ServerState.RUNNING and conn is not None and not conn.closed.is_set():
            life.last_used = trio.current_time()  # the common case: `want` has nothing to do
            return conn
        return await life.connection()

    def status(self) -> dict[str, Any]:
        life = self._life
        conn = life.conn
        return {
            "name": self.name,
            "language": self.language,
            "state": life.shown_state().value,
            "pid": life.pid,
            "restarts": life.restarts,
            "roots": [str(root) for root in self.roots],
            "open_documents": len(self._docs),
            "in_flight": conn.in_flight if conn is not None else 0,
            "progress": sorted(self._freshness.progress.values()),
            "last_error": scrub(life.last_error, self.root),
            "restart_reason": scrub(life.restart_reason, self.root),
            "stderr": [scrub(line, self.root) for line in life.stderr_tail()],
        }
