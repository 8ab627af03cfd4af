"""JSON-RPC 2.0 over a server's stdio with `Content-Length` framing: requests correlated by
id, the server's own requests answered, its notifications handed on.

The reader and writer run in `run`; when the stream ends, breaks a framing rule or the
owner calls `close`, every request in flight fails at once with `ConnectionClosed`.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import os
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from codeward.protocol.errors import ErrorCode, RpcError
from codeward.protocol.framing import ContentLengthDecoder, FrameError, Framing, encode_frame
from codeward.protocol.messages import (
    Incoming,
    Notification,
    Request,
    Response,
    decode_message,
    encode,
    error_response,
)

log = logging.getLogger("codeward.lsp")

REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801
SERVER_CANCELLED = -32802

RequestHandler = Callable[[str, Incoming], Any | Awaitable[Any]]
NotificationHandler = Callable[[str, Incoming], None]


class ConnectionClosed(Exception):
    """The server's stream is gone (exit, EOF, garbage); `reason` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ResponseError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class RequestTimeout(Exception):
    """No answer within the request's timeout; `$/cancelRequest` was sent."""


class _Pending:
    __slots__ = ("error", "event", "result", "result_type")

    def __init__(self, result_type: Any) -> None:
        self.event = trio.Event()
        self.result_type = result_type
        self.result: Any = None
        self.error: Exception | None = None


class LspConnection:
    def __init__(
        self,
        name: str,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        max_message: int,
    ) -> None:
        self.name = name
        self._stdin = send_stream
        self._stdout = receive_stream
        self._on_request = on_request
        self._on_notification = on_notification
        self._decoder = ContentLengthDecoder(max_message=max_message, max_header=64 * 1024)
        self._outbox, self._outbox_receive = trio.open_memory_channel[bytes](math.inf)
        self._queued = 0  # frames handed to the writer task and not yet written whole
        # A pipe can take a frame at once, without a hop through the writer task.
        self._direct = send_stream if isinstance(send_stream, trio.lowlevel.FdStream) else None
        self._pending: dict[int, _Pending] = {}
        # Requests given up on (timeout, cancellation) that the server has not answered yet:
        # id -> (method, when given up). A server that honours `$/cancelRequest` answers soon.
        self.abandoned: dict[int, tuple[str, float]] = {}
        self._ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self.closed = trio.Event()
        self.close_reason = ""

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def oldest_abandoned(self) -> tuple[str, float] | None:
        """The method of the request given up on longest ago and still unanswered, and how
        many seconds ago that was; None when every abandoned request was answered."""
        if not self.abandoned:
            return None
        method, since = min(self.abandoned.values(), key=lambda item: item[1])
        return method, trio.current_time() - since

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and write until the stream ends or `close` is called."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._writer)
            nursery.start_soon(self._reader)
            task_status.started()
            await self.closed.wait()
            nursery.cancel_scope.cancel()

    def close(self, reason: str) -> None:
        """Fail every request in flight with `reason`; later requests fail at once."""
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        self._outbox.close()
        self.fail_pending(reason)

    def fail_pending(self, reason: str) -> None:
        """Fail every request in flight with `reason` (the server is about to be stopped)."""
        pending, self._pending = self._pending, {}
        self.abandoned.clear()
        for item in pending.values():
            item.error = ConnectionClosed(reason)
            item.event.set()

    def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification (in order with every other message); dropped once closed."""
        self._send(Notification(method=method, params=params))

    async def request(
        self,
        method: str,
        params: Any,
        *,
        timeout: float,
        result_type: Any = Any,
        cancel: bool = True,
        track: bool = True,
    ) -> Any:
        """Send a request and wait for its result, decoded as `result_type`.

        Raises ConnectionClosed, ResponseError or RequestTimeout; a timeout or the caller's
        cancellation sends `$/cancelRequest` (unless `cancel` is false) and, with `track`,
        records the request in `abandoned` until the server answers it.
        """
        if self.closed.is_set():
            raise ConnectionClosed(self.close_reason)
        request_id = next(self._ids)
        pending = _Pending(result_type)
        self._pending[request_id] = pending
        self._send(Request(id=request_id, method=method, params=params))
        try:
            with trio.move_on_after(timeout):
                await pending.event.wait()
        finally:
            if not pending.event.is_set():
                self._pending.pop(request_id, None)
                if track and not self.closed.is_set():
                    self.abandoned[request_id] = (method, trio.current_time())
                if cancel:
                    self.notify("$/cancelRequest", {"id": request_id})
        if not pending.event.is_set():
            raise RequestTimeout(f"{method} got no answer within {timeout:g} s")
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _send(self, message: Any) -> None:
        if self.closed.is_set():
            return
        frame = encode_frame(Framing.CONTENT_LENGTH, encode(message))
        if self._queued == 0 and self._direct is not None and self._direct.fileno() >= 0:
            # Nothing waits to be written: write now (synchronously, so no cancellation can
            # cut a frame); what the pipe cannot take yet goes to the writer, in order.
            try:
                written = os.write(self._direct.fileno(), frame)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self.close(f"its stdin closed ({exc.__class__.__name__})")
                return
            if written == len(frame):
                return
            frame = frame[written:]
        self._queued += 1
        self._outbox.send_nowait(frame)

    async def _writer(self) -> None:
        async for frame in self._outbox_receive:
            try:
                await self._stdin.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.close(f"its stdin closed ({exc.__class__.__name__})")
                return
            self._queued -= 1

    async def _reader(self) -> None:
        while True:
            try:
                chunk = await self._stdout.receive_some(1 << 16)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                chunk = b""
            if not chunk:
                self.close("its stdout closed")
                return
            try:
                frames = self._decoder.feed(bytes(chunk))
            except FrameError as exc:
                self.close(f"it wrote output that is not LSP ({exc})")
                return
            for frame in frames:
                try:
                    message = decode_message(frame)
                except RpcError as exc:
                    self.close(f"it wrote a message that is not JSON-RPC ({exc.message})")
                    return
                self._dispatch(message)

    def _dispatch(self, message: Incoming) -> None:
        if message.kind == "response":
            self._resolve(message)
        elif message.kind == "request":
            self._answer(message)
        else:
            try:
                self._on_notification(message.method, message)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                log.warning("%s: malformed %s notification: %s", self.name, message.method, exc)

    def _resolve(self, message: Incoming) -> None:
        if not isinstance(message.id, int):
            log.warning("%s: response to an unknown id %r", self.name, message.id)
            return
        self.abandoned.pop(message.id, None)
        pending = self._pending.pop(message.id, None)
        if pending is None:
            return  # cancelled or timed out already
        if message.error is not msgspec.UNSET:
            error = message.error
            pending.error = ResponseError(error.code, error.message, error.data or None)
        else:
            try:
                pending.result = msgspec.json.decode(
                    bytes(message.payload) or b"null", type=pending.result_type
                )
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                pending.error = ResponseError(
                    int(ErrorCode.INTERNAL_ERROR), f"the result does not have the LSP shape: {exc}"
                )
        pending.event.set()

    def _answer(self, message: Incoming) -> None:
        assert message.id is not None
        try:
            result = self._on_request(message.method, message)
        except ResponseError as exc:
            self._send(error_response(message.id, exc.code, exc.message))
            return
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            self._send(error_response(message.id, ErrorCode.INVALID_PARAMS, str(exc)))
            return
        if inspect.isawaitable(result):
            assert self._nursery is not None
            self._nursery.start_soon(self._answer_later, message.id, result)
        else:
            self._send(Response(id=message.id, result=result))

    async def _answer_later(self, request_id: int | str, result: Awaitable[Any]) -> None:
        try:
            value = await result
        except ResponseError as exc:
            self._send(error_response(request_id, exc.code, exc.message))
        else:
            self._send(Response(id=request_id, result=value))
