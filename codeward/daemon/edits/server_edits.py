"""Edits a server asks for itself (`workspace/applyEdit`), taken only while codeward runs
one of its commands, through the same checks as every other edit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.daemon.edits import follow
from codeward.daemon.edits.apply import EditResult, apply_workspace_edit
from codeward.daemon.edits.plan import Basis
from codeward.daemon.edits.writer import RootWriter
from codeward.daemon.lsp.positions import Encoding
from codeward.protocol.errors import ToolError


@dataclass
class ServerEdits:
    """What a server asked for during a command: the edits applied and those refused."""

    writer: RootWriter
    result: EditResult = field(default_factory=EditResult)
    refused: list[ToolError] = field(default_factory=list)
    # the caller's record of edits sent to editors (the server's request runs in its task)
    followed: list[dict[str, Any]] = field(default_factory=follow.collecting)

    async def on_edit(
        self, edit: Any, encoding: Encoding, versions: dict[Path, tuple[int, str]]
    ) -> None:
        """One `workspace/applyEdit`, applied; a ToolError refuses it (the server is told
        why)."""
        try:
            with follow.recorded_into(self.followed):
                result = await apply_workspace_edit(
                    self.writer, edit, encoding, Basis(versions), apply=True
                )
        except ToolError as exc:
            self.refused.append(exc)
            raise
        self.result.merge(result)
