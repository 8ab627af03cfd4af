"""One language server for one or more session roots, as an actor: it owns its process (through its
`Supervisor`), its open documents (`DocumentSync`), what it said about them (`Freshness`)
and its answers to the server's own requests (`ServerRequests`). The rest of the daemon
asks it through these methods, never through its parts:

- life: `run` (in the session's nursery, or the daemon's for a server shared by the roots of
  one repository), `start`, `stop`, `halt(reason, park=)`, `retry`,
  `connection()` (started on first need), `status()`, `state`, `running`, `live`, `busy`;
- requests: `request(method, params, timeout=, result_type=)`, `requests(calls, timeout=)`
  (several sent at once), `notify`, `offers(method)`,
  `may_offer`, `capabilities`, `encoding`; `execute_command(command, arguments, on_edit)`
  with the edits that command asks for;
- the roots it serves: `roots` (the first its own), `add_root(root, on_progress)`,
  `remove_root(root)`; its workspace `folders` are the roots not nested in another (a
  nested root's files are its parent's: one folder, so the server answers them as the
  parent's project), kept current with `workspace/didChangeWorkspaceFolders`; the documents
  no root holds any more are closed; progress, and its messages for the people
  (`window/showMessage`, `logMessage`, marked `notice`), go to every root's sink;
- documents: `sync(path, language_id, data, stat)` -> the `Document` sent (one version,
  never changed), `document(uri)`, `open_documents()`, `touch`, `close_document`,
  `watched_files_changed`;
- freshness: `fresh_diagnostics(path, language_id, data, settle)`,
  `document_diagnostics(doc, settle)` (None: no answer for that content in time),
  `workspace_diagnostics`, `published`, `wait_ready`, `ready`/`until_ready`, `readiness`.

Its state changes only in its own methods, each change sent to the server before the next
checkpoint, so messages reach the server in the order the changes were made. What must run
one at a time waits for its turn in its caller's own task (a FIFO `trio.Lock` the actor
owns), then goes down to the connection itself: a method the server runs one at a time
(`exclusive_methods`; once sent, shielded: it runs to its answer or timeout even when its
caller leaves, and the next waits for it), its commands (each with the edits it asks for),
its workspace pulls. Everything else goes straight to the connection: no task hop, no wait.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import trio
from lsprotocol import types as lsp

from codeward.daemon.config import LspConfig, ServerConfig
from codeward.daemon.lsp import tsserver
from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.capture import COMMAND_EDIT_GRACE, EditCapture, EditHandler
from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.connection import (
    ConnectionClosed,
    LspConnection,
    RequestTimeout,
    ResponseError,
    Unawaited,
)
from codeward.daemon.lsp.documents import UNTRUSTED, Document, Stat
from codeward.daemon.lsp.freshness import (
    BARRIER,
    PULL,
    WORKSPACE_PULL,
    Freshness,
    ProgressSink,
    Published,
    WorkspacePull,
)
from codeward.daemon.lsp.initialize import folders_changed
from codeward.daemon.lsp.new_files import NewFiles
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.readiness import Readiness, readiness_for
from codeward.daemon.lsp.server_requests import ServerRequests
from codeward.daemon.lsp.shapes import document_params, unstructure
from codeward.daemon.lsp.supervisor import ServerState, Supervisor
from codeward.daemon.lsp.sync import DocumentSync
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

__all__ = ["LanguageServer", "ServerState"]

REGISTRATION_GRACE = 2.0  # seconds a new server may take to register its capabilities
# Long polls a server may hold open until the next one, even when cancelled (basedpyright
# answers a cancelled workspace pull only when the next pull comes): not expected to answer.
LONG_POLLS = frozenset({"workspace/diagnostic"})
EXECUTE_COMMAND = "workspace/executeCommand"
METHOD_NOT_FOUND = -32601
T = TypeVar("T")


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
        configured: bool = False,
    ) -> None:
        self.name = name
        self.language = language
        self.root = root
        self._sinks: dict[Path, ProgressSink] = {root: on_progress}  # root -> its progress
        self.lsp = lsp
        self._capture: EditCapture | None = None  # the edits of the command running
        self._on_start: Callable[[LanguageServer], None] | None = None
        self.capabilities = Capabilities()
        self._changes = Changes()
        self._freshness = Freshness(
            name,
            self._changes,
            pulls=lambda: self.pulls_diagnostics,
            on_progress=self._progress,
            documents=lambda: len(self._docs),
            readiness=lambda: readiness_for(self.config.ready_when),
            diagnosis=lambda: self.config.diagnosis_progress,
        )
        self._docs = DocumentSync(lsp.max_open_documents, self.notify, self._freshness.forget)
        self._new_files = NewFiles(lambda: self.config.quiet_after_new_files)
        self._answers = ServerRequests(
            name,
            lambda: self.folders,
            settings=lambda: self.config.settings,
            capabilities=lambda: self.capabilities,
            changes=self._changes,
            sync=self._docs,
            freshness=self._freshness,
            capture=lambda: self._capture,
            notice=self._notice,
        )
        self._life = Supervisor(
            name,
            config,
            folders=lambda: self.folders,
            lsp=lsp,
            max_message=max_message,
            changes=self._changes,
            on_request=self._answers.on_request,
            on_notification=self._answers.on_notification,
            on_spawn=self._freshness.reset,
            on_running=self._running,
            configured=configured,
            shed=self._shed,
            working=lambda: bool(self._freshness.progress),
        )
        # Turns (FIFO): the commands (one at a time, so an edit belongs to the one running),
        # each method the server runs one at a time, and the workspace pulls.
        self._turns = {m: trio.Lock() for m in [EXECUTE_COMMAND, *config.exclusive_methods]}
        self._pulls = trio.Lock()

    def _running(self, conn: LspConnection, capabilities: Capabilities) -> None:
        """The new process is initialized: its capabilities, then every open document."""
        # Until now `capabilities` held what the last run offered (see `may_offer`).
        self.capabilities = capabilities
        self._docs.reopen_all(conn.notify)

    def _shed(self) -> int:
        """Near its memory cap: close the documents opened for the daemon's own purposes."""
        return self._docs.shed()

    # -- workspace folders -------------------------------------------------------------

    def _progress(self, params: dict[str, Any]) -> None:
        for sink in list(self._sinks.values()):
            sink(params)

    def _notice(self, method: str, params: dict[str, Any]) -> None:
        """A message of the server for the people (`window/showMessage`, `logMessage`):
        to every root's sink, as progress, marked `notice` (the sessions route it)."""
        self._progress({"server": self.name, "notice": method, **params})

    @property
    def roots(self) -> list[Path]:
        """The session roots it serves, the first its own."""
        return list(self._sinks)

    @property
    def folders(self) -> list[Path]:
        """Its workspace folders: the roots not nested in another of its roots."""
        roots = self.roots
        return [r for r in roots if not any(o != r and r.is_relative_to(o) for o in roots)]

    def add_root(self, root: Path, on_progress: ProgressSink) -> None:
        """Serve `root` too; its progress goes to `on_progress`."""
        before = self.folders
        self._sinks[root] = on_progress
        self._folders_changed(before)

    def remove_root(self, root: Path) -> None:
        """Serve `root` no more: the documents no other root holds are closed."""
        before = self.folders
        if self._sinks.pop(root, None) is None:
            return
        roots = self.roots
        for doc in self.open_documents():
            if doc.path.is_relative_to(root) and not any(doc.path.is_relative_to(r) for r in roots):
                self.close_document(doc.uri)
        self._folders_changed(before)

    def _folders_changed(self, before: list[Path]) -> None:
        after = self.folders
        added = [f for f in after if f not in before]
        removed = [f for f in before if f not in after]
        if added or removed:
            self.notify("workspace/didChangeWorkspaceFolders", folders_changed(added, removed))

    # -- the process ------------------------------------------------------------------

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
    def on_start(self) -> Callable[[LanguageServer], None] | None:
        return self._on_start

    @on_start.setter
    def on_start(self, hook: Callable[[LanguageServer], None] | None) -> None:
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

    # -- what it offers ---------------------------------------------------------------

    @property
    def encoding(self) -> Encoding:
        return self.capabilities.position_encoding

    @property
    def pulls_diagnostics(self) -> bool:
        return self.capabilities.supports("textDocument/diagnostic")

    def may_offer(self, method: str) -> bool:
        """Whether it would serve `method` if it ran: what it offered when it last ran, else
        assumed (its error then stands for the method)."""
        if self.capabilities.static:
            return self.capabilities.supports(method)
        return True

    def offers_now(self, method: str) -> bool | None:
        """Whether it offers `method` as `offers` would say without waiting; None while a
        registration may still come (`offers` would wait for it)."""
        if self.capabilities.supports(method):
            return True
        expected = self.capabilities.registered_as(method) in self.config.registers
        wait = self.lsp.ready_timeout if expected else REGISTRATION_GRACE
        return None if self._life.running_since + wait > trio.current_time() else False

    async def offers(self, method: str) -> bool:
        """Whether the running server offers `method`; a server that started moments ago
        gets `REGISTRATION_GRACE` seconds to register it dynamically, or `lsp.ready_timeout`
        for a method its config says it registers (its registration follows a settings
        round trip, which a loaded machine can stretch past any short grace)."""
        if self.capabilities.supports(method):  # the common case: no wait, no clock
            return True
        expected = self.capabilities.registered_as(method) in self.config.registers
        wait = self.lsp.ready_timeout if expected else REGISTRATION_GRACE
        grace = self._life.running_since + wait - trio.current_time()
        return await self._changes.wait_for(
            lambda: self.capabilities.supports(method), max(grace, 0)
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Whether `predicate` came true within `timeout` (checked after every change)."""
        return await self._changes.wait_for(predicate, timeout)

    # -- requests ---------------------------------------------------------------------

    def timeout_for(self, method: str) -> float:
        return self.lsp.timeout_for(method)

    def notify(self, method: str, params: Any) -> None:
        conn = self._life.conn
        if conn is not None and self._life.running:
            self._new_files.heard()
            conn.notify(method, params)

    async def request(
        self, method: str, params: Any, *, timeout: float | None = None, result_type: Any = Any
    ) -> Any:
        """Send `method` to the running server; ToolError `lsp_error`/`timeout` on failure.

        A timeout or the caller's cancellation sends `$/cancelRequest`, except for a method
        the server runs one at a time (`exclusive_methods`): that one waits for the last
        and runs to its answer or timeout even when its caller leaves. An error answer that
        shows the server broken (`broken_when`) restarts it and fails with
        `restarting=True` (callers retry once).
        """
        if self._new_files.waits(method):  # files came or went (lsp.new_files)
            await self._new_files.settled()
        self._new_files.heard()
        if method not in self._turns:  # the hot path: straight to the connection
            return await self._request(method, params, timeout, result_type, cancel=True)
        ask = partial(self._request, method, params, timeout, result_type)
        return await self._in_turn(method, ask)

    async def _in_turn(self, method: str, work: Callable[..., Awaitable[T]]) -> T:
        """`await work(cancel=...)` in the caller's task once every earlier caller of
        `method` is done. A method the server runs one at a time (`exclusive_methods`) is
        never cancelled once begun: shielded, it runs to its answer or timeout (the next one
        waits for that), and a caller who left meanwhile then leaves without its result. A
        caller who leaves before its turn is never sent."""
        async with self._turns[method]:
            if method not in self.config.exclusive_methods:
                return await work(cancel=True)
            answer: list[T] = []  # (a list: a scope's exit may swallow, to a type checker)
            with trio.CancelScope(shield=True):
                answer.append(await work(cancel=False))
        await trio.lowlevel.checkpoint_if_cancelled()  # a caller who left: no result
        return answer[0]

    async def _request(
        self, method: str, params: Any, timeout: float | None, result_type: Any, *, cancel: bool
    ) -> Any:
        life = self._life
        conn = life.conn
        if life.state is ServerState.RUNNING and conn is not None and not conn.closed.is_set():
            life.last_used = trio.current_time()  # running: no wait, no coroutine
        else:
            conn = await life.connection()
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
        except (ConnectionClosed, RequestTimeout, ResponseError) as exc:
            raise self._failure(method, exc, timeout) from None

    async def requests(
        self,
        calls: Sequence[tuple[str, Any, Any]],
        *,
        timeout: float | None = None,
        enough: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        """Several requests (method, params, result type) sent at once, in one write, and
        awaited together: each result, or the ToolError it failed with, in order (as
        `request` fails). Methods the server runs one at a time go one by one, in turn.
        When `enough(result)` of the first one's result is true, the others are not awaited
        (given up on: a `cancelled` ToolError in their place)."""
        if len(calls) == 1 or any(method in self._turns for method, _, _ in calls):
            results: list[Any] = []
            for method, params, result_type in calls:
                first = results[0] if results else None
                if results and enough and not isinstance(first, ToolError) and enough(first):
                    results += [self._failure(m, Unawaited(), 0) for m, _, _ in calls[1:]]
                    break
                try:
                    results.append(
                        await self.request(method, params, timeout=timeout, result_type=result_type)
                    )
                except ToolError as exc:
                    results.append(exc)
            return results
        conn = await self.connection()
        self._new_files.heard()
        if timeout is None:
            timeout = max(self.timeout_for(method) for method, _, _ in calls)
        try:
            results = await conn.requests(calls, timeout=timeout, enough=enough)
        except ConnectionClosed as exc:
            raise self._failure(calls[0][0], exc, timeout) from None
        return [
            self._failure(method, result, timeout) if isinstance(result, Exception) else result
            for (method, _, _), result in zip(calls, results, strict=True)
        ]

    def _failure(self, method: str, exc: Exception, timeout: float) -> ToolError:
        """The ToolError for a request that failed with `exc` (a server broken by it is
        restarted: `restarting=True`, callers retry once)."""
        if isinstance(exc, Unawaited):
            return ToolError(
                ErrorKind.CANCELLED,
                f"{method} was not awaited: the answer sent with it was enough.",
                server=self.name,
            )
        if isinstance(exc, ConnectionClosed):
            return ToolError(
                ErrorKind.LSP_ERROR,
                f"The {self.name} language server stopped during {method} "
                f"({scrub(exc.reason, self.root)}); it restarts by itself, so retry.",
                server=self.name,
            )
        if isinstance(exc, ResponseError):
            message = scrub(exc.message, self.root)
            if exc.code == METHOD_NOT_FOUND:  # offered, yet not there (clangd 14's typeHierarchy)
                return ToolError(
                    ErrorKind.UNSUPPORTED_BY_SERVER,
                    f"The {self.name} language server does not offer {method}: it answered "
                    "that it has no such method; use another tool, or configure a server "
                    "that offers it.",
                    server=self.name,
                    servers=[self.name],
                    method=method,
                    capability=method,
                )
            if any(text in exc.message for text in self.config.broken_when):
                self.halt(f"it broke answering {method} ({message})")
                return ToolError(
                    ErrorKind.LSP_ERROR,
                    f"The {self.name} language server broke answering {method} ({message}); "
                    "it is restarting, so retry.",
                    server=self.name,
                    restarting=True,
                )
            return ToolError(
                ErrorKind.LSP_ERROR,
                f"The {self.name} language server could not answer {method}: {message}.",
                server=self.name,
                code=exc.code,
            )
        return ToolError(
            ErrorKind.TIMEOUT,
            f"The {self.name} language server did not answer {method} within "
            f"{timeout:g} s; retry, or raise lsp.method_timeouts in the config.",
            server=self.name,
        )

    async def execute_command(
        self,
        command: str,
        arguments: list[Any],
        on_edit: EditHandler,
        *,
        grace: float = COMMAND_EDIT_GRACE,
    ) -> EditCapture:
        """`workspace/executeCommand`, one command at a time: every `workspace/applyEdit`
        the server asks for meanwhile goes to `on_edit` (with the documents it had open
        when it asked), also for `grace` seconds after its answer, and until each is
        handled. The capture says what was asked, applied and refused.

        A server that stops meanwhile fails the call, saying whether edits were applied.
        """
        run = partial(self._command, command, arguments, on_edit, grace)
        return await self._in_turn(EXECUTE_COMMAND, run)

    async def _command(
        self,
        command: str,
        arguments: list[Any],
        on_edit: EditHandler,
        grace: float,
        *,
        cancel: bool,
    ) -> EditCapture:
        conn = await self._life.connection()
        capture = EditCapture(self.name, on_edit, self.open_documents, self._changes)
        self._capture = capture
        alive = lambda: not conn.closed.is_set()  # noqa: E731
        params = unstructure(lsp.ExecuteCommandParams(command, arguments=arguments))
        try:
            try:
                await self._request(EXECUTE_COMMAND, params, None, Any, cancel=cancel)
            except ToolError as exc:
                if alive():
                    raise
                raise self._stopped_in(command, capture, conn) from exc
            await capture.settle(alive, grace)
        finally:
            self._capture = None
        if not alive():
            raise self._stopped_in(command, capture, conn)
        return capture

    def _stopped_in(self, command: str, capture: EditCapture, conn: LspConnection) -> ToolError:
        written = (
            f"{capture.applied} edit(s) it asked for were written before; check them"
            if capture.applied
            else "nothing it asked for was written"
        )
        return ToolError(
            ErrorKind.LSP_ERROR,
            f"The {self.name} language server stopped while running its command {command!r} "
            f"({scrub(conn.close_reason, self.root)}): {written}. It restarts by itself; "
            "retry.",
            server=self.name,
            applied=capture.applied,
        )

    # -- documents --------------------------------------------------------------------

    def document(self, uri: str) -> Document | None:
        """The version of `uri` the server has open now (a snapshot: it never changes)."""
        return self._docs.get(uri)

    def open_documents(self) -> tuple[Document, ...]:
        """Every document the server has open now, each the version it was sent: what an
        answer it computes now is computed from."""
        return tuple(self._docs.store.documents.values())

    def touch(self, uri: str) -> None:
        """Mark `uri` used now: the least recently used document is closed first."""
        self._docs.store.touch(uri)

    @property
    def world(self) -> int:
        return self._docs.world

    def sync(
        self,
        path: Path,
        language_id: str,
        data: bytes,
        stat: Stat = UNTRUSTED,
        *,
        fresh_diagnostics: bool = False,
        own: bool = False,
    ) -> Document:
        """Give the running server `data` as the content of `path` (didOpen/didChange).

        With `fresh_diagnostics`, a server that only pushes diagnostics gets the same text
        again under a new version when other files changed since, so its next push
        describes the world as it is now. With `own`, a document it opens is the daemon's
        own (a folder's diagnostics): near its memory cap the server closes those first.
        """
        force = fresh_diagnostics and not self.pulls_diagnostics
        return self._docs.sync(path, language_id, data, stat, force_if_older=force, own=own)

    def pin(self, uri: str, pinned: bool) -> None:
        """Keep `uri` open however many others are opened (an editor holds it), or no more."""
        (self._docs.store.pinned.add if pinned else self._docs.store.pinned.discard)(uri)

    def close_document(self, uri: str) -> None:
        self._docs.close(uri)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> None:
        """didChangeWatchedFiles (`changes`: FileEvent dicts)."""
        if self.running and self._docs.watched_files_changed(changes):
            self._new_files.changed(changes)
            self._changes.touch()

    # -- diagnostics freshness --------------------------------------------------------

    @property
    def published(self) -> dict[str, Published]:
        return self._freshness.published

    async def fresh_diagnostics(
        self, path: Path, language_id: str, data: bytes, settle: float, stat: Stat = UNTRUSTED
    ) -> tuple[Document, Sequence[lsp.Diagnostic] | None]:
        """`data` as the content of `path`, and the server's diagnostics for exactly that
        content (None when none came within `settle` seconds: partial)."""
        doc = self.sync(path, language_id, data, stat, fresh_diagnostics=True)
        return doc, await self.document_diagnostics(doc, settle)

    async def document_diagnostics(
        self, doc: Document, settle: float
    ) -> Sequence[lsp.Diagnostic] | None:
        """Diagnostics for this content of `doc`: asked of tsserver (`diagnostics_from`),
        pulled, or the push for its version; None when none came within `settle` seconds.
        A strict readiness policy is waited for first (within `lsp.ready_timeout`)."""
        fresh = self._freshness
        if fresh.readiness.strict and not await fresh.until_ready(self.lsp.ready_timeout):
            return None
        if self.config.diagnostics_from == "tsserver":
            with trio.move_on_after(settle):
                items = await self._tsserver_diagnostics(doc, settle)
                if items is not None and self._docs.get(doc.uri) is doc:  # not changed since
                    fresh.analysed_now(doc)
                    return items
        with trio.move_on_after(settle):
            if fresh.needs_barrier(doc):
                await self._barrier()  # every change sent before has its progress begun
            pushed = await fresh.pushed(doc)
            if pushed is not None:
                return pushed
            try:
                result = await self.request(PULL, document_params(PULL, doc.uri), timeout=settle)
            except ToolError as exc:
                if exc.kind is ErrorKind.TIMEOUT:
                    return None
                raise
            return fresh.pulled(doc, result)
        fresh.unanswered()
        return None

    async def _tsserver_diagnostics(
        self, doc: Document, timeout: float
    ) -> list[lsp.Diagnostic] | None:
        """tsserver's own diagnostics of `doc` (see `tsserver`); None when it refused one
        request or has no such command (its pushes are then the answer)."""
        found: list[lsp.Diagnostic] = []
        for params in tsserver.requests(str(doc.path)):
            try:
                reply = await self.request(
                    EXECUTE_COMMAND, params, timeout=timeout, result_type=tsserver.Reply
                )
            except ToolError as exc:
                if tsserver.not_its_command(exc):
                    return None
                raise
            items = tsserver.diagnostics(reply)
            if items is None:
                return None
            found.extend(items)
        return found

    async def workspace_diagnostics(
        self,
        timeout: float,
        expected: Collection[Path] | None = None,
        final: set[str] | None = None,
    ) -> tuple[dict[str, Sequence[lsp.Diagnostic]], bool]:
        """Pull workspace diagnostics, one pull at a time: (uri -> diagnostics, complete),
        within `timeout` seconds, the wait for an earlier pull included; `final` gets the
        uris reported while no work-done progress was under way (checked, even when the
        pull is not complete). When the pull is over: see `freshness.WorkspacePull`."""
        deadline = trio.current_time() + timeout
        async with self._pulls:  # an earlier pull ends by its own deadline
            with self._freshness.workspace_pull(expected) as pull, trio.move_on_at(deadline):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pull_workspace, pull, deadline)
                    while not pull.done:
                        if pull.covered():
                            pull.done = True
                            break
                        seen = pull.news
                        if await pull.quiet():
                            await self._barrier()
                            pull.done = pull.news == seen and not self._freshness.busy
                    nursery.cancel_scope.cancel()
            if final is not None:
                final |= pull.final
            return pull.results, pull.done

    async def _pull_workspace(self, pull: WorkspacePull, deadline: float) -> None:
        timeout = max(deadline - trio.current_time(), 0)
        try:
            result = await self.request(WORKSPACE_PULL, pull.params, timeout=timeout)
        except ToolError as exc:
            if exc.kind is not ErrorKind.TIMEOUT:
                raise
            self._changes.touch()
        else:
            pull.answered(result)

    async def _barrier(self) -> None:
        """Send a request the server must refuse and wait for its answer: every message it
        wrote before has then been read. Progress tokens it created before and still has
        not begun are forgotten (it answered a later message without using them)."""
        conn = self._life.conn
        if conn is None:
            return
        unbegun = self._freshness.unbegun()
        with contextlib.suppress(ConnectionClosed, RequestTimeout, ResponseError):
            await conn.request(BARRIER, None, timeout=self.lsp.request_timeout)
        self._freshness.forget_unbegun(unbegun)

    async def wait_ready(self, doc: Document, timeout: float) -> bool:
        """Wait until the server is ready and has analysed `doc`: its diagnostics are
        asked for (pulled, when it pulls), and its readiness awaited."""
        fresh = self._freshness
        if fresh.ready_for(doc):
            return True
        with trio.move_on_after(timeout):
            await self.document_diagnostics(doc, timeout)
            return await self._changes.wait_for(lambda: fresh.ready_for(doc), timeout)
        return False

    def ready_for(self, doc: Document) -> bool:
        """Whether it is ready and has analysed `doc` now (`wait_ready` without the wait)."""
        return self._freshness.ready_for(doc)

    @property
    def readiness(self) -> Readiness:
        """Its readiness policy (made anew for each process)."""
        return self._freshness.readiness

    @property
    def ready(self) -> bool:
        """Whether its answers can be trusted now (its readiness: by default, no progress)."""
        return self._freshness.ready

    async def until_ready(self, timeout: float) -> bool:
        """Wait until it is `ready`; False when it was not within `timeout`."""
        return await self._freshness.until_ready(timeout)

    async def wait_idle(self, timeout: float) -> bool:
        return await self._freshness.wait_idle(timeout)
