"""Edits a server asks for itself (`workspace/applyEdit`) while one of its commands runs.

A server may answer `workspace/executeCommand` before it asks for the edit (ruff does), so
after the answer the edit is awaited for a short grace period (`settle`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

COMMAND_EDIT_GRACE = 1.0  # seconds a server may take to ask for its edit after answering


class EditCapture:
    """The `apply_edit` slot of a server during one command: each edit goes to `on_edit`
    (whose answer the server gets), counted so that `settle` knows when they are done."""

    def __init__(self, on_edit: Callable[[Any], Awaitable[dict[str, Any]]]) -> None:
        self.on_edit = on_edit
        self.asked = 0  # applyEdit requests received
        self.pending = 0  # of them, still being applied
        self._changed = trio.Event()

    def _touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def apply_edit(self, params: Any) -> dict[str, Any]:
        edit = params.get("edit") if isinstance(params, dict) else None
        self.asked += 1
        self.pending += 1
        try:
            return await self.on_edit(edit)
        finally:
            self.pending -= 1
            self._touch()

    async def settle(self, grace: float = COMMAND_EDIT_GRACE) -> None:
        """Wait up to `grace` seconds for a first edit request, then until none is pending."""
        with trio.move_on_after(grace):
            while not self.asked:
                await self._changed.wait()
        while self.pending:
            await self._changed.wait()
