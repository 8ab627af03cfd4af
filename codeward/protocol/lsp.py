"""LSP 3.17 (the server's side) as a dialect of a daemon connection, sans-IO.

`codeward lsp` opens a connection with a Content-Length frame naming this dialect (the
handoff request `codeward/lsp-stdio` carrying the editor's stdin and stdout, or the
`codeward/lsp` notification before copied bytes); every later frame is the editor's.
`LspMachine` turns each frame into an event for the I/O layer and answers by itself what
needs no daemon state: the lifecycle (a request before `initialize` is refused with
ServerNotInitialized, a second `initialize` or a request after `shutdown` with
InvalidRequest, `exit` ends the connection with code 0 after `shutdown`, else 1), JSON
that does not parse, messages that are not JSON-RPC, batches (LSP has none) and duplicate
ids. None of these ends the connection: only a broken frame does (the framing layer's
`FrameError`). Its `*_message` methods encode what the I/O layer sends (bodies, unframed).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from codeward.protocol.errors import ErrorCode, RpcError
from codeward.protocol.framing import Parts
from codeward.protocol.messages import (
    ErrorObject,
    Id,
    Incoming,
    Notification,
    Request,
    Response,
    decode_message,
    encode,
    error_response,
)

BIND_METHOD = "codeward/lsp"
HANDOFF_METHOD = "codeward/lsp-stdio"
ENDED_METHOD = "codeward/lsp-ended"
ENCODINGS = ("utf-8", "utf-16", "utf-32")
DEFAULT_ENCODING = "utf-16"  # what every LSP client and server must support

# -- the wire shapes ---------------------------------------------------------------------------


class ClientInfo(Struct, forbid_unknown_fields=False):
    name: str = ""
    version: str = ""


class WorkspaceFolder(Struct, forbid_unknown_fields=False):
    uri: str
    name: str = ""


class InitializeParams(Struct, rename="camel", forbid_unknown_fields=False):
    """What the dialect reads of `initialize` (the rest is the editor's business)."""

    process_id: int | None = None
    client_info: ClientInfo | None = None
    root_path: str | None = None
    root_uri: str | None = None
    workspace_folders: list[WorkspaceFolder] | None = None
    capabilities: dict[str, Any] = msgspec.field(default_factory=dict)
    initialization_options: Any = None


class _CancelParams(Struct, forbid_unknown_fields=False):
    id: Id


class State(Enum):
    NEW = "new"  # nothing but `initialize` (and `exit`) is taken
    RUNNING = "running"  # `initialize` received
    SHUT_DOWN = "shut down"  # `shutdown` received: only `exit` is taken
    EXITED = "exited"  # `exit` received: nothing more is read


# -- events for the I/O layer -------------------------------------------------------------------


class Handoff(Struct, frozen=True):
    """The first frame carried the editor's stdin and stdout: serve them."""

    id: Id


class Bind(Struct, frozen=True):
    """The first frame opened the dialect; the editor's bytes follow on this connection."""


class Initialize(Struct, frozen=True):
    id: Id
    params: InitializeParams


class Initialized(Struct, frozen=True):
    pass


class Call(Struct, frozen=True):
    """A request of the editor's (other than the lifecycle's), params left raw."""

    id: Id
    method: str
    params: Raw


class Notify(Struct, frozen=True):
    """A notification of the editor's (other than the lifecycle's and cancellations)."""

    method: str
    params: Raw


class Cancel(Struct, frozen=True):
    """`$/cancelRequest` for a request of the editor's still in flight."""

    id: Id


class Reply(Struct, frozen=True):
    """The editor's response to a request of the daemon's: `result` raw, or `error`."""

    id: Id
    result: Raw | None
    error: ErrorObject | None


class Shutdown(Struct, frozen=True):
    id: Id


class Exit(Struct, frozen=True):
    """`exit`: the connection ends; `code` is what the process exits with."""

    code: int


class Send(Struct, frozen=True):
    """Bytes the machine answered by itself (an error)."""

    data: bytes


Event = (
    Handoff | Bind | Initialize | Initialized | Call | Notify | Cancel | Reply | Shutdown | Exit
) | Send


def is_opening(frame: bytes) -> bool:
    """Whether the first frame of a connection opens the LSP dialect."""
    try:
        item = decode_message(frame)
    except RpcError:
        return False
    return (item.method == HANDOFF_METHOD and item.kind == "request") or (
        item.method == BIND_METHOD and item.kind == "notification"
    )


def negotiate_encoding(capabilities: dict[str, Any], preferred: str) -> str:
    """The position encoding to answer: `preferred` (the servers') when the editor offers it,
    else the first one it offers that codeward converts, else UTF-16 (LSP's default)."""
    general = capabilities.get("general")
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    if not isinstance(offered, list) or not offered:
        return DEFAULT_ENCODING
    if preferred in offered:
        return preferred
    for encoding in offered:
        if encoding in ENCODINGS:
            return encoding
    return DEFAULT_ENCODING


class LspMachine:
    """The server side of one editor connection: frames in, events out."""

    def __init__(self) -> None:
        self.state = State.NEW
        self.frames = 0  # received so far
        self.inbound: set[Id] = set()  # the editor's requests not yet answered
        self.pending: set[Id] = set()  # the daemon's requests to the editor, unanswered
        self._sent = 0  # the daemon's requests so far (their ids: `codeward-N`)

    def receive(self, frame: bytes) -> Event | None:
        """The event of one frame, or None for a frame that needs nothing."""
        self.frames += 1
        if self.state is State.EXITED:
            return None
        if frame[:1] != b"{" and frame.lstrip()[:1] == b"[":
            return self._error(None, ErrorCode.INVALID_REQUEST, "LSP has no batches; send one "
                               "message a frame.")  # fmt: skip
        try:
            item = decode_message(frame)
        except RpcError as exc:
            return self._error(None, exc.code, exc.message)
        if item.kind == "response":
            return self._reply(item)
        if item.kind == "notification":
            return self._notification(item)
        assert item.id is not None
        try:
            return self._request(item.id, item)
        except RpcError as exc:
            return self._error(item.id, exc.code, exc.message)

    def _request(self, msg_id: Id, item: Incoming) -> Event | None:
        method = item.method
        if method == HANDOFF_METHOD:
            if self.frames > 1:
                raise RpcError(ErrorCode.INVALID_REQUEST, "The handoff must be the first frame.")
            return Handoff(msg_id)
        if msg_id in self.inbound:
            raise RpcError(ErrorCode.INVALID_REQUEST, "This id is already in flight; use a "
                           "new id.")  # fmt: skip
        state = self.state
        if state is State.SHUT_DOWN:
            raise RpcError(ErrorCode.INVALID_REQUEST, f"The server was shut down; {method} is "
                           "not taken: send exit.")  # fmt: skip
        if method == "initialize":
            if state is not State.NEW:
                raise RpcError(ErrorCode.INVALID_REQUEST, "initialize was received already; "
                               "send it once per connection.")  # fmt: skip
            params = item.params(InitializeParams)
            self.state = State.RUNNING
            self.inbound.add(msg_id)
            return Initialize(msg_id, params)
        if state is State.NEW:
            raise RpcError(ErrorCode.SERVER_NOT_INITIALIZED, f"Send initialize before {method}.")
        self.inbound.add(msg_id)
        if method == "shutdown":
            self.state = State.SHUT_DOWN
            return Shutdown(msg_id)
        return Call(msg_id, method, item.payload)

    def _notification(self, item: Incoming) -> Event | None:
        method = item.method
        if method == "exit":
            code = 0 if self.state is State.SHUT_DOWN else 1
            self.state = State.EXITED
            return Exit(code)
        if method == BIND_METHOD:
            return Bind() if self.frames == 1 else None
        if self.state is not State.RUNNING:
            return None  # before initialize, or after shutdown: dropped, as LSP says
        if method == "initialized":
            return Initialized()
        if method == "$/cancelRequest":
            try:
                target = item.decode(_CancelParams).id
            except msgspec.DecodeError:
                return None
            return Cancel(target) if target in self.inbound else None
        return Notify(method, item.payload)

    def _reply(self, item: Incoming) -> Event | None:
        if item.id is None or item.id not in self.pending:
            return None  # an answer to nothing of ours: nothing to do
        self.pending.discard(item.id)
        if item.error is UNSET:
            return Reply(item.id, item.payload, None)
        assert isinstance(item.error, ErrorObject)
        return Reply(item.id, None, item.error)

    def _error(self, msg_id: Id | None, code: int, message: str) -> Send:
        return Send(encode(error_response(msg_id, code, message)))

    # -- what the I/O layer sends ---------------------------------------------------------------

    def result_message(self, msg_id: Id, result: Any) -> bytes:
        """The answer to the editor's request `msg_id` (`result` may be a `msgspec.Raw`)."""
        self.inbound.discard(msg_id)
        return encode(Response(id=msg_id, result=result))

    def answer(self, msg_id: Id, result: Any) -> bytes | Parts:
        """`result_message`, but a result passed on as raw JSON (a `msgspec.Raw`, a large
        one a view of its server's frame) is not copied into a new message: the answer is
        then in parts, in order (its head, the result's own bytes, the closing brace), for
        the connection to write as they are (`Outbox.put`)."""
        if not isinstance(result, Raw):
            return self.result_message(msg_id, result)
        self.inbound.discard(msg_id)
        head = b'{"jsonrpc":"2.0","id":%s,"result":' % msgspec.json.encode(msg_id)
        return [head, memoryview(result), b"}"]

    def error_message(
        self, msg_id: Id, code: int, message: str, data: Any | UnsetType = UNSET
    ) -> bytes:
        self.inbound.discard(msg_id)
        return encode(error_response(msg_id, code, message, data))

    def notification_message(self, method: str, params: Any) -> bytes:
        return encode(Notification(method=method, params=params))

    def request_message(self, method: str, params: Any) -> tuple[Id, bytes]:
        """A request of the daemon's to the editor, and its id (its reply: a `Reply`)."""
        self._sent += 1
        msg_id = f"codeward-{self._sent}"
        self.pending.add(msg_id)
        return msg_id, encode(Request(id=msg_id, method=method, params=params))

    def forget(self, msg_id: Id) -> None:
        """The daemon stopped waiting for its request `msg_id`."""
        self.pending.discard(msg_id)

    def handoff_message(self, msg_id: Id) -> bytes:
        return encode(Response(id=msg_id, result={}))

    @staticmethod
    def ended_message(code: int) -> bytes:
        """What the socket of a handoff carries when the editor ended the session."""
        return encode(Notification(method=ENDED_METHOD, params={"code": code}))
