"""JSON-RPC 2.0 over a server's stdio with `Content-Length` framing: requests correlated by
id, the server's own requests answered, its notifications handed on.

The JSON-RPC state (ids, the pending replies, the server's requests in flight) is the
sans-IO `protocol.peer.Peer`; frames go out through an `Outbox` (straight into the pipe
when it takes them). The reader and writer run in `run`; when the stream ends, breaks a
framing rule or the owner calls `close`, every request in flight fails at once with
`ConnectionClosed`.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
import trio

from codeward.daemon.outbox import Outbox
from codeward.daemon.reads import receive_some
from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import FrameError, Framing
from codeward.protocol.messages import CODEC, Id, Incoming
from codeward.protocol.peer import (
    BatchReceived,
    Event,
    InvalidMessage,
    NotificationReceived,
    Peer,
    RequestReceived,
    ResponseReceived,
    UnmatchedResponse,
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


class Unawaited(Exception):
    """Not awaited: the answer before it was enough (`requests(..., enough=...)`), so the
    request was given up on (`$/cancelRequest`)."""


class _Pending:
    __slots__ = ("deadline", "error", "event", "result", "result_type", "timed_out")

    def __init__(self, result_type: Any, deadline: float) -> None:
        self.event = trio.Event()
        self.result_type = result_type
        self.deadline = deadline  # trio time after which the connection's timer gives up
        self.timed_out = False
        self.result: Any = None
        self.error: Exception | None = None

    @property
    def answered(self) -> bool:
        """Whether it has its result or error (or timed out)."""
        return self.event.is_set()

    def finish(self) -> None:
        """The result, error or timeout is in: wake the waiting task."""
        self.event.set()


class Relayed(_Pending):
    """A request no task waits for (`LspConnection.relay`): `done(self)` is called once,
    synchronously, in the task that finishes it (the reader's on the answer, the timer's
    on a timeout, the closer's when the server goes); its result stays raw JSON."""

    __slots__ = ("done", "finished", "id", "method", "sent")

    def __init__(self, method: str, done: Callable[[Relayed], None]) -> None:
        self.method = method
        self.id: Id = 0  # the server-side id, once sent
        self.result_type = msgspec.Raw
        self.sent = 0.0  # trio time, once sent
        self.deadline = math.inf  # (until sent)
        self.timed_out = False
        self.result: Any = None
        self.error: Exception | None = None
        self.done = done
        self.finished = False

    @property
    def answered(self) -> bool:
        return self.finished

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.done(self)


def _nothing() -> None:
    pass


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(result_type: Any) -> msgspec.json.Decoder[Any]:
    """The decoder of `result_type`, made once (a type such as `list[Location] | None` is
    built anew by each call that names it; equal ones share a decoder)."""
    decoder = _decoders.get(result_type)
    if decoder is None:
        decoder = _decoders[result_type] = msgspec.json.Decoder(result_type)
    return decoder


def _failure(method: str, pending: _Pending, timeout: float) -> Exception | None:
    """What an answered (or timed-out) request failed with; None for a result."""
    if pending.timed_out:
        return RequestTimeout(f"{method} got no answer within {timeout:g} s")
    return pending.error


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
        unread: bytes = b"",
        hold: Id | None = None,
    ) -> None:
        self.name = name
        self._stdout = receive_stream
        self._unread = unread  # what the server wrote before: read first
        self._hold = hold  # after the reply to this id, nothing more is read until release()
        self._released = trio.Event()
        self._on_request = on_request
        self._on_notification = on_notification
        self.peer: Peer[Incoming] = Peer(
            CODEC, Framing.CONTENT_LENGTH, max_message=max_message, max_header=64 * 1024
        )
        self._outbox = Outbox(send_stream, _nothing)
        self._nursery: trio.Nursery | None = None
        # The timer's sleep, until the earliest deadline of a request in flight: a request
        # needs no cancel scope of its own for its timeout.
        self._timer = trio.CancelScope()
        self.closed = trio.Event()
        self.close_reason = ""

    @property
    def in_flight(self) -> int:
        return len(self.peer.pending)

    @property
    def abandoned(self) -> dict[Id, tuple[str, float]]:
        """Requests given up on (timeout, cancellation) that the server has not answered yet:
        id -> (method, when given up). A server that honours `$/cancelRequest` answers soon."""
        return self.peer.abandoned

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
            nursery.start_soon(self._expire)
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

    def release(self) -> None:
        """Go on reading after the reply to the `hold` id."""
        self._released.set()

    def fail_pending(self, reason: str) -> None:
        """Fail every request in flight with `reason` (the server is about to be stopped)."""
        for item in self.peer.fail_all().values():
            item.error = ConnectionClosed(reason)
            item.finish()

    def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification (in order with every other message); dropped once closed."""
        if not self.closed.is_set():
            self._send(self.peer.notify(method, params))

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
        pending = self._pending(result_type, timeout)
        request_id, frame = self.peer.send_request(method, params, pending)
        self._send(frame)
        return await self._result(request_id, method, pending, timeout, cancel, track)

    async def adopt(
        self, method: str, request_id: int, *, timeout: float, result_type: Any = Any
    ) -> Any:
        """The result of request `request_id`, written to the server's stdin before this
        connection took the stream (the `initialize` a process started early was sent), as
        `request` waits for it; later requests are numbered after it."""
        if self.closed.is_set():
            raise ConnectionClosed(self.close_reason)
        pending = self._pending(result_type, timeout)
        self.peer.expect(request_id, pending)
        return await self._result(request_id, method, pending, timeout, True, True)

    async def _result(
        self,
        request_id: Id,
        method: str,
        pending: _Pending,
        timeout: float,
        cancel: bool,
        track: bool,
    ) -> Any:
        try:
            await pending.event.wait()
        finally:
            self._give_up(request_id, method, pending, cancel=cancel, track=track)
        failure = _failure(method, pending, timeout)
        if failure is not None:
            raise failure
        return pending.result

    def relay(
        self, method: str, params: Any, *, timeout: float, done: Callable[[Relayed], None]
    ) -> Relayed | None:
        """Send a request that no task waits for: `done` gets it once it is answered (raw
        JSON), failed or timed out (see `Relayed`); None, and nothing sent, once closed.
        The caller gives it up with `give_up` (on a timeout too: `$/cancelRequest`)."""
        if self.closed.is_set():
            return None
        relayed = Relayed(method, done)
        relayed.id, frame = self.peer.send_request(method, params, relayed)
        self._send(frame)  # (first: nothing below is on the way to the server)
        relayed.sent = trio.current_time()
        relayed.deadline = relayed.sent + timeout
        if relayed.deadline < self._timer.deadline:
            self._timer.deadline = relayed.deadline
        return relayed

    def give_up(self, relayed: Relayed) -> None:
        """A relayed request cancelled by its caller or timed out: `$/cancelRequest`, its
        late answer expected in `abandoned`; `done` is not called for it any more."""
        self._give_up(relayed.id, relayed.method, relayed)
        relayed.finished = True

    async def requests(
        self,
        calls: Sequence[tuple[str, Any, Any]],
        *,
        timeout: float,
        enough: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        """Several requests (method, params, result type) sent at once, in one write, and
        their results awaited together: each result, or the exception it failed with
        (ConnectionClosed, ResponseError, RequestTimeout), in order. A timeout or the
        caller's cancellation sends `$/cancelRequest` for each one still unanswered. When
        `enough(result)` of the first request's result is true, the others still unanswered
        are not awaited: they are given up on the same way and fail with `Unawaited`."""
        if self.closed.is_set():
            raise ConnectionClosed(self.close_reason)
        asked: list[tuple[Id, str, _Pending]] = []
        frames: list[bytes] = []
        for method, params, result_type in calls:
            pending = self._pending(result_type, timeout)
            request_id, frame = self.peer.send_request(method, params, pending)
            asked.append((request_id, method, pending))
            frames.append(frame)
        self._send(b"".join(frames))
        try:
            for index, (_, _, pending) in enumerate(asked):
                if not pending.event.is_set():  # (one answered with the last: no wait)
                    await pending.event.wait()
                answered = not pending.timed_out and pending.error is None
                if index == 0 and answered and enough is not None and enough(pending.result):
                    for _, method, later in asked[1:]:
                        if not later.event.is_set():
                            later.error = Unawaited(f"{method} was not awaited")
                    break
        finally:
            for request_id, method, pending in asked:
                self._give_up(request_id, method, pending)
        return [
            _failure(method, pending, timeout) or pending.result for _, method, pending in asked
        ]

    def _give_up(
        self,
        request_id: Id,
        method: str,
        pending: _Pending,
        *,
        cancel: bool = True,
        track: bool = True,
    ) -> None:
        """For a request that timed out or whose caller left: `$/cancelRequest` (unless
        `cancel` is false) and, with `track`, its late answer expected in `abandoned`."""
        if pending.answered and not pending.timed_out:
            return  # answered (a request given up on unawaited has no event set)
        closed = self.closed.is_set()
        note = (method, trio.current_time())
        frame = self.peer.abandon(request_id, note, cancel=cancel, track=track and not closed)
        if frame is not None and not closed:
            self._send(frame)

    def _pending(self, result_type: Any, timeout: float) -> _Pending:
        """A new request's state; the timer wakes by its deadline."""
        pending = _Pending(result_type, trio.current_time() + timeout)
        if pending.deadline < self._timer.deadline:
            self._timer.deadline = pending.deadline
        return pending

    async def _expire(self) -> None:
        """The timer: sleep until the earliest deadline of the requests in flight, then wake
        each request past its deadline (it gives up: `$/cancelRequest`, RequestTimeout)."""
        while True:
            waiting = self.peer.pending.values()
            deadlines = [p.deadline for p in waiting if not p.answered]
            self._timer = trio.CancelScope(deadline=min(deadlines, default=math.inf))
            with self._timer:
                await trio.sleep_forever()
            now = trio.current_time()
            for pending in list(self.peer.pending.values()):  # (a relayed one's done may
                if pending.deadline <= now and not pending.answered:
                    pending.timed_out = True
                    pending.finish()

    def _send(self, frame: bytes) -> None:
        """Write `frame` now if the pipe takes it, else after every frame queued before it."""
        outbox = self._outbox
        outbox.put(frame)
        if outbox.closed:
            self.close(f"its stdin closed ({outbox.error or 'closed'})")

    async def _writer(self) -> None:
        await self._outbox.run()
        self.close(f"its stdin closed ({self._outbox.error or 'closed'})")

    async def _reader(self) -> None:
        chunk, self._unread = self._unread, b""
        while True:
            if not chunk:
                try:
                    chunk = await receive_some(self._stdout)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    chunk = b""
                if not chunk:
                    self.close("its stdout closed")
                    return
            try:
                events = self.peer.receive_data(chunk)
            except FrameError as exc:
                self.close(f"it wrote output that is not LSP ({exc})")
                return
            chunk = b""
            hold = self._hold
            for event in events:
                if not self._dispatch(event):
                    return
                if hold is not None and isinstance(event, ResponseReceived) and event.id == hold:
                    await self._released.wait()  # (the owner acts on the reply first)

    def _dispatch(self, event: Event) -> bool:
        """Act on one event from the server; False when it broke the protocol (closed)."""
        if isinstance(event, ResponseReceived):
            self._resolve(event.context, event.message)
        elif isinstance(event, NotificationReceived):
            message: Incoming = event.message
            try:
                self._on_notification(message.method, message)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                log.warning("%s: malformed %s notification: %s", self.name, message.method, exc)
        elif isinstance(event, RequestReceived):
            self._answer(event.message)
        elif isinstance(event, UnmatchedResponse):
            log.warning("%s: response to an unknown id %r", self.name, event.id)
        elif isinstance(event, InvalidMessage):
            if event.id is None:
                self.close(f"it wrote a message that is not JSON-RPC ({event.error.message})")
                return False
            error = event.error  # a request id already in flight: refused, the first goes on
            self._send(CODEC.error(event.id, error.code, error.message))
        elif isinstance(event, BatchReceived):
            return all(self._dispatch(item) for item in event.events)
        # late replies to abandoned requests and cancellations of the server's requests
        # (answered at once) need nothing
        return True

    def _resolve(self, pending: _Pending, message: Incoming) -> None:
        if message.error is not msgspec.UNSET:
            error = message.error
            pending.error = ResponseError(error.code, error.message, error.data or None)
        elif pending.result_type is msgspec.Raw and message.payload:
            pending.result = message.payload  # as it came (a large one unparsed: `messages`)
        else:
            try:  # straight from the frame's bytes (a Raw is a view: no copy)
                pending.result = _decoder(pending.result_type).decode(message.payload or b"null")
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                pending.error = ResponseError(
                    int(ErrorCode.INTERNAL_ERROR), f"the result does not have the LSP shape: {exc}"
                )
        pending.finish()

    def _answer(self, message: Incoming) -> None:
        request_id = message.id
        assert request_id is not None
        try:
            result = self._on_request(message.method, message)
        except ResponseError as exc:
            self._reply_error(request_id, exc.code, exc.message)
            return
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            self._reply_error(request_id, ErrorCode.INVALID_PARAMS, str(exc))
            return
        if inspect.isawaitable(result):
            assert self._nursery is not None
            self._nursery.start_soon(self._answer_later, request_id, result)
        elif not self.closed.is_set():
            self._send(self.peer.respond(request_id, result))

    def _reply_error(self, request_id: Id, code: int, message: str) -> None:
        frame = self.peer.respond_error(request_id, code, message)
        if not self.closed.is_set():
            self._send(frame)

    async def _answer_later(self, request_id: Id, result: Awaitable[Any]) -> None:
        try:
            value = await result
        except ResponseError as exc:
            self._reply_error(request_id, exc.code, exc.message)
        else:
            frame = self.peer.respond(request_id, value)
            if not self.closed.is_set():
                self._send(frame)
