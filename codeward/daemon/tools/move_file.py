"""`move_file`: move or rename a file with its references updated by the language servers
(`workspace/willRenameFiles`), the edits and the move written in one atomic step, then
`workspace/didRenameFiles`."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import trio

from codeward.daemon.edits import Basis, apply_workspace_edit, left_out
from codeward.daemon.edits.aftermath import Aftermath
from codeward.daemon.edits.batch import Replacement, combine
from codeward.daemon.edits.folders import git_dir_holding, in_git_dir
from codeward.daemon.edits.workspace import EditText, operations
from codeward.daemon.intel.inputs import resolve_inside
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.uris import path_to_uri
from codeward.daemon.paths import relative
from codeward.daemon.tools.registry import ToolContext, approve_writes, tool
from codeward.protocol.errors import ErrorKind, ToolError

METHOD = "workspace/willRenameFiles"


class MoveFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str, msgspec.Meta(description="The file to move, relative to the project root or absolute.")
    ]
    new_path: Annotated[
        str,
        msgspec.Meta(
            description="Where it goes: a path inside the project that does not exist (missing "
            "folders are made)."
        ),
    ]
    mode: Annotated[
        Literal["apply", "preview"],
        msgspec.Meta(
            description="`apply` moves it and writes the reference updates; `preview` only "
            "shows them (the diff of the files as they are now)."
        ),
    ] = "apply"
    force: Annotated[
        bool,
        msgspec.Meta(
            description="Move it even when no language server of the file can update the "
            "references (they are then left as they are)."
        ),
    ] = False


@tool(
    "move_file",
    "Move or rename a file, the references to it updated by the language servers that "
    "offer it (`workspace/willRenameFiles`: imports of a TypeScript module, for one). The "
    "updates and the move are written together or not at all, and only if no touched file "
    "changed meanwhile. When no server of the file can update references, the answer is "
    "`unsupported_by_server` and nothing moves, unless `force` (then it moves and says so). "
    "Returns `moved`, `files_changed`, `diff`, `servers` and `diagnostics_after`.",
    MoveFileArgs,
    title="Move a file",
    write_switch="mode",
    writes=lambda args: args.mode == "apply",
)
async def move_file(ctx: ToolContext, args: MoveFileArgs) -> dict[str, Any]:
    session = ctx.session
    root, manager = session.root, session.lsp
    old, new = await trio.to_thread.run_sync(_paths, root, args.path, args.new_path)
    shown_old, shown_new = relative(old, root), relative(new, root)
    language = manager.language_or_none(old)
    answers, without = await manager.will_rename(old, new) if language else ([], [])
    if not answers and not args.force:
        raise _unsupported(shown_old, language, without)
    edits, basis = _edits(answers, old, new)
    text_edit = {"changes": edits}
    planned = await apply_workspace_edit(session.writer, text_edit, "utf-32", basis, apply=False)
    result: dict[str, Any] = {
        "moved": False,
        "path": shown_old,
        "new_path": shown_new,
        "files_changed": [shown_new if f == shown_old else f for f in planned.files_changed],
        "edits": planned.edits,
        "diff": planned.diff,
        "servers": [a.server for a in answers],
    }
    if not answers:
        why = f"no {language} server" if language else "no language server knows the file"
        were = "were" if args.mode == "apply" else "would be"
        result["warning"] = f"references {were} not updated ({why} offers it; moved by force)"
    elif without:
        result["not_updated_by"] = without
    if any(a.partial for a in answers):
        result["partial"] = True
    if args.mode == "preview":
        return {**result, "diagnostics_after": []}
    await approve_writes(ctx, "move_file", [*planned.paths, old, new])
    check = Aftermath.plan(session, [*planned.paths, old])
    check.took(await manager.files_diagnostics(check.asked, check.changing))
    move = {
        "documentChanges": [
            *({"textDocument": {"uri": uri, "version": None}, "edits": items}
              for uri, items in edits.items()),
            {"kind": "rename", "oldUri": path_to_uri(old), "newUri": path_to_uri(new)},
        ]
    }  # fmt: skip
    plan = await session.writer.write(move, "utf-32", basis, folder=new.parent)
    await manager.did_rename(old, new)
    paths = [c.path for c in plan.changes]
    deleted = [c.path for c in plan.changes if c.after is None]
    after = await manager.files_diagnostics(check.to_ask(paths, deleted), paths)
    report = check.report(paths, deleted, after)
    scopes = await left_out.unanalysed(session, [new, *paths])
    return {**result, "moved": True, "diagnostics_after": report.public(),
            **({"unanalysed": scopes} if scopes else {})}  # fmt: skip


def _paths(root: Path, given: str, given_new: str) -> tuple[Path, Path]:
    """The file to move and where it goes, checked (blocking: it looks at the disk)."""
    old = _source(root, given)
    if resolve_inside(root, given_new) == old:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{relative(old, root)!r} is already there; give a different `new_path`.",
        )
    return old, _destination(root, given_new)


def _source(root: Path, given: str) -> Path:
    """The file to move: an existing regular work-tree file."""
    path = resolve_inside(root, given)
    _not_git(root, path)
    try:
        st = os.lstat(path)
    except OSError:
        raise ToolError(
            ErrorKind.FILE_NOT_FOUND,
            f"{relative(path, root)!r} does not exist; give an existing file.",
            path=relative(path, root),
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{relative(path, root)!r} is not a regular file; move_file moves files (a folder: "
            "move its files, or use git mv).",
        )
    return path


def _destination(root: Path, given: str) -> Path:
    """Where the file goes: inside the root, outside .git, nothing there yet."""
    path = resolve_inside(root, given)
    _not_git(root, path)
    if os.path.lexists(path):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{relative(path, root)!r} exists, so nothing was moved; give a path that does not "
            "exist (move_file never overwrites).",
        )
    return path


def _not_git(root: Path, path: Path) -> None:
    if path == root:
        raise ToolError(
            ErrorKind.PATH_OUTSIDE_PROJECT,
            f"{relative(path, root)!r} is not a work-tree file path; give one of the project.",
        )
    if git_dir_holding(root, path) is not None:
        raise in_git_dir(relative(path, root))


def _unsupported(shown: str, language: str | None, without: list[str]) -> ToolError:
    if language is None:
        return ToolError(
            ErrorKind.UNSUPPORTED_BY_SERVER,
            f"No language server knows {shown!r}, so no reference to it can be updated; "
            "nothing was moved. Give `force: true` to move it anyway.",
            servers=[],
        )
    names = ", ".join(without) or "none configured"
    return ToolError(
        ErrorKind.UNSUPPORTED_BY_SERVER,
        f"No {language} language server updates references when {shown!r} moves ({names}: "
        "no workspace/willRenameFiles for it), so nothing was moved. Give `force: true` to "
        "move it without updating references, then fix them (find_references before the "
        "move shows where they are).",
        servers=without,
    )


def _edits(answers: list[Answer], old: Path, new: Path) -> tuple[dict[str, Any], Basis]:
    """The servers' edits as one set of code-point text edits by URI (an edit a server
    addressed to the file at its new place goes to it before the move), and their basis."""
    old_uri, new_uri = path_to_uri(old), path_to_uri(new)
    per_server: list[list[Replacement]] = []
    basis = Basis()
    for answer in answers:
        basis.documents.update(answer.versions or {})
        edit = shapes.answer(answer.result, answer.server, METHOD)
        found: list[Replacement] = []
        for op in operations(edit):
            if not isinstance(op, EditText):
                raise ToolError(
                    ErrorKind.LSP_ERROR,
                    f"{answer.server} answered the move with file operations of its own, "
                    "which codeward does not apply; nothing was moved.",
                    server=answer.server,
                )
            uri = old_uri if op.uri == new_uri else op.uri
            for e in op.edits:
                line, char, end_line, end_char = answer.span(uri, e.range)
                found.append(
                    Replacement(uri, (line - 1, char - 1), (end_line - 1, end_char - 1), e.new_text)
                )
        per_server.append(found)
    combined = combine(per_server)
    clashes = [m for m in combined.skipped.values() if "overlaps" in m]
    if clashes:
        raise ToolError(
            ErrorKind.LSP_ERROR,
            "Two language servers edit the same text differently for this move ("
            + "; ".join(clashes)
            + "), so nothing was moved.",
        )
    return combined.edit["changes"], basis
