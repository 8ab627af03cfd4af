"""A `Peer` codec on the standard library's `json`, for the thin client (which loads no
msgspec): messages decode to `JsonMessage`, whose payload is already plain Python."""

from __future__ import annotations

import json
from typing import Any

from codeward.protocol.errors import ErrorCode, RpcError

Id = int | str


class JsonMessage:
    """A decoded message: `payload` holds params (requests, notifications) or the result;
    `error` the error object of an error response, else None."""

    __slots__ = ("error", "id", "kind", "method", "payload")

    def __init__(
        self, kind: str, msg_id: Id | None, method: str, payload: Any, error: Any = None
    ) -> None:
        self.kind = kind
        self.id = msg_id
        self.method = method
        self.payload = payload
        self.error = error


def _invalid(reason: str) -> RpcError:
    return RpcError(ErrorCode.INVALID_REQUEST, f"Invalid request: {reason}.")


def _message(value: Any) -> JsonMessage | RpcError:
    if not isinstance(value, dict):
        return _invalid("a message must be an object")
    if "jsonrpc" in value and value["jsonrpc"] != "2.0":
        return _invalid('"jsonrpc" must be "2.0"')
    msg_id = value.get("id")
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
        return _invalid("an id must be a number or a string")
    method = value.get("method")
    if isinstance(method, str):
        params = value.get("params")
        if "id" not in value:
            return JsonMessage("notification", None, method, params)
        if msg_id is None:
            return _invalid("a request id cannot be null")
        return JsonMessage("request", msg_id, method, params)
    if "id" in value and ("result" in value or "error" in value):
        return JsonMessage("response", msg_id, "", value.get("result"), value.get("error"))
    return _invalid('it needs a "method"')


class JsonCodec:
    """Frames to `JsonMessage`s and calls to bodies, with `json` (see `peer.Codec`)."""

    def decode(self, frame: bytes) -> tuple[list[JsonMessage | RpcError], bool]:
        try:  # strict UTF-8, as the daemon's codec (json.loads of bytes lets surrogates pass)
            value = json.loads(frame.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise RpcError(ErrorCode.PARSE_ERROR, f"Parse error: {exc}.") from None
        if isinstance(value, list):
            if not value:
                raise _invalid("an empty batch")
            return [_message(item) for item in value], True
        return [_message(value)], False

    def cancel_target(self, message: JsonMessage) -> Id | None:
        params = message.payload
        target = params.get("id") if isinstance(params, dict) else None
        return target if isinstance(target, int | str) and not isinstance(target, bool) else None

    def request(self, msg_id: Id, method: str, params: Any) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        return _dumps(message)

    def notification(self, method: str, params: Any) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return _dumps(message)

    def result(self, msg_id: Id, result: Any) -> bytes:
        return _dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Id | None, code: int, message: str, data: Any = None) -> bytes:
        error: dict[str, Any] = {"code": int(code), "message": message}
        if data is not None:
            error["data"] = data
        return _dumps({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()
