"""The edits a server asks for (`workspace/applyEdit`) while one of its commands runs: each
handed to that command's handler with the documents the server had open when it asked.
Outside a command a server's edits are refused. Commands run one at a time (each waits
for the actor's command turn), so an edit always belongs to the one command running."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.shapes import OffSpec, off_spec, structure, unstructure
from codeward.protocol.errors import ToolError

COMMAND_EDIT_GRACE = 1.0  # seconds a server may take to ask for its edit after answering
APPLY_EDIT = "workspace/applyEdit"


def answer(applied: bool, failure_reason: str | None = None) -> Any:
    """The answer to a `workspace/applyEdit` request, as JSON-able data."""
    return unstructure(lsp.ApplyWorkspaceEditResult(applied, failure_reason=failure_reason))


REFUSED = answer(False, "codeward applies a server's edits only during its commands")

# The command's handler: apply `edit` computed from `documents`; raise a ToolError to
# refuse it (its message goes back to the server).
EditHandler = Callable[[lsp.WorkspaceEdit, tuple[Document, ...]], Awaitable[None]]


class EditCapture:
    def __init__(
        self,
        server: str,
        handler: EditHandler,
        documents: Callable[[], tuple[Document, ...]],
        changes: Changes,
    ) -> None:
        self._server = server
        self._handler = handler
        self._documents = documents
        self._changes = changes
        self.asked = 0  # applyEdit requests received
        self.pending = 0  # of them, still being handled
        self.applied = 0
        self.refused: list[ToolError] = []

    def receive(self, params: Any) -> Awaitable[Any]:
        """The answer to one applyEdit request (`params` as the server sent them); the
        documents are taken as it arrives."""
        self.asked += 1
        self.pending += 1
        return self._apply(params, self._documents())

    async def _apply(self, params: Any, documents: tuple[Document, ...]) -> Any:
        try:
            try:
                edit = structure(params, lsp.ApplyWorkspaceEditParams).edit
            except OffSpec as exc:
                raise off_spec(self._server, APPLY_EDIT, exc.detail, verb="sent") from None
            await self._handler(edit, documents)
        except ToolError as exc:
            self.refused.append(exc)
            return answer(False, exc.message)
        finally:
            self.pending -= 1
            self._changes.touch()
        self.applied += 1
        return answer(True)

    async def settle(self, alive: Callable[[], bool], grace: float = COMMAND_EDIT_GRACE) -> None:
        """Wait up to `grace` seconds for a first edit request (while the server lives),
        then until none is being handled."""
        await self._changes.wait_for(lambda: self.asked > 0 or not alive(), grace)
        await self._changes.wait_for(lambda: self.pending == 0, math.inf)
