"""Work an actor does one piece at a time, in a task of its own, in the order asked: a
method a server must run one at a time, its commands (so the edits a server asks for
belong to the one command running), its workspace pulls.

The caller waits for its piece; the caller's cancellation cancels the piece, unless the
piece is `detached` and already begun (a request the server must not see cancelled: it
runs to its answer or its timeout, and the next piece waits for it). A piece whose caller
left before its turn never begins.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

import trio

from codeward.protocol.errors import ErrorKind, ToolError

T = TypeVar("T")


class _Job(Generic[T]):
    __slots__ = ("begun", "done", "error", "scope", "value", "work")

    def __init__(self, work: Callable[[], Awaitable[T]]) -> None:
        self.work = work
        self.scope = trio.CancelScope()
        self.begun = False
        self.done = trio.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


class Lane:
    def __init__(self, name: str) -> None:
        self.name = name
        self._send, self._receive = trio.open_memory_channel[_Job[Any]](math.inf)

    async def run(self) -> None:
        """Do the pieces handed over until cancelled; those left then fail."""
        try:
            async for job in self._receive:
                if job.scope.cancel_called:  # its caller left before its turn
                    job.done.set()
                    continue
                job.begun = True
                try:
                    with job.scope:
                        job.value = await job.work()
                except Exception as exc:  # a ToolError, handed to the caller
                    job.error = exc
                except BaseException:  # the actor stops: this piece fails with the rest
                    job.error = self._stopped()
                    raise
                finally:
                    job.done.set()
        finally:
            while True:
                try:
                    job = self._receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                job.error = self._stopped()
                job.done.set()
            self._receive.close()

    async def call(self, work: Callable[[], Awaitable[T]], *, detached: bool = False) -> T:
        """`await work()` in the lane's task, after every piece asked before."""
        job = _Job(work)
        try:
            self._send.send_nowait(job)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise self._stopped() from None
        try:
            await job.done.wait()
        finally:
            if not job.done.is_set() and not (detached and job.begun):
                job.scope.cancel()
        if job.error is not None:
            raise job.error
        return cast(T, job.value)

    def _stopped(self) -> ToolError:
        return ToolError(ErrorKind.LSP_ERROR, f"The {self.name} language server was stopped.")
