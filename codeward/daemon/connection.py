"""One client connection: frames in, concurrent requests, one writer, cancellation.

The reader task decodes frames (framing chosen from the first byte) and starts each request
in the connection's own nursery. Replies go through one writer task. A client that
disconnects cancels its in-flight requests, except file-changing tools, which finish
shielded and whose replies are dropped.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from codeward.daemon.config import PolicyConfig
from codeward.daemon.mcp import McpDialect
from codeward.protocol import mcp
from codeward.protocol.errors import ErrorCode, ErrorKind, RpcError, ToolError, find_tool_error
from codeward.protocol.framing import (
    FrameDecoder,
    FrameError,
    Framing,
    detect_framing,
    encode_frame,
    make_decoder,
)
from codeward.protocol.messages import (
    Id,
    Incoming,
    Notification,
    Request,
    Response,
    decode_batch,
    encode,
    error_response,
)
from codeward.protocol.methods import ClientCapabilities, ConfirmParams, ConfirmResult

if TYPE_CHECKING:
    from codeward.daemon.server import Daemon
    from codeward.daemon.session import Session

log = logging.getLogger(__name__)

READ_SIZE = 65536
Handler = Callable[["Connection", Incoming], Awaitable[Any]]
# Requests that change the connection's state: they take effect before any later one starts.
STATEFUL_METHODS = frozenset({"initialize", "session/open", "session/close"})


class Turn:
    """A request's place in its connection's order (taken in arrival order, at dispatch).

    A stateful request starts once every earlier request has started (each took the
    connection's state it needs at its start, before its first checkpoint) and the
    previous stateful request is done; any other request starts once that one is done."""

    def __init__(self, after: list[trio.Event], stateful: bool) -> None:
        self.after = after
        self.started = None if stateful else trio.Event()
        self.done = trio.Event() if stateful else None

    async def wait(self) -> None:
        for event in self.after:
            await event.wait()

    def release(self) -> None:
        """Let later requests go (when started; a stateful one when done or failed)."""
        for event in (self.started, self.done):
            if event is not None:
                event.set()


class Connection:
    def __init__(self, daemon: Daemon, stream: trio.abc.Stream, conn_id: int) -> None:
        self.daemon = daemon
        self.stream = stream
        self.id = conn_id
        self.framing: Framing | None = None
        self.capabilities = ClientCapabilities()
        self.session: Session | None = None
        self.policy: PolicyConfig | None = None  # the narrowing this client asked for
        self.mcp: McpDialect | None = None  # the MCP dialect, when the first line chose it
        self._first_frame = True
        self._decoder: FrameDecoder | None = None
        self._inflight: dict[Id, trio.CancelScope] = {}
        self._barrier: list[trio.Event] = []  # the last stateful request's end, if any
        self._since_barrier: list[trio.Event] = []  # starts of the requests after it
        self._pending: dict[Id, trio.MemorySendChannel[Response]] = {}
        self._next_out_id = 0
        self._send, self._receive = trio.open_memory_channel[bytes](math.inf)
        self._queued = 0  # frames handed to the writer task and not yet written whole
        # A socket can take a reply at once, without a hop through the writer task.
        self._direct = stream.socket if isinstance(stream, trio.SocketStream) else None
        self.closed = False
        self.reader_done = trio.Event()  # the client went away (or broke framing)
        self._flushed = trio.Event()  # set while nothing waits to be written
        self._flushed.set()
        self.done = trio.Event()  # everything of this connection has finished

    # ---- life ----------------------------------------------------------------------------

    async def serve(self) -> None:
        try:
            async with trio.open_nursery() as writer_nursery:
                writer_nursery.start_soon(self._writer)
                try:
                    async with trio.open_nursery() as requests:
                        await self._read_loop(requests)
                        self.reader_done.set()
                        requests.cancel_scope.cancel()  # disconnect: cancel in-flight work
                finally:
                    self.closed = True
                    self._send.close()
        finally:
            self.unbind()
            for channel in self._pending.values():
                channel.close()
            await trio.aclose_forcefully(self.stream)
            self.done.set()

    async def _read_loop(self, requests: trio.Nursery) -> None:
        limits = self.daemon.config.daemon
        while True:
            try:
                data = await self.stream.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            try:
                if self._decoder is None:
                    data = data.lstrip()
                    if not data:
                        continue
                    self.framing = detect_framing(data)
                    self._decoder = make_decoder(
                        self.framing, limits.max_message_bytes, limits.max_header_bytes
                    )
                frames = self._decoder.feed(data)
            except FrameError as exc:
                self._fatal(str(exc))
                return
            for frame in frames:
                self._dispatch_frame(frame, requests)

    def _fatal(self, reason: str) -> None:
        """A framing error: say so where possible, then close."""
        if self.framing is None:
            self.framing = Framing.NDJSON
        response = error_response(None, ErrorCode.INVALID_REQUEST, f"{reason} Closing.")
        self._queue(encode(response))
        log.info("connection %d: %s", self.id, reason)

    async def _writer(self) -> None:
        try:
            async for data in self._receive:
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self.closed = True
                    return
                self._queued -= 1
                if self._receive.statistics().current_buffer_used == 0:
                    self._flushed.set()
        finally:
            self._flushed.set()

    async def flush(self) -> None:
        """Wait until every queued reply has been written (or the client is gone)."""
        await self._flushed.wait()

    def send_body(self, body: bytes) -> None:
        """Queue one encoded message (the MCP dialect's replies and notifications)."""
        self._queue(body)

    def _queue(self, body: bytes) -> None:
        if self.closed or self.framing is None:
            return
        frame = encode_frame(self.framing, body)
        if self._queued == 0 and self._direct is not None and self._direct.fileno() >= 0:
            # Nothing waits to be written: write now (synchronously, so no cancellation can
            # cut a frame); what the socket cannot take yet goes to the writer, in order.
            try:
                written = os.write(self._direct.fileno(), frame)
            except BlockingIOError:
                written = 0
            except OSError:
                self.closed = True
                return
            if written == len(frame):
                return
            frame = frame[written:]
        try:
            self._send.send_nowait(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return
        self._queued += 1
        if self._flushed.is_set():
            self._flushed = trio.Event()

    # ---- dispatch ------------------------------------------------------------------------

    def _dispatch_frame(self, frame: bytes, requests: trio.Nursery) -> None:
        if self._first_frame:
            self._first_frame = False
            if self.framing is Framing.NDJSON and mcp.is_opening(frame):
                self.mcp = McpDialect(self)
        if self.mcp is not None:
            self.mcp.receive(frame, requests)
            return
        try:
            items, is_batch = decode_batch(frame)
        except RpcError as exc:
            self._queue(encode(error_response(None, exc.code, exc.message)))
            return
        if is_batch:  # each request takes its turn now, in arrival order
            turns = [
                self._turn(i) if isinstance(i, Incoming) and i.kind == "request" else None
                for i in items
            ]
            requests.start_soon(self._run_batch, items, turns)
            return
        item = items[0]
        if isinstance(item, RpcError):
            self._queue(encode(error_response(None, item.code, item.message)))
        elif item.kind == "request":
            if item.id in self._inflight:
                self._queue(encode(_duplicate_id(item.id)))
                return
            scope = trio.CancelScope()
            self._inflight[item.id] = scope  # type: ignore[index]
            requests.start_soon(self._reply_one, item, scope, self._turn(item))
        elif item.kind == "notification":
            self._notification(item)
        else:
            self._response(item)

    def _turn(self, item: Incoming) -> Turn:
        """The next place in this connection's order (see `Turn`)."""
        if item.method not in STATEFUL_METHODS:
            turn = Turn(self._barrier, stateful=False)
            assert turn.started is not None
            if len(self._since_barrier) >= 64:  # a long run of plain requests: forget started ones
                self._since_barrier = [e for e in self._since_barrier if not e.is_set()]
            self._since_barrier.append(turn.started)
            return turn
        turn = Turn(self._barrier + self._since_barrier, stateful=True)
        assert turn.done is not None
        self._barrier, self._since_barrier = [turn.done], []
        return turn

    async def _reply_one(self, item: Incoming, scope: trio.CancelScope, turn: Turn) -> None:
        response = await self._handle_request(item, scope, turn)
        self._queue(encode(response))

    async def _run_batch(self, items: list[Incoming | RpcError], turns: list[Turn | None]) -> None:
        responses: list[Response | None] = [None] * len(items)

        async def run(index: int, item: Incoming, scope: trio.CancelScope, turn: Turn) -> None:
            responses[index] = await self._handle_request(item, scope, turn)

        async with trio.open_nursery() as nursery:
            for index, item in enumerate(items):
                if isinstance(item, RpcError):
                    responses[index] = error_response(None, item.code, item.message)
                elif item.kind == "request":
                    turn = turns[index]
                    assert turn is not None
                    if item.id in self._inflight:
                        responses[index] = _duplicate_id(item.id)
                        turn.release()
                        continue
                    scope = trio.CancelScope()
                    self._inflight[item.id] = scope  # type: ignore[index]
                    nursery.start_soon(run, index, item, scope, turn)
                elif item.kind == "notification":
                    self._notification(item)
                else:
                    self._response(item)
        replies = [r for r in responses if r is not None]
        if replies:
            self._queue(encode(replies))

    async def _handle_request(
        self, item: Incoming, scope: trio.CancelScope, turn: Turn
    ) -> Response:
        from codeward.daemon.handlers import HANDLERS

        msg_id = item.id
        assert msg_id is not None
        try:
            handler = HANDLERS.get(item.method)
            if handler is None:
                return error_response(
                    msg_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {item.method}."
                )
            with scope:
                await turn.wait()
                if turn.started is not None:  # the handler reads its state before it yields
                    turn.started.set()
                result = await handler(self, item)
                return Response(id=msg_id, result=result)
            return error_response(
                msg_id, ErrorCode.REQUEST_CANCELLED, "Request cancelled.", {"kind": "cancelled"}
            )
        except ToolError as exc:
            return error_response(msg_id, ErrorCode.TOOL_ERROR, exc.message, exc.to_data())
        except ExceptionGroup as group:  # a nursery's failure: its tool error, if it has one
            exc = find_tool_error(group)
            if exc is None:
                log.exception("internal error in %s", item.method)
                return error_response(
                    msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
                )
            return error_response(msg_id, ErrorCode.TOOL_ERROR, exc.message, exc.to_data())
        except RpcError as exc:
            return error_response(msg_id, exc.code, exc.message, exc.data or msgspec.UNSET)
        except Exception:
            log.exception("internal error in %s", item.method)
            return error_response(
                msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
            )
        finally:
            self._inflight.pop(msg_id, None)
            turn.release()

    def _notification(self, item: Incoming) -> None:
        if item.method in ("$/cancelRequest", "cancelRequest"):
            try:
                target = item.decode(dict[str, Any]).get("id")
            except (msgspec.DecodeError, msgspec.ValidationError):
                return
            scope = self._inflight.get(target) if isinstance(target, int | str) else None
            if scope is not None:
                scope.cancel()
        # other notifications (e.g. "initialized", "exit") need no answer

    def _response(self, item: Incoming) -> None:
        channel = self._pending.pop(item.id, None) if item.id is not None else None
        if channel is None:
            return
        response = Response(id=item.id, error=item.error)
        if item.error is msgspec.UNSET:
            try:
                response = Response(id=item.id, result=msgspec.json.decode(bytes(item.payload)))
            except msgspec.DecodeError:
                response = error_response(item.id, ErrorCode.PARSE_ERROR, "bad result")
        channel.send_nowait(response)

    # ---- daemon-to-client ----------------------------------------------------------------

    async def request_client(self, method: str, params: Any, timeout: float) -> Response | None:
        """Send a request to the client; its response, or None on timeout or disconnect."""
        self._next_out_id += 1
        out_id = f"codeward-{self._next_out_id}"
        send, receive = trio.open_memory_channel[Response](1)
        self._pending[out_id] = send
        try:
            self._queue(encode(Request(id=out_id, method=method, params=params)))
            with trio.move_on_after(timeout):
                async for response in receive:
                    return response
            return None
        finally:
            self._pending.pop(out_id, None)

    def notify_client(self, method: str, params: Any) -> None:
        self._queue(encode(Notification(method=method, params=params)))

    # ---- Caller protocol for tools -------------------------------------------------------

    @property
    def can_confirm(self) -> bool:
        return self.capabilities.confirm and not self.closed

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool:
        if not self.can_confirm:
            return False
        timeout = (self.policy or self.daemon.config.policy).confirm_timeout
        params = ConfirmParams(session_id=session_id, tool=tool, summary=summary, argv=argv)
        response = await self.request_client("client/confirm", params, timeout)
        if response is None or not response.ok:
            return False
        try:
            return msgspec.convert(response.result, ConfirmResult).approved is True
        except msgspec.ValidationError:
            return False

    # ---- session binding -----------------------------------------------------------------

    def bind(self, session: Session) -> None:
        self.unbind()
        self.session = session
        listener = self._forward_progress if self.capabilities.progress else None
        session.attach(self.id, listener)

    def unbind(self) -> None:
        if self.session is not None:
            self.session.detach(self.id)
            self.session = None

    def _forward_progress(self, params: dict[str, Any]) -> None:
        self.notify_client("$/progress", params)


def _duplicate_id(msg_id: Id | None) -> Response:
    return error_response(
        msg_id,
        ErrorCode.INVALID_REQUEST,
        "Invalid request: this id is already in flight on this connection; use a new id.",
    )


def require_session(conn: Connection) -> Session:
    if conn.session is None or not conn.session.alive:
        raise ToolError(
            ErrorKind.NO_SESSION, "This connection has no session; call session/open first."
        )
    return conn.session
