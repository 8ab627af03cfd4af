"""The one wake-up of a language-server actor: every change of its state, diagnostics,
progress or registrations wakes whoever waits for a condition on them."""

from __future__ import annotations

from collections.abc import Callable

import trio


class Changes:
    def __init__(self) -> None:
        self._event = trio.Event()

    def touch(self) -> None:
        """Wake everyone waiting."""
        self._event.set()
        self._event = trio.Event()

    async def wait(self) -> None:
        """Wait for the next `touch`."""
        await self._event.wait()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Whether `predicate` came true within `timeout` (checked after every change)."""
        if predicate():  # the common case, without a cancel scope
            return True
        with trio.move_on_after(timeout):
            while not predicate():
                await self._event.wait()
            return True
        return False
