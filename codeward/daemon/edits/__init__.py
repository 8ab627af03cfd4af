"""The edit layer: a language server's WorkspaceEdit, checked and applied atomically.

    plan = prepare(root, workspace_edit, encoding, basis)   # reads, checks, diffs
    commit(plan)                                            # writes every file, or none
    await writer.write(workspace_edit, encoding, basis)     # both, in the root's writer

Each session has one `RootWriter`, the only task that writes its files: edits to a root
run one at a time, so a second edit computed from the same content is `stale_edit`.

`prepare` refuses (writing nothing) an edit that touches a path outside the root
(`path_outside_project`) or a file whose content is no longer the one the server computed
the edit from (`stale_edit`); `commit` checks the files again just before it writes, and
rolls back the files it replaced when a later one fails.
"""

from codeward.daemon.edits.apply import EditResult, apply_workspace_edit
from codeward.daemon.edits.atomic import commit
from codeward.daemon.edits.plan import Basis, EditPlan, FileChange, prepare
from codeward.daemon.edits.server_edits import ServerEdits
from codeward.daemon.edits.writer import RootWriter

__all__ = [
    "Basis",
    "EditPlan",
    "EditResult",
    "FileChange",
    "RootWriter",
    "ServerEdits",
    "apply_workspace_edit",
    "commit",
    "prepare",
]
