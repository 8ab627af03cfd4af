"""`edit_file`: the agent's own edits, applied the safe way (written atomically through the
edit layer, previewed in the servers' memory first, or written only when they break nothing),
with what they did to the diagnostics."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
import trio

from codeward.daemon.edits import Basis, apply_workspace_edit, left_out
from codeward.daemon.edits.aftermath import Aftermath, Report, partial_servers, remember
from codeward.daemon.edits.diff import unified_diff
from codeward.daemon.edits.folders import check_links, git_dir_holding, in_git_dir
from codeward.daemon.edits.own_edits import (
    OwnEdit,
    apply_own_edits,
    decode_source,
    whole_text_edit,
)
from codeward.daemon.files import Missing, content_hash, read_file
from codeward.daemon.intel.inputs import resolve_inside
from codeward.daemon.lsp.service import FileDiagnostics
from codeward.daemon.paths import relative
from codeward.daemon.tools.diagnostics import Severity
from codeward.daemon.tools.registry import ToolContext, approve_writes, tool
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

Mode = Literal["apply", "preview", "safe"]


class TextEditArg(msgspec.Struct, forbid_unknown_fields=True):
    line: Annotated[int, msgspec.Meta(description="1-based line where the replaced text starts.")]
    character: Annotated[
        int, msgspec.Meta(description="1-based character (code point) where it starts.")
    ]
    end_line: Annotated[int, msgspec.Meta(description="1-based line where it ends.")]
    end_character: Annotated[
        int, msgspec.Meta(description="1-based character where it ends (not included).")
    ]
    new_text: Annotated[str, msgspec.Meta(description="The text put in its place.")]


class EditFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str, msgspec.Meta(description="The file, relative to the project root or absolute.")
    ]
    edits: Annotated[
        list[TextEditArg] | None,
        msgspec.Meta(
            description="Replacements, each of a range of the current text (they may not "
            "overlap). Give `edits` or `content`."
        ),
    ] = None
    content: Annotated[str | None, msgspec.Meta(description="The whole new text of the file.")] = (
        None
    )
    expected_hash: Annotated[
        str | None,
        msgspec.Meta(
            description="The `content_hash` the file must still have (from get_diagnostics "
            "or an earlier edit_file); else `stale_edit` and nothing is written."
        ),
    ] = None
    create: Annotated[bool, msgspec.Meta(description="Allow creating a new file.")] = False
    mode: Annotated[
        Mode,
        msgspec.Meta(
            description="`apply` writes it; `preview` writes nothing and shows the servers "
            "the new text in memory only; `safe` previews and writes only when no "
            "diagnostic of `severity` or worse is introduced and every server of the file "
            "answered in time (else `refused` with the `reason`, e.g. `partial: basedpyright`)."
        ),
    ] = "apply"
    severity: Annotated[
        Severity,
        msgspec.Meta(description="With `safe`: the least severe introduced level that refuses."),
    ] = "error"


@tool(
    "edit_file",
    "Edit a file: `edits` (ranges of the current text, 1-based lines and characters, each "
    "with its `new_text`) or the whole `content`. `apply` writes it "
    "atomically, `preview` only shows the language servers the new text in memory, `safe` "
    "writes only if that introduces no error (or nothing at `severity` or worse; refused, it "
    "answers `refused`, `reason` and the file's `unchanged_hash`). Returns "
    "`content_hash` (of the new text), `diff`, `written` and `diagnostics_after`: for the "
    "file and every other file it broke, the diagnostics `introduced`, `resolved` and "
    "`remaining` (a diagnostic that only moved is not introduced).",
    EditFileArgs,
    title="Edit a file",
    destructive=True,
    write_switch="mode",
    writes=lambda args: args.mode != "preview",
)
async def edit_file(ctx: ToolContext, args: EditFileArgs) -> dict[str, Any]:
    target = await read_target(ctx.session, args.path, create=args.create)
    old_text = target.text()
    check_expected(target, args.expected_hash)
    new_text = _new_text(args, old_text)
    return await write_edit(ctx, target, old_text, new_text, args.mode, args.severity)


def check_expected(target: Target, expected_hash: str | None) -> None:
    """`stale_edit` unless the file still has the content `expected_hash` (when given)."""
    if expected_hash is not None and expected_hash != target.hash:
        now = f"it is {target.hash!r} now" if target.hash else "it does not exist"
        raise ToolError(
            ErrorKind.STALE_EDIT,
            f"{target.shown!r} no longer has the content {expected_hash!r} ({now}), "
            "so nothing was written; read it again and retry.",
            path=target.shown,
            content_hash=target.hash,
        )


async def write_edit(
    ctx: ToolContext, target: Target, old_text: str, new_text: str, mode: Mode,
    severity: Severity, tool_name: str = "edit_file",
) -> dict[str, Any]:  # fmt: skip
    """Replace `old_text` (the content read as `target`) by `new_text` the way `mode` says:
    written, previewed in the servers' memory, or written only when it introduces nothing
    of `severity` or worse (a write approved first as `tool_name`'s when the policy says to
    confirm edits); the edit tools' one way to write their own text."""
    session = ctx.session
    new_data = new_text.encode("utf-8")
    result: dict[str, Any] = {
        "path": target.shown,
        "content_hash": content_hash(new_data),
        "diff": unified_diff(target.shown, None if target.data is None else old_text, new_text),
        "written": False,
    }
    if target.data is not None and new_data == target.data:
        return {**result, "changed": False, "diagnostics_after": []}
    result["changed"] = True
    if mode == "apply":
        await approve_writes(ctx, tool_name, [target.path])
        report = await _write(session, target, old_text, new_text)
        scopes = await left_out.unanalysed(session, [target.path])
        return {**result, "written": True, "diagnostics_after": report.public(),
                **({"unanalysed": scopes} if scopes else {})}  # fmt: skip
    report = await preview(session, target.path, new_data)
    if mode == "safe":
        reason = _refusal(report, severity)
        if reason:
            # no `content_hash`: nothing was written; `unchanged_hash` is the file's own
            # (what `expected_hash` takes next)
            shown = {k: v for k, v in result.items() if k != "content_hash"}
            return {
                "refused": True,
                "reason": f"{reason}, so nothing was written",
                **shown,
                "unchanged_hash": target.hash,
                "diagnostics_after": report.public(),
            }
        await approve_writes(ctx, tool_name, [target.path])
        await _write(session, target, old_text, new_text, checked=False)
        result["written"] = True
    return {**result, "diagnostics_after": report.public()}


def _refusal(report: Report, severity: str) -> str:
    """Why `safe` does not write an edit with this `report` ("" when it may): it introduces
    diagnostics of `severity` or worse, or a server of the file did not answer for its old
    or new text in time (`partial: <servers>`: nothing vouches for it)."""
    refused = report.introduced(severity)
    if refused:
        return (
            f"the edit introduces {len(refused)} diagnostic"
            f"{'s' if len(refused) != 1 else ''} of severity {severity} or worse"
        )
    missing = report.unanswered()
    return f"partial: {', '.join(missing)}" if missing else ""


class Target:
    """A file an edit tool writes, as it was read."""

    def __init__(self, path: Path, shown: str, data: bytes | None) -> None:
        self.path = path
        self.shown = shown
        self.data = data  # None: the file does not exist (create)
        self.hash = content_hash(data) if data is not None else None

    def text(self) -> str:
        """Its text ("" for a file to create); `unsupported_file_type` unless UTF-8 text."""
        return "" if self.data is None else decode_source(self.data, self.shown)


async def read_target(session: Session, given: str, *, create: bool = False) -> Target:
    """The work-tree file `given` (root-relative or absolute) names, read (the buffer an
    editor holds of it, if one does); with `create`, one that does not exist yet in an
    existing folder."""
    root = session.root
    path = resolve_inside(root, given)
    shown = relative(path, root)
    if path == root:
        raise ToolError(
            ErrorKind.PATH_OUTSIDE_PROJECT,
            f"{shown!r} is not a work-tree file; give a file of the project.",
        )
    if await trio.to_thread.run_sync(git_dir_holding, root, path) is not None:
        raise in_git_dir(shown)
    try:
        data, st = await trio.to_thread.run_sync(
            read_file, path, root, session.config.lsp.max_file_bytes
        )
    except Missing:
        if not create:
            raise ToolError(
                ErrorKind.FILE_NOT_FOUND,
                f"{shown!r} does not exist; give `create: true` to create it.",
                path=shown,
            ) from None
        if not path.parent.is_dir():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"The folder of {shown!r} does not exist; edit_file creates files, not folders.",
                path=shown,
            ) from None
        return Target(path, shown, None)
    check_links(st, shown)  # before its content shows in a diff or a preview
    buffer = session.lsp.editor_buffer(path)  # an editor's: computed on its text (a write
    if buffer is not None:  # is refused while it is not the disk's)
        data = buffer.text.encode("utf-8", "replace")
    return Target(path, shown, data)


def _new_text(args: EditFileArgs, old: str) -> str:
    if (args.edits is None) == (args.content is None):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "Give either `edits` (ranges to replace) or `content` (the whole new text), "
            "not both and not neither.",
        )
    if args.content is not None:
        if "\x00" in args.content:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "`content` may not hold NUL characters.")
        return args.content
    assert args.edits is not None
    if any("\x00" in e.new_text for e in args.edits):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "`new_text` may not hold NUL characters.")
    own = [
        OwnEdit(e.line, e.character, e.end_line, e.end_character, e.new_text) for e in args.edits
    ]
    return apply_own_edits(old, own)


async def _write(
    session: Session, target: Target, old: str, new: str, *, checked: bool = True
) -> Report:
    """Write `new` through the root's writer (only if the file still has the content read,
    else `stale_edit`); with `checked`, the diagnostics delta of the write."""
    uri = target.path.as_uri()
    if target.data is None:
        edit: dict[str, Any] = {
            "documentChanges": [
                {"kind": "create", "uri": uri},
                {
                    "textDocument": {"uri": uri, "version": None},
                    "edits": [_insert_all(new)],
                },
            ]
        }
        basis = Basis()
    else:
        edit = whole_text_edit(uri, old, new)
        assert target.hash is not None
        basis = Basis({target.path: (0, target.hash)})
    if not checked:
        await apply_workspace_edit(session.writer, edit, "utf-32", basis, apply=True)
        return Report([])
    manager = session.lsp
    check = Aftermath.plan(session, [target.path])
    check.took(await manager.files_diagnostics(check.asked, check.changing))
    done = await apply_workspace_edit(session.writer, edit, "utf-32", basis, apply=True)
    after = await manager.files_diagnostics(check.to_ask(done.paths, done.deleted), done.paths)
    return check.report(done.paths, done.deleted, after)


def _insert_all(text: str) -> dict[str, Any]:
    zero = {"line": 0, "character": 0}
    return {"range": {"start": zero, "end": zero}, "newText": text}


async def preview(session: Session, path: Path, data: bytes) -> Report:
    """The diagnostics delta `data` would cause as the content of `path`, from the servers'
    memory: nothing is written, and no other request sees the text (see `lsp.preview`)."""
    manager = session.lsp
    if manager.language_or_none(path) is None:
        return Report([])
    async with manager.previewing() as previewer:
        check = Aftermath.plan(session, [path])
        check.took(await manager.files_diagnostics(check.asked, check.changing))
        async with previewer.show(path, data):
            answers = await manager.files_diagnostics(check.to_ask([path]), [path])
        for file, answer in answers.items():
            if isinstance(answer, ToolError):
                continue  # the report fails with it
            shown = relative(file, session.root)
            _crashed(answer, shown)
            if file == path:  # this content's diagnostics: its hash may be given as `since`
                remember(session.diagnostics_history, shown, answer)
        return check.report([path], (), answers, preview=True)


def _crashed(answer: FileDiagnostics, shown: str) -> None:
    """A server that stopped during a preview makes it fail: its answer is missing."""
    for error in answer.errors:
        if error.kind is ErrorKind.LSP_ERROR:
            server = error.details.get("server")
            raise ToolError(
                ErrorKind.LSP_ERROR,
                f"The {server} language server failed during the preview of {shown!r} "
                f"({error.message.rstrip('.')}); nothing was written and the servers have "
                "the disk's content again: retry.",
                server=server,
                servers=partial_servers(answer),
            )
