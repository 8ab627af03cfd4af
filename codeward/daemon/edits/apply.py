"""The edit layer as the tools use it: prepare, commit, tell."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.edits.plan import Basis, prepare
from codeward.daemon.edits.writer import RootWriter
from codeward.daemon.lsp.positions import Encoding


@dataclass
class EditResult:
    files_changed: list[str] = field(default_factory=list)  # root-relative
    edits: int = 0
    diff: str = ""
    applied: bool = False
    paths: list[Path] = field(default_factory=list)  # canonical
    deleted: list[Path] = field(default_factory=list)  # of `paths`, the files deleted

    def merge(self, other: EditResult) -> None:
        """Add a later edit's result to this one (a command may apply several)."""
        self.files_changed += [f for f in other.files_changed if f not in self.files_changed]
        self.paths += [p for p in other.paths if p not in self.paths]
        self.deleted = [p for p in self.deleted if p not in other.paths] + other.deleted
        self.edits += other.edits
        self.diff += other.diff
        self.applied = self.applied or other.applied


async def apply_workspace_edit(
    writer: RootWriter, edit: Any, encoding: Encoding, basis: Basis, *, apply: bool
) -> EditResult:
    """Prepare a WorkspaceEdit and, with `apply`, have the root's writer write it (which
    tells the session which files changed); without, only its diff."""
    if apply:
        plan = await writer.write(edit, encoding, basis)
    else:
        held = writer.buffers()  # editors' buffers: an unsaved one refuses the edit
        plan = await trio.to_thread.run_sync(
            prepare, writer.root, edit, encoding, basis, writer.limit, held
        )
    paths = [c.path for c in plan.changes]
    deleted = [c.path for c in plan.changes if c.after is None]
    return EditResult(plan.files, plan.edits, plan.diff, apply and bool(paths), paths, deleted)
