"""JSON-RPC 2.0 messages as msgspec Structs, and the envelope decoder.

Responses carry no `method`, so a message is first decoded into an `Envelope` whose
`params`, `result` and `error` stay `Raw`; `classify` then makes it a `Request`,
`Notification` or `Response`. Encoding keeps `"result": null` (fields are UNSET, not
omitted by default).

A large response written the way JSON-RPC libraries write one (`{"jsonrpc":"2.0","id":ID,
"result":...}`, no spaces: vscode-jsonrpc's, so basedpyright's and every npm server's) is
not parsed: its result is the bytes between that head and the last `}` (`_large_response`).
Parsing 300 KB of completion items only to find where they end cost 0.4 ms of every answer
relayed as it came; a consumer that reads the result decodes it then, and a result that is
not JSON fails there (`Incoming.decode` raises `msgspec.DecodeError`, as for any payload).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from codeward.protocol.errors import ErrorCode, RpcError

T = TypeVar("T")

Id = int | str
_EMPTY = Raw(b"")


class ErrorObject(Struct):
    code: int
    message: str
    data: Any = UNSET


class Request(Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: Id
    method: str
    params: Any = UNSET


class Notification(Struct, kw_only=True):
    jsonrpc: str = "2.0"
    method: str
    params: Any = UNSET


class Response(Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: Id | None
    result: Any = UNSET
    error: ErrorObject | UnsetType = UNSET

    @property
    def ok(self) -> bool:
        return self.error is UNSET


Message = Request | Notification | Response


class Envelope(Struct):
    """Any JSON-RPC message, with its payload left undecoded."""

    jsonrpc: str | UnsetType = UNSET
    id: Id | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw = _EMPTY
    result: Raw = _EMPTY
    error: ErrorObject | UnsetType = UNSET


class Incoming(Struct):
    """A decoded message whose params or result are still raw JSON."""

    kind: str  # "request", "notification" or "response"
    id: Id | None
    method: str
    payload: Raw  # params for requests and notifications, result for responses
    error: ErrorObject | UnsetType = UNSET

    def decode(self, type_: Any = Any) -> Any:
        """Decode the payload (missing params decode as an empty object); a payload that does
        not decode raises `msgspec.DecodeError` (`ValidationError` for the wrong shape), and
        nothing else."""
        decoder = _decoders.get(type_)
        if decoder is None:
            decoder = _decoders[type_] = msgspec.json.Decoder(type_)
        try:
            return decoder.decode(self.payload or b"{}")
        except (UnicodeDecodeError, RecursionError) as exc:  # (see `decode_message`)
            raise msgspec.DecodeError(_reason(exc)) from None

    def params(self, type_: type[T]) -> T:
        """Decode a request's params, or raise the JSON-RPC invalid-params error naming the
        field (every dialect answers bad params the same way)."""
        try:
            return self.decode(type_)
        except msgspec.DecodeError as exc:  # (a ValidationError is one)
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"Invalid params for {self.method}: {exc}."
            ) from None


_envelope_decoder = msgspec.json.Decoder(Envelope)
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}  # by payload type, made once each
_raw_list_decoder = msgspec.json.Decoder(list[Raw])
_encoder = msgspec.json.Encoder()


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _parse_error(exc: BaseException) -> RpcError:
    return RpcError(
        ErrorCode.PARSE_ERROR, f"Parse error: {_reason(exc)}; send one JSON-RPC message."
    )


def _check_utf8(data: bytes) -> None:
    """Raise the parse error unless `data` is UTF-8. msgspec checks the strings it decodes,
    but not the `Raw` payloads it skips; checked here, with the frame, a payload decodes
    later without a `UnicodeDecodeError` on any dialect."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _parse_error(exc) from None


def decode_batch(data: bytes) -> tuple[list[Incoming | RpcError], bool]:
    """Decode one frame: a message or a batch. Returns the items and whether it was a batch.

    A frame that is not JSON raises `RpcError(PARSE_ERROR)`; an element that is not a valid
    message comes back as an `RpcError(INVALID_REQUEST)` in its place.
    """
    stripped = data.lstrip()
    _check_utf8(stripped)
    if stripped[:1] == b"[":
        try:
            elements = _raw_list_decoder.decode(stripped)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise _parse_error(exc) from None
        if not elements:
            raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid request: an empty batch.")
        return [_decode_one_or_error(bytes(raw)) for raw in elements], True
    return [_decode_checked(stripped)], False


def _decode_one_or_error(data: bytes) -> Incoming | RpcError:
    try:
        return _decode_checked(data)
    except RpcError as exc:
        return exc


def decode_message(data: bytes) -> Incoming:
    """Decode one JSON-RPC message (not a batch). Bytes that are not UTF-8 anywhere in it,
    its payload included, are a parse error: every dialect decodes through here or
    `decode_batch`, so no payload can fail later for want of UTF-8."""
    _check_utf8(data)
    return _decode_checked(data)


def _decode_checked(data: bytes) -> Incoming:
    """`decode_message` of bytes known to be UTF-8."""
    if len(data) >= LARGE_RESPONSE_BYTES:
        large = _large_response(data)
        if large is not None:
            return large
    try:
        env = _envelope_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise RpcError(ErrorCode.INVALID_REQUEST, f"Invalid request: {exc}.") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _parse_error(exc) from None
    if env.jsonrpc is not UNSET and env.jsonrpc != "2.0":
        raise RpcError(ErrorCode.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".')
    msg_id = None if env.id is UNSET else env.id
    if isinstance(env.method, str):
        if env.id is UNSET:
            return Incoming("notification", None, env.method, env.params)
        if msg_id is None:
            raise RpcError(
                ErrorCode.INVALID_REQUEST, "Invalid request: a request id cannot be null."
            )
        return Incoming("request", msg_id, env.method, env.params)
    if env.id is not UNSET and (bytes(env.result) or env.error is not UNSET):
        return Incoming("response", msg_id, "", env.result, env.error)
    raise RpcError(ErrorCode.INVALID_REQUEST, 'Invalid request: it needs a "method".')


LARGE_RESPONSE_BYTES = 16 * 1024  # a response this large is taken apart by its head alone
# The head of a result as JSON-RPC libraries write it: an id that is an integer without a
# leading zero or a string without escapes, no spaces anywhere.
_RESPONSE_HEAD = re.compile(
    rb'\{"jsonrpc":"2\.0","id":(0|-?[1-9][0-9]{0,15}|"[^"\\]{0,256}"),"result":'
)


def _large_response(data: bytes) -> Incoming | None:
    """The response `data` holds, its result the bytes between the head and the closing
    brace (a view: no copy), when it is written as `_RESPONSE_HEAD` says; else None."""
    head = _RESPONSE_HEAD.match(data)
    if head is None:
        return None
    end = len(data) - 1
    while data[end] in b" \t\r\n":  # (a frame is never blank: the head matched)
        end -= 1
    if end <= head.end() or data[end] != 0x7D:  # `}`, after a result of one byte or more
        return None
    raw_id = head.group(1)
    msg_id: Id = raw_id[1:-1].decode() if raw_id[:1] == b'"' else int(raw_id)
    return Incoming("response", msg_id, "", Raw(memoryview(data)[head.end() : end]))


def encode(message: Message | list[Message] | list[Response]) -> bytes:
    return _encoder.encode(message)


def error_response(msg_id: Id | None, code: int, message: str, data: Any = UNSET) -> Response:
    return Response(id=msg_id, error=ErrorObject(code=int(code), message=message, data=data))


class _CancelParams(Struct):
    id: Id | None = None


class MsgspecCodec:
    """The daemon's codec for `codeward.protocol.peer.Peer`: msgspec, payloads left `Raw`."""

    def decode(self, frame: bytes) -> tuple[list[Incoming | RpcError], bool]:
        if frame[:1] == b"{" and frame.isascii():  # one message, no UTF-8 to check
            return [_decode_checked(frame)], False
        return decode_batch(frame)

    def cancel_target(self, message: Incoming) -> Id | None:
        try:
            return message.decode(_CancelParams).id
        except msgspec.DecodeError:
            return None

    def request(self, msg_id: Id, method: str, params: Any) -> bytes:
        return _encoder.encode(Request(id=msg_id, method=method, params=params))

    def notification(self, method: str, params: Any) -> bytes:
        return _encoder.encode(Notification(method=method, params=params))

    def result(self, msg_id: Id, result: Any) -> bytes:
        return _encoder.encode(Response(id=msg_id, result=result))

    def error(self, msg_id: Id | None, code: int, message: str, data: Any = None) -> bytes:
        return _encoder.encode(
            error_response(msg_id, code, message, UNSET if data is None else data)
        )


CODEC = MsgspecCodec()
