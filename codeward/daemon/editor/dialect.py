"""The editor dialect of a connection: the daemon as the editor's language server.

`EditorDialect.receive` takes each frame of a connection whose first frame opened LSP
(`codeward.protocol.lsp.is_opening`). The editor's requests run in the connection's request
nursery (counted by `request_started`/`request_finished`, as MCP's calls), each in its own
cancel scope: `$/cancelRequest` or a disconnect cancels it, and the service passes the
cancellation on to the server; the common ones go the lean way instead, with no task
(`relay.Relays`). The diagnostics publisher runs in a background scope of the
same nursery, cancelled when the editor stops sending.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio
from msgspec import Struct

from codeward import __version__
from codeward.daemon.editor import diagnostics, folders
from codeward.daemon.editor.asking import Asking, holder_name
from codeward.daemon.editor.buffers import BadChange, Buffers
from codeward.daemon.editor.convert import Converter
from codeward.daemon.editor.documents import Documents
from codeward.daemon.editor.forward import FORWARDED, Forwarder, uri_of
from codeward.daemon.editor.markup import Markup
from codeward.daemon.editor.offers import PROVIDERS, command_servers, merged, registrations
from codeward.daemon.editor.progress import Progress
from codeward.daemon.editor.relay import Relays
from codeward.daemon.editor.workspace import Root, Workspace, folders_of
from codeward.daemon.lsp.positions import Encoding, LineIndex, negotiated
from codeward.daemon.lsp.shapes import unstructure
from codeward.protocol import lsp
from codeward.protocol.errors import ErrorCode, ErrorKind, ToolError, find_tool_error
from codeward.protocol.framing import Parts
from codeward.protocol.messages import Id

if TYPE_CHECKING:
    from lsprotocol import types as lsp_types

    from codeward.daemon.lsp.service import Offer
    from codeward.daemon.mcp import _Sessions

log = logging.getLogger(__name__)
# A document's request when no server can say anything about it: LSP's empty answer.
EMPTY_REPORT = {"kind": "full", "items": []}


class Link(Protocol):
    """The connection the dialect speaks over (`daemon.connection.Connection`)."""

    @property
    def id(self) -> int: ...

    @property
    def daemon(self) -> _Sessions: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    def send_body(self, body: bytes | Parts) -> None: ...

    def request_started(self) -> None: ...

    def request_finished(self) -> None: ...

    def hand_over(self, ack: bytes, ended: bytes) -> bool: ...

    def finish_reading(self, ended: bytes) -> None:
        """Read no more (the editor sent `exit`); `ended` is the pump's last line."""
        ...


class _TextDocument(Struct, rename="camel", forbid_unknown_fields=False):
    uri: str
    language_id: str = ""
    version: int = 0
    text: str = ""


class _OpenParams(Struct, rename="camel", forbid_unknown_fields=False):
    text_document: _TextDocument


class _ChangeParams(Struct, rename="camel", forbid_unknown_fields=False):
    text_document: _TextDocument
    content_changes: list[dict[str, Any]]


class EditorDialect:
    def __init__(self, conn: Link) -> None:
        self.conn = conn
        self.machine = lsp.LspMachine()
        self.name = "editor"  # the holder's name, from initialize's clientInfo and processId
        self.encoding: Encoding = negotiated(lsp.DEFAULT_ENCODING)
        self.buffers = Buffers(self.encoding)
        self.workspace: Workspace | None = None
        self.forwarder: Forwarder | None = None
        self.publisher: diagnostics.Publisher | None = None
        self.documents: Documents | None = None
        self.progress: Progress | None = None
        self.client: dict[str, Any] = {}  # the editor's capabilities
        self.markup = Markup({})  # answers in the markup the editor takes
        self._announced: set[str] = set()  # capabilities the editor was told of
        self._languages: set[str] = set()  # languages whose servers it was told of
        self._nursery: trio.Nursery | None = None  # the background's
        self._ready = trio.Event()  # initialize answered (or failed)
        self._failure: ToolError | None = None
        self._calls: dict[Id, tuple[trio.CancelScope, str]] = {}
        self._requests: trio.Nursery | None = None  # the connection's request nursery
        self.relays = Relays(conn, self.machine, self._error, self._cancelled, self._spawn)
        self.asking = Asking(self.machine, conn.send_body, lambda: conn.closed)
        self._ask = self.asking.ask
        self._apply_edit = self.asking.apply_edit
        self._background = trio.CancelScope()

    # -- frames in ------------------------------------------------------------------------

    def receive(self, frame: bytes, requests: trio.Nursery) -> None:
        event = self.machine.receive(frame)
        if event is None:
            return
        if isinstance(event, lsp.Send):
            self.conn.send_body(event.data)
        elif isinstance(event, lsp.Call):
            self._start(event, requests)
        elif isinstance(event, lsp.Notify):
            self._notify(event)
        elif isinstance(event, lsp.Cancel):
            call = self._calls.get(event.id)
            if call is not None:
                call[0].cancel()
            else:
                self.relays.cancel(event.id)
        elif isinstance(event, lsp.Reply):
            self.asking.replied(event)
        elif isinstance(event, lsp.Initialize):
            self.conn.request_started()
            requests.start_soon(self._initialize, event, requests)
        elif isinstance(event, lsp.Shutdown):
            if self._ready.is_set():
                self.conn.send_body(self.machine.result_message(event.id, None))
            else:  # (after initialize's answer, as the editor's order says)
                self.conn.request_started()
                requests.start_soon(self._shut_down, event)
        elif isinstance(event, lsp.Exit):
            self.cancel(writes=True)
            self.conn.finish_reading(self.machine.ended_message(event.code))
        elif isinstance(event, lsp.Handoff) and not self.conn.hand_over(
            self.machine.handoff_message(event.id), self.machine.ended_message(1)
        ):
            self.conn.send_body(self.machine.error_message(
                event.id, ErrorCode.INVALID_REQUEST, "The handoff carries stdin and stdout: "
                "two pipes or sockets (SCM_RIGHTS); send the binding frame instead."
            ))  # fmt: skip
        # Bind and Initialized need nothing

    # -- initialize -----------------------------------------------------------------------

    async def _initialize(self, event: lsp.Initialize, requests: trio.Nursery) -> None:
        try:
            body = await self._initialized(event)
            # (its nursery exists before the editor has the answer: a document it opens
            # next may start a registration there)
            await requests.start(self._run_background)
        except ToolError as exc:
            self._failure = exc
            body = self._error(event.id, exc)
        finally:
            self._ready.set()
            self.conn.request_finished()
        self.conn.send_body(body)

    async def _initialized(self, event: lsp.Initialize) -> bytes:
        params = event.params
        self.name = holder_name(params)
        if not self.conn.daemon.loaded.is_set():
            await self.conn.daemon.loaded.wait()
        window = params.capabilities.get("window")
        self.progress = Progress(
            self.conn.id,
            isinstance(window, dict) and window.get("workDoneProgress") is True,
            self._notify_editor,
            self._ask,
            questions=isinstance(window, dict) and isinstance(window.get("showMessage"), dict),
        )
        workspace = Workspace(self.conn.daemon.sessions, self.conn.id, self.progress.published,
                              self.progress.notice)  # fmt: skip
        self.workspace = workspace
        workspace.reopened = partial(folders.resend, workspace, self.buffers, self)
        await workspace.open(folders_of(params))
        offers: list[Offer] = []
        commands: dict[str, Any] = {}
        self.client = params.capabilities
        self.markup = Markup(params.capabilities)
        for root in workspace.roots:
            service = root.session.lsp
            files, _ = await service.listing()
            languages = service.workspace_languages(files)
            self._languages.update(languages)
            found = await service.capabilities_of(languages)
            offers += found
            for command, server in command_servers(found).items():
                commands.setdefault(command, (root, server))
        preferred = offers[0].encoding if offers else lsp.DEFAULT_ENCODING
        self.encoding = negotiated(lsp.negotiate_encoding(params.capabilities, preferred))
        self.buffers.encoding = self.encoding
        self.forwarder = Forwarder(
            workspace, self.encoding, self._lines, self._apply_edit, self.progress.rewrite
        )
        self.forwarder.commands = commands
        self.relays.forwarder, self.relays.markup = self.forwarder, self.markup
        self.forwarder.encodings.update((offer.server, offer.encoding) for offer in offers)
        self.publisher = diagnostics.Publisher(self._diagnostics_of, self._publish)
        self.documents = Documents(workspace, self, self.publisher.changed)
        capabilities = merged(offers, self.encoding)
        capabilities["workspace"] = folders.capability(params.capabilities)
        self._announced = {key for key in PROVIDERS.values() if key in capabilities}
        result = {
            "capabilities": capabilities,
            "serverInfo": {"name": "codeward", "version": __version__},
        }
        return self.machine.result_message(event.id, result)

    async def _shut_down(self, event: lsp.Shutdown) -> None:
        try:
            await self._ready.wait()
            self.conn.send_body(self.machine.result_message(event.id, None))
        finally:
            self.conn.request_finished()

    async def _run_background(self, task_status: trio.TaskStatus[None]) -> None:
        """The diagnostics publisher and the documents' task, until the editor stops."""
        assert self.publisher is not None and self.documents is not None
        assert self.progress is not None
        with self._background:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                nursery.start_soon(self.publisher.run)
                nursery.start_soon(self.documents.run)
                nursery.start_soon(self.progress.run)
                if self.workspace is not None:
                    nursery.start_soon(self.workspace.watch, lambda: self.conn.stopping)

    # -- requests -------------------------------------------------------------------------

    def _start(self, event: lsp.Call, requests: trio.Nursery) -> None:
        method = event.method
        if method not in FORWARDED and method != "textDocument/diagnostic":
            self.conn.send_body(self.machine.error_message(
                event.id, ErrorCode.METHOD_NOT_FOUND, f"codeward lsp does not serve {method}."
            ))  # fmt: skip
            return
        if self.conn.stopping:
            self.conn.send_body(self.machine.error_message(
                event.id, ErrorCode.REQUEST_CANCELLED, "The daemon is stopping; the editor's "
                "server restarts with it.", {"kind": ErrorKind.CANCELLED.value}
            ))  # fmt: skip
            return
        self._requests = requests
        if self.documents is not None and self.documents.is_settled and self.relays.start(event):
            return  # (relayed: no task of its own)
        self._spawn(event)

    def _spawn(self, event: lsp.Call) -> None:
        """`event` answered in a task of its own, in the connection's request nursery."""
        assert self._requests is not None
        scope = trio.CancelScope()
        self._calls[event.id] = (scope, event.method)
        self.conn.request_started()
        self._requests.start_soon(self._run, event, scope)

    async def _run(self, event: lsp.Call, scope: trio.CancelScope) -> None:
        try:
            with scope:
                self.conn.send_body(await self._answer(event))
            if scope.cancelled_caught:
                self.conn.send_body(self._cancelled(event.id))
        finally:
            self._calls.pop(event.id, None)
            self.conn.request_finished()

    async def _answer(self, event: lsp.Call) -> bytes | Parts:
        try:
            if not self._ready.is_set():
                await self._ready.wait()
            if self._failure is not None:
                raise self._failure
            assert self.forwarder is not None and self.documents is not None
            await self.documents.settled()  # answered on the text the editor has now
            if event.method == "textDocument/diagnostic":
                result = await self._pull(uri_of(event.params))
            else:
                answer = await self.forwarder.request(event.method, event.params)
                try:
                    result = self.markup(event.method, answer)
                except msgspec.DecodeError as exc:  # (a large answer is read only here)
                    return self.machine.error_message(event.id, ErrorCode.REQUEST_FAILED,
                        f"The language server answered with what is not JSON: {exc}.")  # fmt: skip
            return self.machine.answer(event.id, result)
        except ToolError as exc:
            return self._error(event.id, exc)
        except msgspec.DecodeError as exc:
            return self.machine.error_message(
                event.id, ErrorCode.INVALID_PARAMS, f"Invalid params for {event.method}: {exc}."
            )
        except ExceptionGroup as group:
            found = find_tool_error(group)
            if found is None:
                log.exception("internal error in %s", event.method)
                return self._internal(event.id)
            return self._error(event.id, found)
        except Exception:  # (a bug: answered, the connection goes on)
            log.exception("internal error in %s", event.method)
            return self._internal(event.id)

    def _cancelled(self, msg_id: Id) -> bytes:
        return self.machine.error_message(msg_id, ErrorCode.REQUEST_CANCELLED,
            "Request cancelled.", {"kind": ErrorKind.CANCELLED.value})  # fmt: skip

    def _internal(self, msg_id: Id) -> bytes:
        return self.machine.error_message(
            msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
        )

    def _error(self, msg_id: Id, exc: ToolError) -> bytes:
        """A tool error as the editor gets it: no server offers the method -> MethodNotFound;
        else RequestFailed; `data` says the kind (and the server) as for any client."""
        code = {
            ErrorKind.UNSUPPORTED_BY_SERVER: ErrorCode.METHOD_NOT_FOUND,
            ErrorKind.CANCELLED: ErrorCode.REQUEST_CANCELLED,
            ErrorKind.INVALID_ARGUMENTS: ErrorCode.INVALID_PARAMS,
        }.get(exc.kind, ErrorCode.REQUEST_FAILED)
        return self.machine.error_message(msg_id, code, exc.message, exc.to_data())

    def cancel(self, *, writes: bool) -> None:
        """Cancel the requests in flight (`writes`: commands too, which may change files),
        and the background work."""
        for scope, method in self._calls.values():
            if writes or method != "workspace/executeCommand":
                scope.cancel()
        self.relays.cancel_all()
        self._background.cancel()

    def stop(self) -> None:
        """The editor stopped sending: no more diagnostics to push, no reply to wait for."""
        self._background.cancel()
        self.asking.close()

    async def release(self) -> None:
        """The connection ends: the servers see the disk again where this editor held a
        buffer, and its sessions let go of it (the caller shields this)."""
        self.relays.cancel_all()  # (what no cancellation reached: a closed connection's)
        if self.documents is not None:
            await self.documents.release()
        if self.workspace is not None:
            self.workspace.release()

    # -- documents ------------------------------------------------------------------------

    def _notify(self, event: lsp.Notify) -> None:
        method = event.method
        try:
            if method == "textDocument/didOpen":
                doc = msgspec.json.decode(event.params, type=_OpenParams).text_document
                located = self.workspace.locate(doc.uri) if self.workspace else None
                path = located[1] if located is not None else None
                self.buffers.did_open(doc.uri, path, doc.language_id, doc.version, doc.text)
                self._queue("open", doc.uri, doc.text, doc.version)
            elif method == "textDocument/didChange":
                change = msgspec.json.decode(event.params, type=_ChangeParams)
                doc = change.text_document
                buffer = self.buffers.did_change(doc.uri, doc.version, change.content_changes)
                self._queue("change", doc.uri, buffer.text, buffer.version)
            elif method == "workspace/didChangeWorkspaceFolders" and self.documents is not None:
                assert self.workspace is not None
                change = partial(folders.change, folders.event_of(event.params),
                                 self.workspace, self.buffers, self, self._log)  # fmt: skip
                self.documents.put_work(change)
            elif method == "textDocument/didSave":
                self._queue("save", uri_of(event.params))
            elif method == "textDocument/didClose":
                uri = uri_of(event.params)
                if self.buffers.did_close(uri) is not None:
                    self._queue("close", uri)
                    self._publish(uri, None, [])
        except (msgspec.DecodeError, BadChange) as exc:
            self._log(1, f"codeward: {method} was not applied: {exc}")
        # configuration, watched files, trace and the rest: codeward's own (its config,
        # its watcher) — nothing to do

    def _queue(self, kind: Any, uri: str, text: str = "", version: int = 0) -> None:
        """A document's change, for the servers (documents outside every root reach none)."""
        located = self.workspace.locate(uri) if self.workspace else None
        if located is not None and self.documents is not None:
            root, path = located
            self.documents.put(kind, uri, root, path, text, version)
            language = root.session.lsp.language_or_none(path)
            if kind == "open" and language and language not in self._languages and self._nursery:
                self._languages.add(language)
                self._nursery.start_soon(self._register, root, language)

    async def _register(self, root: Root, language: str) -> None:
        """A document of a language whose servers the editor was not told of: what they
        offer beyond that, registered for its documents of that language."""
        assert self.workspace is not None
        service = (await self.workspace.session(root)).lsp
        offers = await service.capabilities_of([language])
        language_id = next(
            (b.language_id for b in self.buffers.open.values() if b.path is not None
             and service.language_or_none(b.path) == language), language
        )  # fmt: skip
        found = registrations(offers, self._announced, language_id, self.client)
        if found:
            await self._ask("client/registerCapability", {"registrations": found})

    def _changed(self, uri: str) -> None:
        if self.publisher is not None:
            self.publisher.changed(uri)

    def _lines(self, uri: str) -> LineIndex | None:
        """The text of `uri` as the editor has it: its buffer, else the servers' view."""
        buffer = self.buffers.get(uri)
        if buffer is not None:
            return buffer.index
        located = self.workspace.locate(uri) if self.workspace else None
        if located is None:
            return None
        root, path = located
        return root.session.lsp.line_index(path)

    # -- diagnostics ----------------------------------------------------------------------

    async def _diagnostics_of(
        self, uri: str, pulled: bool = False
    ) -> tuple[int | None, diagnostics.Items] | None:
        assert self.workspace is not None and self.forwarder is not None
        return await diagnostics.of_document(
            self.workspace, self.buffers, self.forwarder.encodings, self.encoding,
            self._lines, uri, pulled,
        )  # fmt: skip

    async def _pull(self, uri: str) -> Any:
        found = await self._diagnostics_of(uri, pulled=True)
        if found is None:
            return EMPTY_REPORT
        return {"kind": "full", "items": found[1]}

    def _publish(self, uri: str, version: int | None, items: diagnostics.Items) -> None:
        if self.conn.closed:
            return
        params: dict[str, Any] = {"uri": uri, "diagnostics": items}
        if version is not None:
            params["version"] = version
        self.conn.send_body(
            self.machine.notification_message("textDocument/publishDiagnostics", params)
        )

    # -- to the editor --------------------------------------------------------------------

    def _log(self, kind: int, message: str) -> None:
        """`window/logMessage` (1 error, 2 warning, 3 info)."""
        if not self.conn.closed:
            self.conn.send_body(self.machine.notification_message(
                "window/logMessage", {"type": kind, "message": message}
            ))  # fmt: skip

    def _notify_editor(self, method: str, params: Any) -> None:
        if not self.conn.closed:
            self.conn.send_body(self.machine.notification_message(method, params))

    async def apply_edit(self, edit: lsp_types.WorkspaceEdit, label: str) -> bool:
        """The overlay's edit of a buffer this editor holds (an agent's write), as
        `workspace/applyEdit`: True when the editor applied it. The edit's positions are
        UTF-16 (what the overlay sends): converted when the editor negotiated another encoding."""
        data = unstructure(edit)
        if self.encoding != "utf-16":
            data = Converter("utf-16", self.encoding, self._lines)(data, None)
        return await self._apply_edit(data, label)
