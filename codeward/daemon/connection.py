"""One client connection: frames in, concurrent requests, one writer, cancellation.

The reader task feeds the bytes it reads to the connection's sans-IO JSON-RPC `Peer` (framing
chosen from the first byte; ids in flight, cancellation, batches) and starts each request
in the connection's own nursery (`requests.RequestRunner`, its base, runs them in their
`turns.Turn`); it stops reading while too many of the client's requests run or too many
of its reply bytes wait (`backpressure`). Replies go through the connection's outbox and its
one writer task. The first frame may open a dialect (`dialects`) and pass stdio
(`handoff`).

When the client stops sending: if it only half-closed (`shutdown(SHUT_WR)`), every request
runs and is answered, then the connection closes; if it is gone, its queued replies are
dropped at once and its in-flight reads cancelled, while requests that change files (git
writes, edits) run to completion, unanswered.
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from codeward.daemon.config import PolicyConfig
from codeward.daemon.dialects import open_dialect
from codeward.daemon.dispatch import Dispatch, Host
from codeward.daemon.handoff import PASSED_MAX, close_all, end_lifeline, take_stdio, watch_pump
from codeward.daemon.hangup import hung_up, wait_hung_up
from codeward.daemon.mcp import McpDialect
from codeward.daemon.outbox import Outbox
from codeward.daemon.reads import receive_some, receive_with_fds
from codeward.daemon.requests import RequestRunner
from codeward.daemon.turns import Turns
from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import FrameError, Framing, Parts
from codeward.protocol.messages import CODEC, ErrorObject, Incoming, Response
from codeward.protocol.methods import ClientCapabilities, ConfirmParams, ConfirmResult
from codeward.protocol.peer import (
    BatchReceived,
    CancelReceived,
    Event,
    InvalidMessage,
    Peer,
    RequestReceived,
    ResponseReceived,
)

if TYPE_CHECKING:
    from codeward.daemon.editor.dialect import EditorDialect
    from codeward.daemon.session import Session

log = logging.getLogger(__name__)

FAREWELL_SECONDS = 1.0  # how long a last error frame may take to reach a closing client


class Connection(RequestRunner):
    """One client's connection (its requests run by `RequestRunner`, its base)."""

    def __init__(self, daemon: Host, stream: trio.abc.Stream, conn_id: int) -> None:
        self.daemon = daemon
        self.stream = stream
        self.id = conn_id
        self._dispatch: Dispatch[Connection] = daemon.dispatch
        self._limits = daemon.config.daemon  # this connection's (a reload: the next ones')
        self.peer = Peer(
            CODEC,
            id_prefix="codeward-",
            max_message=self._limits.max_message_bytes,
            max_header=self._limits.max_header_bytes,
        )
        self.capabilities = ClientCapabilities()
        self.session: Session | None = None
        self.policy: PolicyConfig | None = None  # the narrowing this client asked for
        self.mcp: McpDialect | None = None  # the MCP dialect, when the first line chose it
        self.editor: EditorDialect | None = None  # the LSP dialect (`codeward lsp`)
        self._exited = False  # the editor sent `exit`: read no more
        self._first_frame = True
        # The peer's requests in flight carry (cancel scope, message) handles: a disconnect
        # spares the ones that change files.
        self._running = 0  # requests whose handler runs (or waits for its turn)
        self._turns = Turns()
        self.outbox = Outbox(stream, self._progressed)
        self._socket = stream.socket if isinstance(stream, trio.SocketStream) else None
        self._incoming: trio.abc.ReceiveStream = stream  # what the reader reads
        self._passed: list[int] = []  # descriptors the first message carried, until used
        self._passed_too_many = False  # more than `_passed` came (the kernel closed them)
        self._unread = b""  # read by the pump before it handed stdin over: read it first
        self._lifeline: trio.abc.Stream | None = None  # the socket, once stdio is handed over
        self._ended = b""  # written to the lifeline when the host ended the session
        self._end = ""  # why the reader stopped
        self._nursery: trio.Nursery | None = None
        self._tasks = 0  # request, batch and MCP call tasks not yet finished
        self._batch_items = 0  # requests of batches in flight
        self._batch_bytes = 0  # replies that running batches hold until they are complete
        self._progress: trio.Event | None = None  # a task ended, replies drained, or closing
        self._life = trio.CancelScope()  # cancelled to close the connection at once
        self._reader = trio.CancelScope()  # its deadline: the first message's timeout
        self.paused = False  # backpressure: the reader waits for room
        self.gone = False  # the client closed its socket: nothing reaches it any more
        self.stopping = False  # the daemon is stopping: requests are refused
        self.closing = False  # close_with() was called: the connection is on its way out
        self.last_active = trio.current_time()  # the last message read or request finished
        self.reader_done = trio.Event()  # the client stopped sending (or broke framing)
        self.done = trio.Event()  # everything of this connection has finished

    # ---- life ----------------------------------------------------------------------------

    @property
    def framing(self) -> Framing | None:
        return self.peer.framing

    @property
    def closed(self) -> bool:
        """Whether nothing more can be written to the client."""
        return self.outbox.closed

    @property
    def running(self) -> int:
        """How many requests' handlers run (or wait for their turn)."""
        return self._running

    @property
    def busy(self) -> bool:
        """Whether a request of this connection is in flight."""
        return self._tasks > 0

    async def serve(self) -> None:
        """Serve the client until it or the daemon closes the connection. A failure of any
        of its tasks (a bug: bad input is answered, never raised) is contained here: it is
        logged and closes this connection, never the daemon's other connections."""
        try:
            with self._life:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._writer)
                    async with trio.open_nursery() as requests:
                        await self._read(requests, nursery)
                        if self.editor is not None:  # (its relayed requests: no tasks)
                            await self.editor.relays.drained()
                    await self.outbox.flush()  # the last replies, to a client that still reads
                    nursery.cancel_scope.cancel()
        except* Exception:
            log.exception("connection %d failed; closing it (the daemon serves on)", self.id)
        finally:
            self.reader_done.set()
            self.outbox.close()
            self.unbind()
            for channel in self.peer.fail_all().values():
                channel.close()
            self._passed = close_all(self._passed)
            # A stopping daemon cancels this task: unshielded, the first close would raise
            # Cancelled and leave the pump's socket open (the pump would wait on it forever).
            with trio.CancelScope(shield=True):
                if self.editor is not None:
                    await self.editor.release()
                await trio.aclose_forcefully(self.stream)
                if self._lifeline is not None and self._socket is not None:
                    ended = self._end == "eof" and not self.stopping
                    fd = self._socket.fileno()
                    await end_lifeline(self._lifeline, fd, self._ended if ended else None)
            self.done.set()

    async def _read(self, requests: trio.Nursery, nursery: trio.Nursery) -> None:
        """Read until the client stops sending; then settle what its requests in flight do."""
        limits = self._limits
        self._reader.deadline = trio.current_time() + limits.first_message_timeout
        end = "timeout"
        with self._reader:
            end = await self._read_loop(requests)
        if self._exited:
            end = "eof"
        self._end = end
        self.reader_done.set()
        if self.editor is not None:
            self.editor.stop()
        if end == "timeout":
            self.close_with(
                f"No message within {limits.first_message_timeout:g} s of connecting; "
                "closing. Send a request right after you connect."
            )
        elif end == "framing":
            self._cancel_reads()  # the error reply still goes out
        elif end == "eof" and self._socket is not None and not hung_up(self._socket.fileno()):
            # Half-closed: the client still reads. Answer everything, then close.
            nursery.start_soon(self._watch_hang_up, self._socket.fileno())
        else:
            self._client_gone()

    async def _read_loop(self, requests: trio.Nursery) -> str:
        """Read and dispatch frames; why it stopped: "eof", "reset" or "framing"."""
        while True:
            if self._full():
                await self._wait_for_room()
            try:
                if self._unread:  # what the pump read from the handed-over stdin
                    data, self._unread = self._unread, b""
                elif self._first_frame and self._socket is not None:
                    data = await self._receive_first(self._socket)
                else:
                    data = await receive_some(self._incoming)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return "reset"
            if not data:
                return "eof"
            try:
                frames = self.peer.frames(data)
            except FrameError as exc:
                self._fatal(str(exc))
                return "framing"
            if frames and self._first_frame:
                self._reader.deadline = math.inf  # the first message arrived
            for frame in frames:
                dialect = self.mcp or self.editor
                if dialect is not None and not self._passed and not self._full():
                    dialect.receive(frame, requests)  # (the common case, with no coroutine)
                else:
                    self.last_active = trio.current_time()  # (before any wait)
                    await self._dispatch_frame(frame, requests)
            self.last_active = trio.current_time()  # (after: not on a relayed request's way)

    async def _receive_first(self, sock: trio.socket.SocketType) -> bytes:
        """Bytes before the first message is whole, with the descriptors they carry (the
        stdin and stdout of `codeward mcp`'s handoff)."""
        data, fds, truncated = await receive_with_fds(sock, PASSED_MAX)
        self._passed += fds
        self._passed_too_many |= truncated
        return data

    def hand_over(self, ack: bytes, ended: bytes, unread: bytes = b"") -> bool:
        """Serve the rest of this connection on the stdin and stdout (pipes or sockets) that
        its first message passed, the MCP handoff of `codeward mcp`: `ack` goes on the
        socket, which then stays open only to tell the pump that the session ended
        (`ended` when the host ended it) and to show, when it hangs up, that the pump is
        gone; `unread`, what the pump read from stdin already, is read before stdin.
        False, and nothing changes, unless two such descriptors came."""
        fds, self._passed = self._passed, []
        if self._socket is None or self._passed_too_many:
            close_all(fds)
            return False
        stdio = take_stdio(self._socket, fds, self.peer.frame(ack))
        if stdio is None:
            return False
        stdin, stdout = stdio
        self._lifeline, self._ended = self.stream, self.peer.frame(ended)
        self.stream, self._incoming = trio.StapledStream(stdout, stdin), stdin
        self._unread = unread
        self.outbox.retarget(stdout)
        if self._nursery is not None:
            self._nursery.start_soon(watch_pump, self._socket.fileno(), stdin)
        return True

    def finish_reading(self, ended: bytes) -> None:
        """The editor sent `exit`: read no more, answer what runs, then close (`ended`: the
        last line a handed-over session's pump gets)."""
        self._exited = True
        if self._lifeline is not None:
            self._ended = self.peer.frame(ended)
        self._reader.cancel()

    def _fatal(self, reason: str) -> None:
        """A framing error: say so where possible, then close."""
        self.outbox.put(
            self.peer.respond_error(None, ErrorCode.INVALID_REQUEST, f"{reason} Closing.")
        )
        log.info("connection %d: %s", self.id, reason)

    def close_with(self, message: str) -> None:
        """Close now (nothing may be in flight), with a last JSON-RPC error saying why."""
        if not self.outbox.queued_bytes:  # else the stream may be mid-frame: just close
            self.outbox.put(self.peer.respond_error(None, ErrorCode.CONNECTION_CLOSED, message))
        log.info("connection %d: %s", self.id, message)
        self.closing = True
        self._life.cancel()

    async def _writer(self) -> None:
        await self.outbox.run()
        self._client_gone()  # a write failed: the client reads nothing any more

    async def _watch_hang_up(self, fd: int) -> None:
        await wait_hung_up(fd)
        self._client_gone()
        self._progressed()

    def _client_gone(self) -> None:
        """The client closed its socket: drop its replies, cancel its reads; writes go on."""
        if self.gone:
            return
        self.gone = True
        self.outbox.close()
        for channel in self.peer.pending.values():
            channel.close()  # no answer to a confirmation can come any more
        self._cancel_reads()

    def _cancel_reads(self) -> None:
        outlives_client = self._dispatch.outlives_client
        for scope, item in list(self.peer.inbound.values()):
            if not outlives_client(item):
                scope.cancel()
        if self.mcp is not None:
            self.mcp.cancel(writes=False)
        if self.editor is not None:
            self.editor.cancel(writes=False)

    async def wind_down(self, grace: float) -> None:
        """The daemon is stopping: refuse new requests, cancel reads in flight, give writes
        `grace` seconds to finish, and answer every request."""
        self.stopping = True
        self._progressed()  # a paused reader goes on, to refuse what it reads
        self._cancel_reads()
        with trio.move_on_after(grace):
            await self._wait_until(lambda: self._tasks == 0)
        for scope, _item in list(self.peer.inbound.values()):
            scope.cancel()  # a write's own shielded step still completes
        if self.mcp is not None:
            self.mcp.cancel(writes=True)
        if self.editor is not None:
            self.editor.cancel(writes=True)
        with trio.move_on_after(grace):
            await self._wait_until(lambda: self._tasks == 0)
        with trio.move_on_after(FAREWELL_SECONDS):
            await self.outbox.flush()

    async def flush(self) -> None:
        """Wait until every queued reply has been written (or the client is gone)."""
        await self.outbox.flush()

    def send_body(self, body: bytes | Parts) -> None:
        """Queue one encoded message (the dialects' replies and notifications), whole or in
        parts (`LspMachine.answer`: written as they are, not copied into a frame)."""
        self._queue(body)

    def _queue(self, body: bytes | Parts) -> None:
        peer = self.peer
        if peer.framing is not None:
            self.outbox.put(peer.frame_parts(body) if isinstance(body, list) else peer.frame(body))

    def _queue_frame(self, frame: bytes) -> None:
        if self.peer.framing is not None:
            self.outbox.put(frame)

    # ---- dispatch ------------------------------------------------------------------------

    async def _dispatch_frame(self, frame: bytes, requests: trio.Nursery) -> None:
        if self._first_frame:
            self._first_frame = False
            self.mcp, self.editor = await open_dialect(self, self.peer.framing, frame)
        dialect = self.mcp or self.editor
        if dialect is not None:
            if self._full():
                await self._wait_for_room()
            dialect.receive(frame, requests)
            if self._passed:  # what the first line carried and no handoff took
                self._passed = close_all(self._passed)
            return
        if self._passed:
            self._passed = close_all(self._passed)
        event = self.peer.receive_frame(frame)
        if isinstance(event, RequestReceived):
            await self._request(event.message, requests)
        elif isinstance(event, BatchReceived):
            work = [self._attach(e) for e in event.events]
            if self._full():
                await self._wait_for_room()
            stateful = self._dispatch.stateful
            turns = [  # each request takes its turn now, in arrival order
                self._turns.take(e.message.method in stateful)
                if isinstance(e, RequestReceived)
                else None
                for e in event.events
            ]
            self._tasks += 1
            requests.start_soon(self._run_batch, work, turns)
        else:
            self._other(event)

    def _other(self, event: Event) -> None:
        """Anything but a request: errors answered, cancellations and replies applied."""
        if isinstance(event, InvalidMessage):
            error = event.error
            self._queue(CODEC.error(event.id, error.code, error.message))
        elif isinstance(event, CancelReceived):
            handle = self.peer.inbound.get(event.id)
            if handle is not None:
                handle[0].cancel()
        elif isinstance(event, ResponseReceived):
            self._response(event)
        # notifications ("initialized", "exit"), late or unmatched replies need nothing

    def _response(self, event: ResponseReceived[Incoming]) -> None:
        channel: trio.MemorySendChannel[Response] = event.context
        item = event.message
        response = Response(id=item.id, error=item.error)
        if item.error is msgspec.UNSET:
            try:
                response = Response(id=item.id, result=item.decode())
            except msgspec.DecodeError:
                response = Response(
                    id=item.id, error=ErrorObject(code=ErrorCode.PARSE_ERROR, message="bad result")
                )
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            channel.send_nowait(response)

    # ---- daemon-to-client ----------------------------------------------------------------

    async def request_client(self, method: str, params: Any, timeout: float) -> Response | None:
        """Send a request to the client; its response, or None on timeout or disconnect."""
        send, receive = trio.open_memory_channel[Response](1)
        out_id, frame = self.peer.send_request(method, params, send)
        try:
            self._queue_frame(frame)
            with trio.move_on_after(timeout):
                async for response in receive:
                    return response
            return None
        finally:
            self.peer.abandon(out_id, cancel=False, track=False)

    def notify_client(self, method: str, params: Any) -> None:
        self._queue_frame(self.peer.notify(method, params))

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
            ended = self.session.stopped.is_set()  # closed by another client meanwhile
            self.session.detach(self.id)
            self.session = None
            if ended:  # this held it after its end's trim: one more frees it now
                self.daemon.sessions.reclaim.request()

    def _forward_progress(self, params: dict[str, Any]) -> None:
        self.notify_client("$/progress", params)
