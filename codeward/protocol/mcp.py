"""MCP (Model Context Protocol) as a dialect of a daemon connection, sans-IO.

A newline-delimited connection speaks MCP when its first line is the binding line that
`codeward mcp` sends (`{"jsonrpc": "2.0", "method": "codeward/mcp", "params": {"root":
...}}`) or an MCP `initialize` (with `protocolVersion` and `clientInfo`). `McpMachine` turns
each line into events for the I/O layer and answers by itself what needs no daemon state:
protocol errors, requests before `initialize`, `ping`. Its `*_message` methods encode what
the I/O layer sends back. The shapes follow the MCP specification (2024-11-05 to
2025-11-25, camelCase on the wire).
"""

from __future__ import annotations

import binascii
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

from codeward.protocol.errors import ErrorCode, RpcError
from codeward.protocol.mcp_greeting import LATEST_VERSION, negotiate
from codeward.protocol.messages import (
    Id,
    Incoming,
    Notification,
    Request,
    Response,
    decode_message,
    encode,
    error_response,
)

BIND_METHOD = "codeward/mcp"
# The handoff: `codeward mcp` passes its stdin and stdout (SCM_RIGHTS) with this request,
# answered on the socket, which then only carries `ENDED_BY_HOST` when the host ended it.
HANDOFF_METHOD = "codeward/mcp-stdio"
ENDED_METHOD = "codeward/mcp-ended"

# -- the wire shapes -------------------------------------------------------------------------


class Implementation(Struct, forbid_unknown_fields=False):
    name: str = ""
    version: str = ""


class InitializeParams(Struct, rename="camel", forbid_unknown_fields=False):
    protocol_version: str
    client_info: Implementation
    capabilities: dict[str, Any] = field(default_factory=dict)


class ToolsCapability(Struct, rename="camel"):
    list_changed: bool = True


class ServerCapabilities(Struct):
    tools: ToolsCapability = field(default_factory=ToolsCapability)


class InitializeResult(Struct, rename="camel"):
    protocol_version: str
    server_info: Implementation
    capabilities: ServerCapabilities = field(default_factory=ServerCapabilities)
    instructions: str | UnsetType = UNSET


class RequestMeta(Struct, rename="camel", forbid_unknown_fields=False):
    progress_token: int | str | UnsetType = UNSET


class ListToolsParams(Struct, forbid_unknown_fields=False):
    cursor: str | UnsetType = UNSET


class Tool(Struct, rename="camel", omit_defaults=True):
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | UnsetType = UNSET
    title: str | UnsetType = UNSET
    annotations: dict[str, Any] | UnsetType = UNSET


class ListToolsResult(Struct):
    tools: list[Tool]


class CallToolParams(Struct, forbid_unknown_fields=False):
    name: str
    arguments: dict[str, Any] | None = None
    meta: RequestMeta | UnsetType = field(default=UNSET, name="_meta")


class TextContent(Struct, tag_field="type", tag="text"):
    text: str


class CallToolResult(Struct, rename="camel"):
    content: list[TextContent]
    structured_content: dict[str, Any] | UnsetType = UNSET
    is_error: bool = False


class CancelledParams(Struct, rename="camel", forbid_unknown_fields=False):
    request_id: Id
    reason: str | UnsetType = UNSET


class ProgressParams(Struct, rename="camel", omit_defaults=True):
    progress_token: int | str
    progress: float
    total: float | UnsetType = UNSET
    message: str | UnsetType = UNSET


class ElicitParams(Struct, rename="camel"):
    message: str
    requested_schema: dict[str, Any]


class ElicitResult(Struct, forbid_unknown_fields=False):
    action: str
    content: dict[str, Any] | None = None


class BindParams(Struct, forbid_unknown_fields=True):
    root: str


class HandoffParams(Struct, forbid_unknown_fields=True):
    """The handoff's: the root, and when `codeward mcp` read the host's first bytes while
    the daemon it started was still starting, those bytes (`pending`, base64) and the id
    of the `initialize` among them it answered itself (`answered`)."""

    root: str
    pending: str = ""
    answered: Id | None = None


class _Opening(Struct, rename="camel", forbid_unknown_fields=False):
    protocol_version: Any = UNSET
    client_info: Any = UNSET


# -- events for the I/O layer (Structs: made on every call, they must cost nothing) --------


class Bind(Struct, frozen=True):
    """The binding line: serve the session of `root`."""

    root: str


class Initialize(Struct, frozen=True):
    id: Id
    params: InitializeParams


class ListTools(Struct, frozen=True):
    id: Id


class CallTool(Struct, frozen=True):
    id: Id
    name: str
    arguments: dict[str, Any]
    progress_token: int | str | None


class Handoff(Struct, frozen=True):
    """The first line carried stdin and stdout: serve them, on the session of `root`;
    `pending`: what the host sent that `codeward mcp` read already (read it first), among
    which the `initialize` of id `answered` is answered already."""

    id: Id
    root: str
    pending: bytes = b""
    answered: Id | None = None


class Cancel(Struct, frozen=True):
    request_id: Id


class Send(Struct, frozen=True):
    """Bytes the machine answered by itself (an error, a pong)."""

    data: bytes


class Reply(Struct, frozen=True):
    """The client's response to a request of the daemon's (an elicitation): `result` is
    its raw JSON, None when it answered with an error."""

    id: Id
    result: bytes | None


Event = Bind | Handoff | Initialize | ListTools | CallTool | Cancel | Send | Reply


def is_opening(frame: bytes) -> bool:
    """Whether the first line of a connection opens the MCP dialect."""
    try:
        item = decode_message(frame)
    except RpcError:
        return False
    if item.method in (BIND_METHOD, HANDOFF_METHOD):
        return True
    if item.method != "initialize" or item.kind != "request":
        return False
    try:
        opening = item.decode(_Opening)
    except msgspec.DecodeError:
        return False
    return isinstance(opening.protocol_version, str) and isinstance(opening.client_info, dict)


class McpMachine:
    """The server side of one MCP connection: lines in, events out."""

    def __init__(self) -> None:
        self.initialized = False  # `initialize` answered
        self.version = LATEST_VERSION
        self.lines = 0  # received so far
        self.elicitation = False  # the client declared it answers `elicitation/create` forms
        self._sent = 0  # requests of the daemon's so far (their ids: `codeward-N`)

    def receive(self, frame: bytes) -> Event | None:
        """The event of one line, or None for a line that needs nothing."""
        self.lines += 1
        if frame[:1] == b"[" or (frame[:1].isspace() and frame.lstrip()[:1] == b"["):
            return self._error(None, ErrorCode.INVALID_REQUEST, "MCP has no batches; send one "
                               "message a line.")  # fmt: skip
        try:
            item = decode_message(frame)
        except RpcError as exc:
            return self._error(None, exc.code, exc.message)
        if item.kind == "response":
            if item.id is None:
                return None
            ok = item.error is UNSET
            return Reply(item.id, bytes(item.payload) if ok else None)
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
            if self.lines > 1:
                raise RpcError(ErrorCode.INVALID_REQUEST, "The handoff must be the first line.")
            handoff = item.params(HandoffParams)
            try:
                pending = binascii.a2b_base64(handoff.pending, strict_mode=True)
            except binascii.Error:
                message = "The handoff's `pending` is not base64: send stdin's bytes in base64."
                raise RpcError(ErrorCode.INVALID_PARAMS, message) from None
            return Handoff(msg_id, handoff.root, pending, handoff.answered)
        if method == "initialize":
            params = item.params(InitializeParams)
            self.version = negotiate(params.protocol_version)
            self.elicitation = _elicits_forms(params.capabilities)
            self.initialized = True
            return Initialize(msg_id, params)
        if method == "ping":
            return Send(encode(Response(id=msg_id, result={})))
        if method not in ("tools/list", "tools/call"):
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}.")
        if not self.initialized:
            raise RpcError(ErrorCode.INVALID_REQUEST, f"Call initialize before {method}.")
        if method == "tools/list":
            item.params(ListToolsParams)
            return ListTools(msg_id)
        call: CallToolParams = item.params(CallToolParams)
        token = call.meta.progress_token if isinstance(call.meta, RequestMeta) else None
        return CallTool(msg_id, call.name, call.arguments or {}, _token(token))

    def _notification(self, item: Incoming) -> Event | None:
        if item.method == BIND_METHOD:
            try:
                return Bind(item.decode(BindParams).root)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return None  # a notification gets no answer; calls will say no session
        if item.method == "notifications/cancelled":
            try:
                return Cancel(item.decode(CancelledParams).request_id)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return None
        return None  # notifications/initialized, and any other: nothing to do

    def _error(self, msg_id: Id | None, code: int, message: str) -> Send:
        return Send(encode(error_response(msg_id, code, message)))

    # -- what the I/O layer sends -----------------------------------------------------------

    def initialize_message(self, msg_id: Id, server: Implementation, instructions: str) -> bytes:
        result = InitializeResult(self.version, server, instructions=instructions)
        return encode(Response(id=msg_id, result=result))

    def tools_message(self, msg_id: Id, tools: list[Tool]) -> bytes:
        return encode(Response(id=msg_id, result=ListToolsResult(tools)))

    def result_message(
        self, msg_id: Id, text: str, structured: dict[str, Any] | None, is_error: bool = False
    ) -> bytes:
        result = CallToolResult(
            [TextContent(text)], UNSET if structured is None else structured, is_error
        )
        return encode(Response(id=msg_id, result=result))

    def error_message(self, msg_id: Id | None, code: int, message: str) -> bytes:
        return encode(error_response(msg_id, code, message))

    def progress_message(
        self, token: int | str, progress: float, message: str | None = None
    ) -> bytes:
        params = ProgressParams(token, progress, message=UNSET if message is None else message)
        return encode(Notification(method="notifications/progress", params=params))

    def elicit_message(self, message: str, schema: dict[str, Any]) -> tuple[Id, bytes]:
        """An `elicitation/create` request (a form of `schema`), and its id."""
        self._sent += 1
        msg_id = f"codeward-{self._sent}"
        request = Request(id=msg_id, method="elicitation/create",
                          params=ElicitParams(message, schema))  # fmt: skip
        return msg_id, encode(request)

    def handoff_message(self, msg_id: Id) -> bytes:
        return encode(Response(id=msg_id, result={}))

    def ended_message(self) -> bytes:
        """What the socket of a handoff carries when the host ended the session."""
        return encode(Notification(method=ENDED_METHOD, params={"by": "host"}))

    def list_changed_message(self) -> bytes:
        return encode(Notification(method="notifications/tools/list_changed"))


def _elicits_forms(capabilities: dict[str, Any]) -> bool:
    """Whether a client's capabilities declare form elicitation: `elicitation: {}` (form,
    before modes existed) or one that names `form`."""
    declared = capabilities.get("elicitation")
    if not isinstance(declared, dict):
        return False
    return not declared or "form" in declared or "url" not in declared


def _token(token: int | str | UnsetType | None) -> int | str | None:
    return token if isinstance(token, int | str) else None
