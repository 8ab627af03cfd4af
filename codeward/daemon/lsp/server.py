"""One language server for one session root: an actor that spawns, handshakes, supervises
and stops its process, answers the server's requests and records what it publishes.

Supervision: a crash restarts the server after a backoff (0.5 s doubling to 30 s) and opens
its documents again; after `lsp.crash_limit` crashes in 5 minutes it stays `failed` until a
request after a cool-down, or `retry()`. Requests in flight fail at once when the process goes.
A watch task restarts a running server whose process group grows past its memory cap
(between requests), or that leaves a request it was told to cancel unanswered for
`lsp.cancel_grace` seconds; `halt` restarts (or parks) it on demand.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import math
import os
import re
import signal
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import LspConfig, ServerConfig
from codeward.daemon.lsp import tsserver
from codeward.daemon.lsp.capabilities import ServerCapabilities, client_capabilities
from codeward.daemon.lsp.connection import (
    ConnectionClosed,
    LspConnection,
    RequestTimeout,
    ResponseError,
)
from codeward.daemon.lsp.defaults import command_available
from codeward.daemon.lsp.documents import UNTRUSTED, Document, DocumentStore, Stat
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.process import ServerProcess, group_rss, is_stopped
from codeward.daemon.lsp.readiness import readiness_for
from codeward.daemon.lsp.types import (
    ConfigurationParams,
    Diagnostic,
    DocumentDiagnosticReport,
    LogMessageParams,
    ProgressParams,
    PublishDiagnosticsParams,
    RegistrationParams,
    UnregistrationParams,
    WorkDoneProgressCreateParams,
    WorkspaceDiagnosticReport,
)
from codeward.daemon.lsp.uris import uri_to_path
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.protocol.messages import Incoming

log = logging.getLogger("codeward.lsp")

BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
CRASH_WINDOW = 300.0
FAILED_COOLDOWN = 30.0
METHOD_NOT_FOUND = -32601
REGISTRATION_GRACE = 2.0  # seconds a new server may take to register its capabilities
QUIET = 0.3  # seconds without news before a streamed workspace pull may be over
# Long polls a server may hold open until the next one, even when cancelled (basedpyright
# answers a cancelled workspace pull only when the next pull comes): not expected to answer.
LONG_POLLS = frozenset({"workspace/diagnostic"})
BARRIER = "$/codeward/barrier"  # a request every server must refuse: its answer orders output
_TOKENS = itertools.count(1)

ApplyEdit = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
ProgressSink = Callable[[dict[str, Any]], None]


class ServerState(StrEnum):
    IDLE = "idle"  # not started yet: servers start on first need
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"  # crashed; waiting out the backoff
    FAILED = "failed"  # too many crashes; waits for a request after the cool-down
    UNAVAILABLE = "unavailable"  # its program is not installed
    STOPPED = "stopped"
    # Not a state of the actor: how `status()` shows a running server that does not answer
    # (stopped by a signal, or a request past its timeout still unanswered).
    UNRESPONSIVE = "unresponsive"


@dataclass
class Published:
    """The diagnostics a server last pushed for a document, and the version they describe."""

    version: int | None
    diagnostics: list[Diagnostic]


_ABSOLUTE = re.compile(r"(?:file://|(?<![\w./-]))/[^\s'\"`:,)]+")


def scrub(text: str, root: Path) -> str:
    """`text` with absolute paths outside `root` replaced, for messages."""
    prefix = str(root)

    def replace(match: re.Match[str]) -> str:
        path = match.group(0).removeprefix("file://")
        if path == prefix or path.startswith(prefix + "/"):
            return os.path.relpath(path, prefix)
        return "<path>"

    return _ABSOLUTE.sub(replace, text)


class LanguageServer:
    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        root: Path,
        lsp: LspConfig,
        max_message: int,
        on_progress: ProgressSink,
        language: str = "",
    ) -> None:
        self.name = name
        self.language = language
        self.config = config
        self.root = root
        self.lsp = lsp
        self.max_message = max_message
        self.on_progress = on_progress
        self.apply_edit: ApplyEdit | None = None  # the edit layer plugs in here
        self.state = ServerState.IDLE
        self.pid: int | None = None
        self.restarts = 0
        self.last_error = ""
        self.stderr: list[str] = []
        self.messages: collections.deque[str] = collections.deque(maxlen=50)
        self.documents = DocumentStore(max(1, lsp.max_open_documents))
        self.capabilities = ServerCapabilities()
        self.readiness = readiness_for(config.ready_when)  # made anew for each process
        self.published: dict[str, Published] = {}
        self.analysed: dict[str, int] = {}  # uri -> version answered by a diagnostic pull
        self.progress: dict[int | str, str] = {}  # active work-done progress: token -> title
        self.announced: set[int | str] = set()  # tokens it created and has not begun yet
        self.world = 0  # counts changes the server was told of (for freshness)
        self.push_silent = False  # it never pushed diagnostics and let a settle time out
        self._crashes: collections.deque[float] = collections.deque()
        self._failed_at = 0.0
        self._running_since = 0.0
        self._attempts = 0  # start attempts so far
        self._failed_attempt = 0  # the number of the last attempt that failed
        self._wanted = trio.Event()
        self._changed = trio.Event()
        self._process: ServerProcess | None = None
        self._conn: LspConnection | None = None
        self._partial: dict[int | str, Callable[[Any], None]] = {}
        self._workspace_pull = trio.Lock()  # one workspace pull at a time: a new one ends the last
        self._exclusive: dict[str, trio.Lock] = {m: trio.Lock() for m in config.exclusive_methods}
        self.restart_reason = ""  # why it was last restarted or stopped on purpose
        self._halt_scope: trio.CancelScope | None = None  # cancels the wait on the running process
        self._halted: tuple[str, bool, bool] | None = None  # (reason, park, graceful)
        self.on_start: Callable[[LanguageServer], None] | None = None  # the daemon's budget
        self.last_used = 0.0
        self._scope = trio.CancelScope()
        self.stopped = trio.Event()

    # -- state ------------------------------------------------------------------------

    def _set_state(self, state: ServerState) -> None:
        self.state = state
        self._touch()

    def _touch(self) -> None:
        """Wake everyone waiting for a change of state, diagnostics or progress."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Whether `predicate` came true within `timeout` (checked after every change)."""
        if predicate():  # the common case, without a cancel scope
            return True
        with trio.move_on_after(timeout):
            while not predicate():
                await self._changed.wait()
            return True
        return False

    @property
    def encoding(self) -> Encoding:
        return self.capabilities.position_encoding

    def status(self) -> dict[str, Any]:
        stderr = self._process.stderr_tail() if self._process is not None else self.stderr
        state = self.state
        if state is ServerState.RUNNING and self._unresponsive():
            state = ServerState.UNRESPONSIVE
        return {
            "name": self.name,
            "language": self.language,
            "state": state.value,
            "pid": self.pid,
            "restarts": self.restarts,
            "open_documents": len(self.documents),
            "in_flight": self._conn.in_flight if self._conn is not None else 0,
            "progress": sorted(self.progress.values()),
            "last_error": scrub(self.last_error, self.root),
            "restart_reason": scrub(self.restart_reason, self.root),
            "stderr": [scrub(line, self.root) for line in stderr],
        }

    def _unresponsive(self) -> bool:
        """Stopped by a signal, or a request it was given up on is still unanswered."""
        process, conn = self._process, self._conn
        if process is not None and is_stopped(process.pid):
            return True
        return conn is not None and bool(conn.abandoned)

    @property
    def busy(self) -> bool:
        """Whether it is starting, or a request is in flight (or a cancelled one is still
        unanswered)."""
        if self.state is ServerState.STARTING:
            return True
        conn = self._conn
        return conn is not None and (conn.in_flight > 0 or bool(conn.abandoned))

    @property
    def live(self) -> bool:
        """Whether it has (or is getting) a process."""
        return self.state in (ServerState.STARTING, ServerState.RUNNING)

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
        if self._conn is not None:
            self._conn.fail_pending(reason)
        self._halt_scope.cancel()

    def retry(self) -> None:
        """Start a failed (or missing) server again on its next need: `session/open` asked."""
        if self.state in (ServerState.FAILED, ServerState.UNAVAILABLE):
            self._crashes.clear()
            self._failed_at = 0.0
            self._set_state(ServerState.IDLE)

    # -- supervision ------------------------------------------------------------------

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Supervise the server until cancelled or `stop()`; then stop it (shutdown, exit,
        TERM, KILL)."""
        task_status.started()
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

    def start(self) -> None:
        """Start the server now rather than on its first need."""
        self._want()

    async def _run_once(self) -> str | None:
        """Run one process until it dies: the reason, or None when it is not installed."""
        self._attempts += 1
        self._set_state(ServerState.STARTING)
        env = self.config.env
        if not command_available(self.config.command, env):
            self.last_error = "not installed"
            return None
        if self.on_start is not None:
            self.on_start(self)
        try:
            process = await ServerProcess.spawn(self.name, self.config.command, self.root, env)
        except FileNotFoundError:
            self.last_error = "not installed"
            return None
        except OSError as exc:
            return f"it could not start ({exc.strerror or exc.__class__.__name__})"
        conn = LspConnection(
            self.name,
            process.stdin,
            process.stdout,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_message=self.max_message,
        )
        self._process, self._conn, self.pid = process, conn, process.pid
        self.published.clear()
        self.analysed.clear()
        self.progress.clear()
        self.announced.clear()
        self.readiness = readiness_for(self.config.ready_when)
        io_scope = trio.CancelScope(shield=True)
        reason = "it stopped"
        self._halt_scope = halt = trio.CancelScope()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._io, process, conn, io_scope)
                try:
                    with halt:
                        await self._handshake(conn)
                        self._running_since = trio.current_time()
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
            self._process = self._conn = None
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

    async def _handshake(self, conn: LspConnection) -> None:
        timeout = self.lsp.initialize_timeout
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "codeward", "version": "0.1.0"},
            "locale": "en",
            "rootPath": str(self.root),
            "rootUri": self.root.as_uri(),
            "workspaceFolders": self._folders(),
            "capabilities": client_capabilities(),
            "initializationOptions": self.config.init_options,
            "trace": "off",
        }
        try:
            result = await conn.request("initialize", params, timeout=timeout)
        except RequestTimeout:
            raise _StartFailed(f"it did not answer initialize within {timeout:g} s") from None
        except ResponseError as exc:
            raise _StartFailed(f"it refused initialize ({scrub(exc.message, self.root)})") from None
        caps = result.get("capabilities") if isinstance(result, dict) else None
        if not isinstance(caps, dict):
            raise _StartFailed("its initialize result has no capabilities")
        if "offsetEncoding" in result and "positionEncoding" not in caps:
            caps["offsetEncoding"] = result["offsetEncoding"]
        # Until now `capabilities` held what the last run offered (see `may_offer`).
        self.capabilities = ServerCapabilities()
        self.capabilities.static = caps
        conn.notify("initialized", {})
        if self.config.settings:
            conn.notify("workspace/didChangeConfiguration", {"settings": self.config.settings})
        for method, notice in self.documents.reopen_all():
            conn.notify(method, notice)

    async def _watch(self, process: ServerProcess, conn: LspConnection) -> None:
        """Every `lsp.check_interval` seconds: restart the running server when its process
        group uses more memory than its cap (once no request is in flight, or after one
        request timeout), or when a request it was told to cancel stays unanswered for
        `lsp.cancel_grace` seconds."""
        cap = self.config.max_rss_mb or self.lsp.max_rss_mb
        over_since: float | None = None
        while not conn.closed.is_set():
            await trio.sleep(self.lsp.check_interval)
            if self.state is not ServerState.RUNNING:
                continue
            overdue = conn.oldest_abandoned()
            if overdue is not None and overdue[1] >= self.lsp.cancel_grace:
                self.halt(
                    f"it left a cancelled {overdue[0]} unanswered for {overdue[1]:.0f} s",
                    graceful=False,
                )
                return
            rss = await trio.to_thread.run_sync(group_rss, process.pid)
            if rss <= cap * 1024 * 1024:
                over_since = None
                continue
            now = trio.current_time()
            over_since = now if over_since is None else over_since
            if conn.in_flight == 0 or now - over_since >= self.lsp.request_timeout:
                self.halt(f"it used {rss // (1024 * 1024)} MB, above its max_rss_mb of {cap}")
                return

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

    def _folders(self) -> list[dict[str, str]]:
        return [{"uri": self.root.as_uri(), "name": self.root.name}]

    # -- what callers use -------------------------------------------------------------

    def unavailable(self) -> ToolError:
        """The `lsp_unavailable` error naming what to install."""
        program = os.path.basename(self.config.command[0]) if self.config.command else ""
        hint = self.config.install_hint or (
            f"install {program or self.name}, or fix servers.{self.name}.command in the config"
        )
        return ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"The {self.name} language server is not installed; {hint}.",
            server=self.name,
        )

    def _why(self) -> str:
        """The last error, with the last lines it wrote to stderr (paths scrubbed)."""
        why = scrub(self.last_error, self.root)
        tail = [scrub(line, self.root)[:200] for line in self.stderr[-3:]]
        return f"{why}; its stderr ended with: {' | '.join(tail)}" if tail else why

    def _want(self) -> None:
        self.last_used = trio.current_time()
        if self.state is ServerState.FAILED:
            if trio.current_time() - self._failed_at < FAILED_COOLDOWN:
                wait = FAILED_COOLDOWN - (trio.current_time() - self._failed_at)
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    f"The {self.name} language server failed {len(self._crashes)} times "
                    f"({self._why()}); fix it and retry in {wait:.0f} s, or open the "
                    "session again.",
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
        self._want()
        # The attempt that will serve this caller: the one starting now, else the next.
        target = self._attempts + (0 if self.state is ServerState.STARTING else 1)
        while True:
            conn = self._conn
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
                self._want()  # raises while it cools down; after it, a new chance
                target = self._attempts + 1
            if self._failed_attempt >= target:
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    f"The {self.name} language server could not start: {self._why()}; "
                    "see session/list for more.",
                    server=self.name,
                )
            if self.state is ServerState.IDLE:
                self._wanted.set()  # parked meanwhile: this caller needs it again
            await self._changed.wait()

    def may_offer(self, method: str) -> bool:
        """Whether it would serve `method` if it ran: what it offered when it last ran, else
        assumed (its error then stands for the method)."""
        if self.capabilities.static:
            return self.capabilities.supports(method)
        return True

    async def request(
        self, method: str, params: Any, *, timeout: float | None = None, result_type: Any = Any
    ) -> Any:
        """Send `method` to the running server; ToolError `lsp_error`/`timeout` on failure.

        A method the server runs one at a time (`exclusive_methods`) waits for the last one
        and is never cancelled; an error answer that shows the server broken
        (`broken_when`) restarts it and fails with `restarting=True` (callers retry once).
        """
        lock = self._exclusive.get(method)
        if lock is None:
            return await self._request(method, params, timeout, result_type, cancel=True)
        async with lock:
            return await self._request(method, params, timeout, result_type, cancel=False)

    async def _request(
        self, method: str, params: Any, timeout: float | None, result_type: Any, *, cancel: bool
    ) -> Any:
        conn = await self.connection()
        timeout = self.timeout_for(method) if timeout is None else timeout
        try:
            return await conn.request(
                method,
                params,
                timeout=timeout,
                result_type=result_type,
                cancel=cancel,
                track=method not in LONG_POLLS,
            )
        except ConnectionClosed as exc:
            raise ToolError(
                ErrorKind.LSP_ERROR,
                f"The {self.name} language server stopped during {method} "
                f"({scrub(exc.reason, self.root)}); it restarts by itself, so retry.",
                server=self.name,
            ) from None
        except RequestTimeout:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"The {self.name} language server did not answer {method} within "
                f"{timeout:g} s; retry, or raise lsp.method_timeouts in the config.",
                server=self.name,
            ) from None
        except ResponseError as exc:
            message = scrub(exc.message, self.root)
            if any(text in exc.message for text in self.config.broken_when):
                self.halt(f"it broke answering {method} ({message})")
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    f"The {self.name} language server broke answering {method} ({message}); "
                    "it is restarting, so retry.",
                    server=self.name,
                    restarting=True,
                ) from None
            raise ToolError(
                ErrorKind.LSP_ERROR,
                f"The {self.name} language server could not answer {method}: {message}.",
                server=self.name,
                code=exc.code,
            ) from None

    def timeout_for(self, method: str) -> float:
        return self.lsp.method_timeouts.get(method, self.lsp.request_timeout)

    def notify(self, method: str, params: Any) -> None:
        if self.running:
            assert self._conn is not None
            self._conn.notify(method, params)

    @property
    def running(self) -> bool:
        conn = self._conn
        return self.state is ServerState.RUNNING and conn is not None and not conn.closed.is_set()

    @property
    def pulls_diagnostics(self) -> bool:
        return self.capabilities.supports("textDocument/diagnostic")

    def sync(
        self,
        path: Path,
        language_id: str,
        data: bytes,
        stat: Stat = UNTRUSTED,
        *,
        fresh_diagnostics: bool = False,
    ) -> Document:
        """Give the running server `data` as the content of `path` (didOpen/didChange).

        With `fresh_diagnostics`, a server that only pushes diagnostics gets the same text
        again under a new version when other files changed since, so its next push
        describes the world as it is now.
        """
        uri = path.as_uri()
        current = self.documents.get(uri)
        force = (
            fresh_diagnostics
            and current is not None
            and current.world < self.world
            and not self.pulls_diagnostics
        )
        doc, notices = self.documents.sync(
            path, uri, language_id, data, self.world, stat, force=force
        )
        for method, params in notices:
            if method == "textDocument/didChange":
                self.world += 1
                doc.world = self.world
            if method == "textDocument/didClose":
                self.published.pop(params["textDocument"]["uri"], None)
            self.notify(method, params)
        return doc

    def close_document(self, uri: str) -> None:
        for method, params in self.documents.close(uri):
            self.published.pop(uri, None)
            self.world += 1
            self.notify(method, params)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> None:
        """didChangeWatchedFiles (`changes`: FileEvent dicts)."""
        if changes and self.running:
            self.world += 1
            self.notify("workspace/didChangeWatchedFiles", {"changes": changes})
            self._touch()

    async def document_diagnostics(self, doc: Document, settle: float) -> list[Diagnostic] | None:
        """Diagnostics for this content of `doc`: pulled, or the push for its version.

        None when no answer came within `settle` seconds.
        """

        def answered() -> bool:
            published = self.published.get(doc.uri)
            return published is not None and (published.version or 0) >= doc.version

        if self.readiness.strict and not await self.until_ready(self.lsp.ready_timeout):
            return None
        if self.config.diagnostics_from == "tsserver":
            version = doc.version
            with trio.move_on_after(settle):
                pulled = await tsserver.diagnostics(self, str(doc.path), settle)
                if pulled is not None and doc.version == version:
                    self.analysed[doc.uri] = version
                    self._touch()
                    return pulled
        with trio.move_on_after(settle):
            if not self.pulls_diagnostics:
                # A server may register pull diagnostics only after `initialized`.
                if self.push_silent and doc.uri not in self.published:
                    return []
                await self.wait_for(lambda: answered() or self.pulls_diagnostics, math.inf)
                if answered():
                    return self.published[doc.uri].diagnostics
            try:
                report = await self.request(
                    "textDocument/diagnostic",
                    {"textDocument": {"uri": doc.uri}},
                    timeout=settle,
                    result_type=DocumentDiagnosticReport,
                )
            except ToolError as exc:
                if exc.kind is ErrorKind.TIMEOUT:
                    return None
                raise
            self.analysed[doc.uri] = doc.version
            self._touch()
            return report.items
        if not self.published and not self.pulls_diagnostics:
            self.push_silent = True
        return None

    async def workspace_diagnostics(
        self, timeout: float, expected: Collection[Path] | None = None
    ) -> tuple[dict[str, list[Diagnostic]], bool]:
        """Pull workspace diagnostics: (uri -> diagnostics, complete).

        Results may stream as partial results on a request the server never answers
        (basedpyright). Such a pull is over once every file of `expected` (the files of the
        server's languages under the root) has had a report and no work-done progress is
        active or announced: basedpyright creates its progress token before the first
        reports of a pass that takes several rounds, reports files it has not checked yet
        as clean in that first round, and ends the progress after the last. Files it never
        reports (excluded by its own settings) end the pull after a quiet moment, once the
        answer to a later request shows that everything it sent before has been read.
        """
        results: dict[str, list[Diagnostic]] = {}
        missing = set(expected) if expected is not None else None
        news = 0  # partial results received
        done = False

        def take(report: WorkspaceDiagnosticReport) -> None:
            nonlocal news
            news += 1
            for item in report.items:
                path = uri_to_path(item.uri) if missing else None
                if missing and path is not None:
                    missing.discard(path)
                if item.kind == "full":
                    results[item.uri] = item.items

        def sink(value: Any) -> None:
            take(msgspec.convert(value, type=WorkspaceDiagnosticReport))
            self._touch()

        async def ask(token: str) -> None:
            nonlocal done
            try:
                take(
                    await self.request(
                        "workspace/diagnostic",
                        {"previousResultIds": [], "partialResultToken": token},
                        timeout=timeout,
                        result_type=WorkspaceDiagnosticReport,
                    )
                )
            except ToolError as exc:
                if exc.kind is not ErrorKind.TIMEOUT:
                    raise
            else:
                done = True
            self._touch()

        with trio.move_on_after(timeout):
            async with self._workspace_pull:
                token = f"codeward-{next(_TOKENS)}"
                self._partial[token] = sink
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(ask, token)
                        while not done:
                            if missing is not None and not missing and not self._busy():
                                done = True
                                break
                            seen = news
                            with trio.move_on_after(QUIET) as quiet:
                                await self._changed.wait()
                            if quiet.cancelled_caught and results and not self.progress:
                                await self._barrier()
                                done = news == seen and not self._busy()
                        nursery.cancel_scope.cancel()
                finally:
                    del self._partial[token]
        return results, done

    def _busy(self) -> bool:
        return bool(self.progress or self.announced)

    async def _barrier(self) -> None:
        """Send a request the server must refuse and wait for its answer: every message it
        wrote before has then been read. Progress tokens it created before and still has
        not begun are forgotten (it answered a later message without using them)."""
        conn = self._conn
        if conn is None:
            return
        announced = set(self.announced)
        with contextlib.suppress(ConnectionClosed, RequestTimeout, ResponseError):
            await conn.request(BARRIER, None, timeout=self.lsp.request_timeout)
        self.announced -= announced

    async def wait_ready(self, doc: Document, timeout: float) -> bool:
        """Wait until the server has analysed `doc` and its work-done progress ended."""

        def ready() -> bool:
            if not self.ready:
                return False
            if self.analysed.get(doc.uri) == doc.version:
                return True
            published = self.published.get(doc.uri)
            return published is not None and (published.version or 0) >= doc.version

        if ready():
            return True
        with trio.move_on_after(timeout):
            if not ready():
                await self.document_diagnostics(doc, timeout)
            return await self.wait_for(ready, timeout)
        return False

    async def offers(self, method: str) -> bool:
        """Whether the running server offers `method`; a server that started moments ago
        gets `REGISTRATION_GRACE` seconds to register it dynamically, or `lsp.ready_timeout`
        for a method its config says it registers (its registration follows a settings
        round trip, which a loaded machine can stretch past any short grace)."""
        expected = self.capabilities.registered_as(method) in self.config.registers
        wait = self.lsp.ready_timeout if expected else REGISTRATION_GRACE
        grace = self._running_since + wait - trio.current_time()
        return await self.wait_for(lambda: self.capabilities.supports(method), max(grace, 0))

    @property
    def ready(self) -> bool:
        """Whether its answers can be trusted now, as its kind's readiness policy says."""
        return self.readiness.ready(self.progress, len(self.documents))

    async def until_ready(self, timeout: float) -> bool:
        """Wait until it is `ready`; False when it was not within `timeout`."""
        return await self.wait_for(lambda: self.ready, timeout)

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no work-done progress is active."""
        return await self.wait_for(lambda: not self.progress, timeout)

    # -- what the server sends --------------------------------------------------------

    def _setting(self, section: str | None) -> Any:
        value: Any = self.config.settings
        if not section:
            return value
        for part in section.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def _on_request(self, method: str, message: Incoming) -> Any:
        if method == "workspace/configuration":
            items = message.decode(ConfigurationParams).items
            return [self._setting(item.section) for item in items]
        if method == "client/registerCapability":
            for reg in message.decode(RegistrationParams).registrations:
                self.capabilities.register(reg.id, reg.method, reg.register_options)
            self._touch()
            return None
        if method == "client/unregisterCapability":
            for unreg in message.decode(UnregistrationParams).unregisterations:
                self.capabilities.unregister(unreg.id)
            self._touch()
            return None
        if method == "window/workDoneProgress/create":
            self.announced.add(message.decode(WorkDoneProgressCreateParams).token)
            self._touch()
            return None
        if method == "workspace/workspaceFolders":
            return self._folders()
        if method == "workspace/applyEdit":
            if self.apply_edit is not None:
                return self.apply_edit(message.decode())
            return {
                "applied": False,
                "failureReason": "codeward applies a server's edits only during its commands",
            }
        if method == "window/showMessageRequest":
            params = message.decode()
            self.messages.append(str(params.get("message", "")))
            return None
        if method == "window/showDocument":
            return {"success": False}
        if method.endswith("/refresh"):  # diagnostics, semantic tokens, code lens, inlay hints
            self.world += 1
            return None
        raise ResponseError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _on_notification(self, method: str, message: Incoming) -> None:
        readiness = self.readiness
        if method in readiness.listens and readiness.observe(method, message.decode()):
            self._touch()
        if method == "textDocument/publishDiagnostics":
            if not readiness.counts():
                return  # a placeholder published before it began to load
            params = message.decode(PublishDiagnosticsParams)
            version = params.version
            if version is None:
                doc = self.documents.get(params.uri)
                version = doc.version if doc is not None else None
            self.published[params.uri] = Published(version, params.diagnostics)
            self.push_silent = False
            self._touch()
        elif method == "$/progress":
            params = message.decode(ProgressParams)
            sink = self._partial.get(params.token)
            if sink is not None:
                sink(params.value)
            else:
                self._progress(params)
        elif method in ("window/logMessage", "window/showMessage"):
            params = message.decode(LogMessageParams)
            self.messages.append(params.message)
            log.debug("%s: %s", self.name, params.message)

    def _progress(self, params: ProgressParams) -> None:
        value = params.value if isinstance(params.value, dict) else {}
        kind = value.get("kind")
        if kind not in ("begin", "report", "end"):
            return  # partial results, not work-done progress
        self.announced.discard(params.token)
        title = value.get("title") or self.progress.get(params.token, "")
        if kind == "begin":
            self.progress[params.token] = str(title)
        elif kind == "end":
            self.progress.pop(params.token, None)
        self._touch()
        self.on_progress(
            {
                "server": self.name,
                "token": params.token,
                "kind": kind,
                "title": title,
                "message": value.get("message"),
                "percentage": value.get("percentage"),
            }
        )


class _StartFailed(Exception):
    """The server started but did not complete the handshake."""


def decode_items(data: Any, type_: Any) -> Any:
    """Convert already-decoded JSON into `type_` (for results decoded as Any)."""
    return msgspec.convert(data, type=type_)
