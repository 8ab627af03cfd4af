"""The edits a server asks for (`workspace/applyEdit`) while one of its commands runs: each
handed to that command's handler with the documents the server had open when it asked.
Outside a command a server's edits are refused. Commands run one at a time (the actor's
command lane), so an edit always belongs to the one command running."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.documents import Document
from codeward.protocol.errors import ToolError

COMMAND_EDIT_GRACE = 1.0  # seconds a server may take to ask for its edit after answering
REFUSED = {
    "applied": False,
    "failureReason": "codeward applies a server's edits only during its commands",
}

# The command's handler: apply `edit` (a WorkspaceEdit) computed from `documents`; raise a
# ToolError to refuse it (its message goes back to the server).
EditHandler = Callable[[Any, tuple[Document, ...]], Awaitable[None]]


class EditCapture:
    def __init__(
        self,
        handler: EditHandler,
        documents: Callable[[], tuple[Document, ...]],
        changes: Changes,
    ) -> None:
        self._handler = handler
        self._documents = documents
        self._changes = changes
        self.asked = 0  # applyEdit requests received
        self.pending = 0  # of them, still being handled
        self.applied = 0
        self.refused: list[ToolError] = []

    def receive(self, params: Any) -> Awaitable[dict[str, Any]]:
        """The answer to one applyEdit request; the documents are taken as it arrives."""
        edit = params.get("edit") if isinstance(params, dict) else None
        self.asked += 1
        self.pending += 1
        return self._apply(edit, self._documents())

    async def _apply(self, edit: Any, documents: tuple[Document, ...]) -> dict[str, Any]:
        try:
            await self._handler(edit, documents)
        except ToolError as exc:
            self.refused.append(exc)
            return {"applied": False, "failureReason": exc.message}
        finally:
            self.pending -= 1
            self._changes.touch()
        self.applied += 1
        return {"applied": True}

    async def settle(self, alive: Callable[[], bool], grace: float = COMMAND_EDIT_GRACE) -> None:
        """Wait up to `grace` seconds for a first edit request (while the server lives),
        then until none is being handled."""
        await self._changes.wait_for(lambda: self.asked > 0 or not alive(), grace)
        await self._changes.wait_for(lambda: self.pending == 0, math.inf)
