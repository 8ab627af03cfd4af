"""Edits a server asks for itself (`workspace/applyEdit`), taken only while codeward runs
one of its commands, through the same checks as every other edit.

A server may answer `workspace/executeCommand` before it asks for the edit (ruff does), so
after the answer the edit is awaited for a short grace period (`settle`).
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from codeward.daemon.edits.apply import EditResult, apply_workspace_edit
from codeward.daemon.edits.plan import Basis
from codeward.daemon.edits.writer import RootWriter
from codeward.daemon.lsp.server import LanguageServer
from codeward.protocol.errors import ToolError

_LOCKS: weakref.WeakKeyDictionary[LanguageServer, trio.Lock] = weakref.WeakKeyDictionary()


COMMAND_EDIT_GRACE = 1.0  # seconds a server may take to ask for its edit after answering


@dataclass
class ServerEdits:
    """What a server asked for during a command: the edits applied and those refused."""

    result: EditResult = field(default_factory=EditResult)
    refused: list[ToolError] = field(default_factory=list)
    asked: int = 0  # applyEdit requests received
    pending: int = 0  # of them, still being applied
    _changed: trio.Event = field(default_factory=trio.Event)

    def _touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def settle(self, grace: float = COMMAND_EDIT_GRACE) -> None:
        """Wait up to `grace` seconds for a first edit request, then until none is pending."""
        with trio.move_on_after(grace):
            while not self.asked:
                await self._changed.wait()
        while self.pending:
            await self._changed.wait()


@asynccontextmanager
async def accepting_edits(server: LanguageServer, writer: RootWriter) -> AsyncIterator[ServerEdits]:
    """Apply the `workspace/applyEdit` requests of `server` within the block (one command at
    a time per server; call `settle` after the command's answer); outside it the server's
    requests are refused as before."""
    lock = _LOCKS.setdefault(server, trio.Lock())
    async with lock:
        taken = ServerEdits()

        async def apply_edit(params: dict[str, Any]) -> dict[str, Any]:
            edit = params.get("edit") if isinstance(params, dict) else None
            basis = Basis.of(server.documents.documents.values())
            taken.asked += 1
            taken.pending += 1
            try:
                result = await apply_workspace_edit(
                    writer, edit, server.encoding, basis, apply=True
                )
            except ToolError as exc:
                taken.refused.append(exc)
                return {"applied": False, "failureReason": exc.message}
            finally:
                taken.pending -= 1
                taken._touch()
            taken.result.merge(result)
            return {"applied": True}

        previous, server.apply_edit = server.apply_edit, apply_edit
        try:
            yield taken
        finally:
            server.apply_edit = previous
