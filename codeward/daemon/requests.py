"""Running a connection's requests: each in its turn (`turns.Turn`), in a task of its own
with its cancel scope; a batch's concurrently, answered in one array within its bound; the
handler's result or failure encoded as the reply's body.

`RequestRunner` is the part of `connection.Connection` that does this: its methods are the
connection's own (no call more per request), the state they share declared below."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.backpressure import Backpressure
from codeward.protocol.errors import ErrorCode, ErrorKind, RpcError, ToolError, find_tool_error
from codeward.protocol.messages import CODEC, Id, Incoming
from codeward.protocol.peer import Event, InvalidMessage, RequestReceived

if TYPE_CHECKING:
    from codeward.daemon.dispatch import Dispatch, Host
    from codeward.daemon.turns import Turn, Turns
    from codeward.protocol.peer import Peer

log = logging.getLogger(__name__)


class RequestRunner(Backpressure):
    """Starts and runs requests (a base of `Connection`, which gives the state below; it
    waits for room in its own base, `Backpressure`)."""

    if TYPE_CHECKING:
        daemon: Host
        peer: Peer[Incoming]
        gone: bool
        _dispatch: Dispatch[Any]
        _turns: Turns

        def _queue(self, body: bytes) -> None: ...
        def _queue_frame(self, frame: bytes) -> None: ...
        def _other(self, event: Event) -> None: ...

    def _attach(self, event: Event) -> tuple[Event, trio.CancelScope | None]:
        """A request's cancel scope, made at once: a `$/cancelRequest` may come before it runs."""
        if not isinstance(event, RequestReceived):
            return event, None
        item: Incoming = event.message
        scope = trio.CancelScope()
        self.peer.attach(item.id, (scope, item))  # type: ignore[arg-type]
        return event, scope

    async def _request(self, item: Incoming, requests: trio.Nursery) -> None:
        msg_id = item.id
        assert msg_id is not None
        scope = trio.CancelScope()
        self.peer.attach(msg_id, (scope, item))
        if self._full():
            await self._wait_for_room()
        if self.gone and not self._dispatch.outlives_client(item):
            self.peer.finish(msg_id)  # read after its client left: nobody wants its answer
            return
        if self.stopping:
            self.peer.finish(msg_id)
            self._queue(_stopping(msg_id))
            return
        self._tasks += 1
        self._running += 1
        turn = self._turns.take(item.method in self._dispatch.stateful)
        requests.start_soon(self._reply_one, item, scope, turn)

    async def _reply_one(self, item: Incoming, scope: trio.CancelScope, turn: Turn) -> None:
        try:
            self._queue(await self._handle_request(item, scope, turn))
        finally:
            self._task_done()

    async def _run_batch(
        self, work: list[tuple[Event, trio.CancelScope | None]], turns: list[Turn | None]
    ) -> None:
        """Run a batch's requests concurrently; answer them in one array, within its bound."""
        limit = self._limits.max_batch_reply_bytes
        bodies: list[bytes | None] = [None] * len(work)
        held = 0
        dropped = False  # a reply was over the bound: later requests are not run

        def keep(index: int, msg_id: Id | None, body: bytes, ran: bool = True) -> None:
            nonlocal held, dropped
            if held + len(body) > limit and msg_id is not None:
                body = _too_large(msg_id, limit, ran)
                dropped = True
            held += len(body)
            self._batch_bytes += len(body)
            bodies[index] = body

        async def run(index: int, item: Incoming, scope: trio.CancelScope, turn: Turn) -> None:
            self._batch_items += 1
            try:
                keep(index, item.id, await self._handle_request(item, scope, turn))
            finally:
                self._batch_items -= 1

        try:
            async with trio.open_nursery() as nursery:
                for index, (event, scope) in enumerate(work):
                    if isinstance(event, InvalidMessage):
                        error = event.error
                        keep(index, None, CODEC.error(event.id, error.code, error.message))
                        continue
                    if not isinstance(event, RequestReceived):
                        self._other(event)
                        continue
                    item: Incoming = event.message
                    msg_id = item.id
                    assert msg_id is not None
                    turn = turns[index]
                    assert turn is not None and scope is not None
                    if not dropped:
                        await self._wait_for_slot()
                    if dropped:
                        keep(index, msg_id, _too_large(msg_id, limit, ran=False))
                    elif self.stopping:
                        keep(index, msg_id, _stopping(msg_id))
                    elif self.gone and not self._dispatch.outlives_client(item):
                        keep(index, msg_id, _cancelled(msg_id, "Request cancelled."))
                    else:
                        self._running += 1
                        nursery.start_soon(run, index, item, scope, turn)
                        continue
                    self.peer.finish(msg_id)
                    turn.release()
            replies = [body for body in bodies if body is not None]
            if replies:
                self._queue_frame(self.peer.batch(replies))
        finally:
            self._batch_bytes -= held
            self._task_done()

    async def _handle_request(self, item: Incoming, scope: trio.CancelScope, turn: Turn) -> bytes:
        """Run one request's handler; the body of its reply."""
        msg_id = item.id
        assert msg_id is not None
        try:
            handler = self._dispatch.handlers.get(item.method)
            if handler is None:
                return CODEC.error(
                    msg_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {item.method}."
                )
            with scope:
                if turn.after:  # (nothing to wait for: no coroutine)
                    await turn.wait()
                if item.method not in self._dispatch.early and not self.daemon.loaded.is_set():
                    await self.daemon.loaded.wait()
                if not scope.cancel_called:  # ($/cancelRequest before it started)
                    if turn.started is not None:  # the handler reads its state before it yields
                        turn.started.set()
                    return CODEC.result(msg_id, await handler(self, item))
            return _cancelled(msg_id, _STOPPING if self.stopping else "Request cancelled.")
        except ToolError as exc:
            return CODEC.error(msg_id, ErrorCode.TOOL_ERROR, exc.message, exc.to_data())
        except ExceptionGroup as group:  # a nursery's failure: its tool error, if it has one
            exc = find_tool_error(group)
            if exc is None:
                log.exception("internal error in %s", item.method)
                return CODEC.error(
                    msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
                )
            return CODEC.error(msg_id, ErrorCode.TOOL_ERROR, exc.message, exc.to_data())
        except RpcError as exc:
            return CODEC.error(msg_id, exc.code, exc.message, exc.data or None)
        except Exception:
            log.exception("internal error in %s", item.method)
            return CODEC.error(
                msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
            )
        finally:
            self._running -= 1
            self.peer.finish(msg_id)
            turn.release()
            self._progressed()


_STOPPING = "The daemon is stopping; send the request again once it is back."


def _cancelled(msg_id: Id, message: str) -> bytes:
    return CODEC.error(msg_id, ErrorCode.REQUEST_CANCELLED, message, {"kind": "cancelled"})


def _stopping(msg_id: Id) -> bytes:
    return _cancelled(msg_id, _STOPPING)


def _too_large(msg_id: Id, limit: int, ran: bool) -> bytes:
    if ran:
        message = (
            f"This request ran, but its reply would take the batch's replies over {limit} "
            "bytes and was dropped; send it on its own."
        )
    else:
        message = (
            f"Not run: this batch's replies already reached {limit} bytes; send this request "
            "on its own or in a smaller batch."
        )
    return CODEC.error(
        msg_id, ErrorCode.TOOL_ERROR, message, {"kind": ErrorKind.OUTPUT_TOO_LARGE.value}
    )
