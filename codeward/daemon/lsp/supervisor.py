"""The life of one language-server process: start on first need, initialize, watch,
restart with backoff, stop.

A crash restarts the server after a backoff (0.5 s doubling to 30 s); after
`lsp.crash_limit` crashes in 5 minutes it stays `failed` until a request after a cool-down,
or `retry()`. Requests in flight fail at once when the process goes. A watch task restarts
a running server whose process group grows past its memory cap (between requests), or that
leaves a request it was told to cancel unanswered for `lsp.cancel_grace` seconds while it
shows no work (no work-done progress active, almost no CPU used), or ten times as long;
`halt`
restarts (or parks) it on demand.
"""

from __future__ import annotations

import collections
import logging
import os
import shlex
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.config import LspConfig, ServerConfig
from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.connection import (
    ConnectionClosed,
    LspConnection,
    NotificationHandler,
    RequestHandler,
    RequestTimeout,
    ResponseError,
)
from codeward.daemon.lsp.defaults import command_available
from codeward.daemon.lsp.early_process import Handover
from codeward.daemon.lsp.initialize import initialize_params, server_capabilities
from codeward.daemon.lsp.process import ServerProcess, is_stopped
from codeward.daemon.lsp.server_state import ServerState
from codeward.daemon.lsp.server_watch import ServerWatch
from codeward.daemon.lsp.shapes import OffSpec
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

log = logging.getLogger("codeward.lsp")

BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
CRASH_WINDOW = 300.0
FAILED_COOLDOWN = 30.0


class _StartFailed(Exception):
    """The server started but did not complete the handshake."""


OnRunning = Callable[[LspConnection, Capabilities], None]


class Supervisor(ServerWatch):
    """Owns the process and its connection; `state` says where in its life it is.

    `on_spawn()` runs when a new process is up (before the handshake), `on_running(conn,
    capabilities)` once `initialized` is sent: the actor resets what the last process said
    and opens its documents again there.
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        folders: Callable[[], Sequence[Path]],
        lsp: LspConfig,
        max_message: int,
        changes: Changes,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        on_spawn: Callable[[], None],
        on_running: OnRunning,
        configured: bool = False,
        shed: Callable[[], int] = lambda: 0,
        working: Callable[[], bool] = lambda: False,
    ) -> None:
        self.name = name
        self.config = config
        self.configured = configured  # its command is the user's config entry, taken as given
        self.folders = folders  # its workspace folders now (the first its root's)
        self.root = folders()[0]
        self.lsp = lsp
        self.max_message = max_message
        self.changes = changes
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_spawn = on_spawn
        self._on_running = on_running
        self._shed = shed  # near its cap: close what it can; how many documents
        self._working = working  # its work-done progress is active: it is not hung
        self.state = ServerState.IDLE
        self.pid: int | None = None
        self.restarts = 0
        self.last_error = ""
        self.stderr: list[str] = []
        self.restart_reason = ""  # why it was last restarted or stopped on purpose
        self.running_since = 0.0
        self.last_used = 0.0
        self.on_start: Callable[[], None] | None = None  # the daemon's budget
        self.process: ServerProcess | None = None
        self.conn: LspConnection | None = None
        self.stopped = trio.Event()
        self._crashes: collections.deque[float] = collections.deque()
        self._failed_at = 0.0
        self._attempts = 0  # start attempts so far
        self._failed_attempt = 0  # the number of the last attempt that failed
        self._wanted = trio.Event()
        self._halt_scope: trio.CancelScope | None = None  # cancels the wait on the process
        self._halted: tuple[str, bool, bool] | None = None  # (reason, park, graceful)
        self._scope = trio.CancelScope()

    # -- state ------------------------------------------------------------------------

    def _set_state(self, state: ServerState) -> None:
        self.state = state
        self.changes.touch()

    @property
    def running(self) -> bool:
        conn = self.conn
        return self.state is ServerState.RUNNING and conn is not None and not conn.closed.is_set()

    @property
    def live(self) -> bool:
        """Whether it has (or is getting) a process."""
        return self.state in (ServerState.STARTING, ServerState.RUNNING)

    @property
    def busy(self) -> bool:
        """Whether it is starting, or a request is in flight (or a cancelled one is still
        unanswered)."""
        if self.state is ServerState.STARTING:
            return True
        conn = self.conn
        return conn is not None and (conn.in_flight > 0 or bool(conn.abandoned))

    def shown_state(self) -> ServerState:
        """The state, or UNRESPONSIVE for a running server stopped by a signal or with a
        request it was given up on still unanswered."""
        if self.state is not ServerState.RUNNING:
            return self.state
        process, conn = self.process, self.conn
        if process is not None and is_stopped(process.pid):
            return ServerState.UNRESPONSIVE
        if conn is not None and conn.abandoned:
            return ServerState.UNRESPONSIVE
        return self.state

    def stderr_tail(self) -> list[str]:
        return self.process.stderr_tail() if self.process is not None else self.stderr

    def halt(self, reason: str, *, park: bool = False, graceful: bool = True) -> None:
        """Stop the running process on purpose: restart it at once (not counted as a crash),
        or with `park` leave it idle until its next need. Requests in flight fail, naming
        `reason`."""
        if self._halt_scope is None or self._halted is not None:
            return
        self._halted = (reason, park, graceful)
        self.restart_reason = reason
        log.warning("%s: %s; %s", self.name, reason, "stopping" if park else "restarting")
        self._set_state(ServerState.IDLE if park else ServerState.RESTARTING)
        if self.conn is not None:
            self.conn.fail_pending(reason)
        self._halt_scope.cancel()

    def retry(self) -> None:
        """Start a failed (or missing) server again on its next need: `session/open` asked."""
        if self.state in (ServerState.FAILED, ServerState.UNAVAILABLE):
            self._crashes.clear()
            self._failed_at = 0.0
            self._set_state(ServerState.IDLE)

    # -- supervision ------------------------------------------------------------------

    async def run(self) -> None:
        """Supervise the server until cancelled or `stop()`; then stop it (shutdown, exit,
        TERM, KILL)."""
        try:
            with self._scope:
                while True:
                    await self._wanted.wait()
                    crash = await self._run_once()
                    halted, self._halted = self._halted, None
                    if halted is not None and halted[1]:  # parked: back on its next need
                        self._wanted = trio.Event()
                        self._set_state(ServerState.IDLE)
                        continue
                    if crash is None:  # not installed
                        self._wanted = trio.Event()
                        self._set_state(ServerState.UNAVAILABLE)
                        continue
                    # A restart on purpose (memory, a broken or unresponsive server) counts
                    # as a crash towards `failed`, without the backoff: no restart loop.
                    if halted is None:
                        self._failed_attempt = self._attempts
                        log.warning("%s crashed: %s", self.name, crash)
                    self.last_error = crash
                    now = trio.current_time()
                    self._crashes.append(now)
                    while self._crashes and self._crashes[0] < now - CRASH_WINDOW:
                        self._crashes.popleft()
                    if len(self._crashes) >= self.lsp.crash_limit:
                        self._failed_at = now
                        self._wanted = trio.Event()
                        self._set_state(ServerState.FAILED)
                        continue
                    self.restarts += 1
                    if halted is None:
                        self._set_state(ServerState.RESTARTING)
                        backoff = BACKOFF_START * 2 ** (len(self._crashes) - 1)
                        await trio.sleep(min(backoff, BACKOFF_MAX))
        finally:
            self._set_state(ServerState.STOPPED)
            self.stopped.set()

    def stop(self) -> None:
        """Stop the server for good (`stopped` is set once its process is gone)."""
        self._scope.cancel()

    async def _run_once(self) -> str | None:
        """Run one process until it dies: the reason, or None when it is not installed."""
        self._attempts += 1
        self._set_state(ServerState.STARTING)
        env = self.config.env
        if not command_available(self.config.command, env):
            self.last_error = "not installed"
            return None
        if self.on_start is not None:
            self.on_start()
        params = initialize_params(self.folders(), self.config.init_options)
        try:
            process = await ServerProcess.spawn(
                self.name,
                self.config.command,
                self.root,
                env,
                initialize=params,
                settings=self.config.settings,
            )
        except FileNotFoundError:
            self.last_error = "not installed"
            return None
        except OSError as exc:
            return f"it could not be run: {exc.strerror or exc.__class__.__name__}"
        early = process.early
        conn = LspConnection(
            self.name,
            process.stdin,
            process.stdout,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_message=self.max_message,
            unread=early.unread if early is not None else b"",
            hold=early.initialize_id if early is not None and early.initialized else None,
        )
        self.process, self.conn, self.pid = process, conn, process.pid
        self._on_spawn()
        io_scope = trio.CancelScope(shield=True)
        reason = "it stopped"
        self._halt_scope = halt = trio.CancelScope()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._io, process, conn, io_scope)
                try:
                    with halt:
                        await self._handshake(conn, params, early)
                        self.running_since = trio.current_time()
                        self._set_state(ServerState.RUNNING)
                        await conn.closed.wait()
                        reason = await self._crash_reason(process, conn)
                    if self._halted is not None:
                        reason = self._halted[0]
                except _StartFailed as exc:
                    reason = str(exc)
                except ConnectionClosed:
                    reason = await self._crash_reason(process, conn)
                finally:
                    self._halt_scope = None
                    graceful = self._halted is None or self._halted[2]
                    with trio.CancelScope(shield=True):
                        await self._stop(process, conn, graceful=graceful)
                        io_scope.cancel()
        finally:
            conn.close(reason)
            self.stderr = process.stderr_tail()
            self.process = self.conn = None
            self.pid = None
        return reason

    async def _io(
        self, process: ServerProcess, conn: LspConnection, scope: trio.CancelScope
    ) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.run)
                nursery.start_soon(process.pump_stderr)
                nursery.start_soon(self._watch, process, conn)
                await process.process.wait()
                with trio.move_on_after(1.0):  # let the reader drain what it wrote
                    await conn.closed.wait()
                conn.close(f"it exited with code {process.returncode}")

    async def _crash_reason(self, process: ServerProcess, conn: LspConnection) -> str:
        with trio.move_on_after(0.2):
            await process.process.wait()
        if process.returncode is not None and "not LSP" not in conn.close_reason:
            return f"it exited with code {process.returncode}"
        return conn.close_reason

    async def _handshake(
        self, conn: LspConnection, params: dict[str, Any], early: Handover | None
    ) -> None:
        """`initialize` with `params`, then `initialized` and the settings. A process
        started early was sent them: its answer is read (the timeout counts from here), and
        when `initialized` went out too, what the server wrote after the answer is read
        once the new run's state is set (`conn.release()`)."""
        timeout = self.lsp.initialize_timeout
        try:
            if early is None:
                result = await conn.request("initialize", params, timeout=timeout)
            else:
                result = await conn.adopt("initialize", early.initialize_id, timeout=timeout)
        except RequestTimeout:
            raise _StartFailed(f"it did not answer initialize within {timeout:g} s") from None
        except ResponseError as exc:
            raise _StartFailed(f"it refused initialize ({scrub(exc.message, self.root)})") from None
        try:
            capabilities = server_capabilities(self.name, result)
        except OffSpec as exc:
            raise _StartFailed(exc.detail) from None
        if early is None or not early.initialized:
            conn.notify("initialized", {})
            if self.config.settings:
                settings = {"settings": self.config.settings}
                conn.notify("workspace/didChangeConfiguration", settings)
        self._on_running(conn, capabilities)
        conn.release()

    async def _stop(
        self, process: ServerProcess, conn: LspConnection, *, graceful: bool = True
    ) -> None:
        """shutdown and exit when it still talks, then TERM and KILL its process group."""
        grace = self.lsp.shutdown_timeout
        if not graceful:
            process.signal_group(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        elif not conn.closed.is_set() and self._halt_or_running():
            with trio.move_on_after(grace):
                try:
                    await conn.request("shutdown", None, timeout=grace)
                    conn.notify("exit")
                    await process.process.wait()
                except (ConnectionClosed, RequestTimeout, ResponseError):
                    pass
        await process.terminate(grace)

    def _halt_or_running(self) -> bool:
        return self.state is ServerState.RUNNING or self._halted is not None

    # -- on need ----------------------------------------------------------------------

    def unavailable(self) -> ToolError:
        """The `lsp_unavailable` error naming what to install, or the config entry whose
        command is not there."""
        program = os.path.basename(self.config.command[0]) if self.config.command else ""
        if self.configured:
            where = "" if "/" in (self.config.command or [""])[0] else " on PATH"
            hint = self.config.install_hint or f"install {program}, or fix that entry"
            return ToolError(
                ErrorKind.LSP_UNAVAILABLE,
                f"The {self.name} language server is not installed where its command in the "
                f"config says ({self.entry()}): no program {program!r}{where}; {hint}.",
                server=self.name,
                entry=f"servers.{self.name}.command",
            )
        hint = self.config.install_hint or (
            f"install {program or self.name}, or fix servers.{self.name}.command in the config"
        )
        return ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"The {self.name} language server is not installed; {hint}.",
            server=self.name,
        )

    def entry(self) -> str:
        """The config entry of a configured command, as messages show it (its program's
        name, paths outside the root scrubbed)."""
        command = self.config.command or [""]
        shown = shlex.join([os.path.basename(command[0]), *command[1:]])
        return f"servers.{self.name}.command = `{scrub(shown, self.root)}`"

    def _failure(self, what: str, then: str) -> str:
        """`The NAME language server {what} ({why}); {then}.`, naming the config entry and
        telling to fix it when the command is the user's."""
        failed = f"The {self.name} language server {what} ({self.why()})"
        if self.configured:
            entry = f"from its command in the config ({self.entry()})"
            return f"{failed} {entry}; fix that entry, or {then}."
        return f"{failed}; {then}."

    def why(self) -> str:
        """The last error, with the last lines it wrote to stderr (paths scrubbed)."""
        why = scrub(self.last_error, self.root)
        tail = [scrub(line, self.root)[:200] for line in self.stderr[-3:]]
        return f"{why}; its stderr ended with: {' | '.join(tail)}" if tail else why

    def want(self) -> None:
        """Start it on this need (a failed server after its cool-down, a missing one once
        installed); raises the error that stands for it otherwise."""
        self.last_used = trio.current_time()
        if self.state is ServerState.FAILED:
            if trio.current_time() - self._failed_at < FAILED_COOLDOWN:
                wait = FAILED_COOLDOWN - (trio.current_time() - self._failed_at)
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    self._failure(
                        f"failed {len(self._crashes)} times",
                        f"retry in {wait:.0f} s, or open the session again",
                    ),
                    server=self.name,
                )
            self.retry()
        if self.state is ServerState.UNAVAILABLE:
            if not command_available(self.config.command, self.config.env):
                raise self.unavailable()
            self._set_state(ServerState.IDLE)
        self._wanted.set()

    async def connection(self) -> LspConnection:
        """The running server's connection, starting it on first need."""
        self.want()
        # The attempt that will serve this caller: the one starting now, else the next.
        target = self._attempts + (0 if self.state is ServerState.STARTING else 1)
        while True:
            conn = self.conn
            if self.state is ServerState.RUNNING and conn is not None and not conn.closed.is_set():
                return conn
            if self.state is ServerState.UNAVAILABLE:
                raise self.unavailable()
            if self.state is ServerState.STOPPED:
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    f"The {self.name} language server was stopped; open the session again.",
                    server=self.name,
                )
            if self.state is ServerState.FAILED:
                self.want()  # raises while it cools down; after it, a new chance
                target = self._attempts + 1
            if self._failed_attempt >= target:
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    self._failure("could not start", "see session/list for more"),
                    server=self.name,
                )
            if self.state is ServerState.IDLE:
                self._wanted.set()  # parked meanwhile: this caller needs it again
            await self.changes.wait()
