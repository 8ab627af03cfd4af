"""A connection's backpressure: its reader takes no more requests while too many of the
client's requests run or too many of its reply bytes wait, and a batch starts its next
request only while fewer than the limit run.

`Backpressure` is the part of `connection.Connection` (a base of its `RequestRunner`) that
counts the connection's tasks and wakes what waits for them: its methods are the
connection's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from codeward.daemon.config import DaemonConfig
    from codeward.daemon.outbox import Outbox


class Backpressure:
    """Counts a connection's work and waits for room (a base of `Connection`, which gives
    the state below)."""

    if TYPE_CHECKING:
        outbox: Outbox
        stopping: bool
        paused: bool
        last_active: float
        _limits: DaemonConfig
        _socket: trio.socket.SocketType | None
        _tasks: int
        _running: int
        _batch_items: int
        _batch_bytes: int
        _progress: trio.Event | None

        async def _watch_hang_up(self, fd: int) -> None: ...

    def _reader_load(self) -> int:
        return self._tasks + self._batch_items

    def _held_bytes(self) -> int:
        return self.outbox.queued_bytes + self._batch_bytes

    def _full(self) -> bool:
        """Whether the reader must wait before it takes another request."""
        limits = self._limits
        return not self.outbox.closed and (
            self._tasks + self._batch_items >= limits.max_requests_in_flight
            or self.outbox.queued_bytes + self._batch_bytes > limits.max_queued_reply_bytes
        )

    async def _wait_for_room(self) -> None:
        """The reader takes no more requests while too many run or too many reply bytes
        wait; it goes on when the requests are under the limit and the bytes drained to half."""
        limits = self._limits
        most = limits.max_requests_in_flight
        if not self._full():
            return
        self.paused = True
        try:
            async with trio.open_nursery() as nursery:
                if self._socket is not None:  # a client that goes away meanwhile is noticed
                    nursery.start_soon(self._watch_hang_up, self._socket.fileno())
                await self._wait_until(
                    lambda: (
                        self.outbox.closed
                        or self.stopping
                        or (
                            self._reader_load() < most
                            and self._held_bytes() <= limits.max_queued_reply_bytes // 2
                        )
                    )
                )
                nursery.cancel_scope.cancel()
        finally:
            self.paused = False

    async def _wait_for_slot(self) -> None:
        """A batch starts its next request only while fewer than the limit run."""
        most = self._limits.max_requests_in_flight
        await self._wait_until(lambda: self.outbox.closed or self.stopping or self._running < most)

    async def _wait_until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            if self._progress is None:
                self._progress = trio.Event()
            await self._progress.wait()

    def _progressed(self) -> None:
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    def request_started(self) -> None:
        """A request task of this connection starts (the MCP dialect's calls)."""
        self._tasks += 1

    def request_finished(self) -> None:
        self._task_done()

    def _task_done(self) -> None:
        self._tasks -= 1
        self.last_active = trio.current_time()
        self._progressed()
