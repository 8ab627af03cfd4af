"""The edit layer as the tools use it: capture what a server saw, prepare, commit, tell."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.edits.atomic import commit
from codeward.daemon.edits.plan import Basis, prepare
from codeward.daemon.lsp.manager import DocumentContext, LspManager
from codeward.daemon.lsp.positions import Encoding

FilesChanged = Callable[[Sequence[Path]], None]


@dataclass
class EditResult:
    files_changed: list[str] = field(default_factory=list)  # root-relative
    edits: int = 0
    diff: str = ""
    applied: bool = False
    paths: list[Path] = field(default_factory=list)  # canonical

    def merge(self, other: EditResult) -> None:
        """Add a later edit's result to this one (a command may apply several)."""
        self.files_changed += [f for f in other.files_changed if f not in self.files_changed]
        self.paths += [p for p in other.paths if p not in self.paths]
        self.edits += other.edits
        self.diff += other.diff
        self.applied = self.applied or other.applied


def capture_basis(
    manager: LspManager, params: Callable[[DocumentContext], Any], bases: dict[str, Basis]
) -> Callable[[DocumentContext], Any]:
    """`params`, also recording in `bases[server]` the documents the server has just then:
    the content the answer to this request will be computed from."""

    def build(ctx: DocumentContext) -> Any:
        server = manager.servers.get(ctx.server)
        if server is not None:
            bases[ctx.server] = Basis.of(server.documents.documents.values())
        return params(ctx)

    return build


async def apply_workspace_edit(
    root: Path,
    edit: Any,
    encoding: Encoding,
    basis: Basis,
    *,
    apply: bool,
    on_changed: FilesChanged,
) -> EditResult:
    """Prepare a WorkspaceEdit and, with `apply`, write it (shielded) and tell `on_changed`."""
    plan = await trio.to_thread.run_sync(prepare, root, edit, encoding, basis)
    result = EditResult(plan.files, plan.edits, plan.diff, False, [c.path for c in plan.changes])
    if apply and plan.changes:
        with trio.CancelScope(shield=True):  # a file edit, once begun, finishes
            await trio.to_thread.run_sync(commit, plan)
        result.applied = True
        on_changed(result.paths)
    return result
