"""The order of a connection's requests: each takes a `Turn` when its frame is read."""

from __future__ import annotations

import trio


class Turn:
    """A request's place in its connection's order (taken in arrival order, at dispatch).

    A stateful request starts once every earlier request has started (each took the
    connection's state it needs at its start, before its first checkpoint) and the
    previous stateful request is done; any other request starts once that one is done."""

    __slots__ = ("after", "done", "started")

    def __init__(self, after: list[trio.Event], stateful: bool) -> None:
        self.after = after
        self.started = None if stateful else trio.Event()
        self.done = trio.Event() if stateful else None

    async def wait(self) -> None:
        for event in self.after:
            if not event.is_set():  # (a set event's wait is still a trip through the scheduler)
                await event.wait()

    def release(self) -> None:
        """Let later requests go (when started; a stateful one when done or failed)."""
        for event in (self.started, self.done):
            if event is not None:
                event.set()


class Turns:
    """Hands out one connection's turns in arrival order."""

    __slots__ = ("_barrier", "_since_barrier")

    def __init__(self) -> None:
        self._barrier: list[trio.Event] = []  # the last stateful request's end, if any
        self._since_barrier: list[trio.Event] = []  # starts of the requests after it

    def take(self, stateful: bool) -> Turn:
        """The next place in the order (see `Turn`)."""
        if not stateful:
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
