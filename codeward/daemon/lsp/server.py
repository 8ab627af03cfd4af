"""One language server for one or more session roots, as an actor: it owns its process (through its
`Supervisor`), its open documents (`DocumentSync`), what it said about them (`Freshness`)
and its answers to the server's own requests (`ServerRequests`). The rest of the daemon
asks it through these methods, never through its parts:

- life (`lifecycle.ServerLifecycle`): `run` (in the session's nursery, or the daemon's for a
  server shared by the roots of one repository), `start`, `stop`, `halt(reason, park=)`,
  `retry`, `connection()` (started on first need), `status()`, `state`, `running`, `live`, `busy`;
- requests: `request(method, params, timeout=, result_type=)`, `requests(calls, timeout=)`
  (several sent at once), `notify`; `execute_command(command, arguments, on_edit)` with the
  edits that command asks for (a failure's ToolError: `request_failures`);
- what it offers (`server_offers.ServerOffers`): `offers(method)`, `offers_now`,
  `may_offer`, `capabilities`, `encoding`;
- the roots it serves (`workspace_folders.WorkspaceFolders`): `roots` (the first its own),
  `add_root(root, on_progress)`, `remove_root(root)`, its workspace `folders`;
- documents (`server_documents.ServerDocuments`): `sync(path, language_id, data, stat)`
  -> the `Document` sent (one version, never changed), `document(uri)`,
  `open_documents()`, `touch`, `close_document`, `watched_files_changed`;
- freshness: `fresh_diagnostics(path, language_id, data, settle)`,
  `document_diagnostics(doc, settle)` (None: no answer for that content in time),
  `workspace_diagnostics`, `published`, `wait_ready`, `ready`/`until_ready`, `readiness`.

The methods that send requests are this module's own: the one step of a request's path
between the service (or its part for diagnostics) and the connection.

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
    Relayed,
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
from codeward.daemon.lsp.lifecycle import ServerLifecycle
from codeward.daemon.lsp.new_files import NewFiles
from codeward.daemon.lsp.readiness import Readiness, readiness_for
from codeward.daemon.lsp.request_failures import request_failure, stopped_in_command
from codeward.daemon.lsp.server_documents import ServerDocuments
from codeward.daemon.lsp.server_offers import ServerOffers
from codeward.daemon.lsp.server_requests import ServerRequests
from codeward.daemon.lsp.shapes import document_params, unstructure
from codeward.daemon.lsp.supervisor import ServerState, Supervisor
from codeward.daemon.lsp.sync import DocumentSync
from codeward.daemon.lsp.workspace_folders import WorkspaceFolders
from codeward.protocol.errors import ErrorKind, ToolError

__all__ = ["LanguageServer", "ServerState"]

# Long polls a server may hold open until the next one, even when cancelled (basedpyright
# answers a cancelled workspace pull only when the next pull comes): not expected to answer.
LONG_POLLS = frozenset({"workspace/diagnostic"})
EXECUTE_COMMAND = "workspace/executeCommand"
T = TypeVar("T")


class LanguageServer(ServerLifecycle, WorkspaceFolders, ServerDocuments, ServerOffers):
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
        self._on_start = None  # the daemon's budget (`on_start`)
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
            question=self._question,
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

    def relay(
        self, method: str, params: Any, done: Callable[[Relayed], None]
    ) -> tuple[LspConnection, Relayed] | None:
        """`request`'s hot path with no task waiting: sent now to the running server, its
        answer to `done` (`LspConnection.relay`); None, and nothing sent, when `request`
        would wait first (a turn, new files, a server not running)."""
        life = self._life
        conn = life.conn
        if method in self._turns or self._new_files.waits(method) or conn is None:
            return None
        if life.state is not ServerState.RUNNING:  # (a closed connection sends nothing)
            return None
        relayed = conn.relay(method, params, timeout=self.timeout_for(method), done=done)
        if relayed is None:
            return None
        self._new_files.heard()
        life.last_used = relayed.sent
        return conn, relayed

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
            raise request_failure(self, method, exc, timeout) from None

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
                    results += [request_failure(self, m, Unawaited(), 0) for m, _, _ in calls[1:]]
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
            raise request_failure(self, calls[0][0], exc, timeout) from None
        return [
            request_failure(self, method, result, timeout)
            if isinstance(result, Exception)
            else result
            for (method, _, _), result in zip(calls, results, strict=True)
        ]

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
                raise stopped_in_command(self, command, capture, conn) from exc
            await capture.settle(alive, grace)
        finally:
            self._capture = None
        if not alive():
            raise stopped_in_command(self, command, capture, conn)
        return capture

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
        asked for (pulled, when it pulls), and its readiness awaited. When that pull fails
        (the server's error, not the caller's request), readiness is the end of its
        work-done progress alone (within the same `timeout`)."""
        fresh = self._freshness
        if fresh.ready_for(doc):
            return True
        deadline = trio.current_time() + timeout
        try:
            with trio.move_on_after(timeout):
                await self.document_diagnostics(doc, timeout)
                return await self._changes.wait_for(lambda: fresh.ready_for(doc), timeout)
        except ToolError:
            return await self.wait_idle(max(0.0, deadline - trio.current_time()))
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
