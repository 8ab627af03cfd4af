"""`get_diagnostics`: fresh diagnostics of a file, a folder or the whole workspace."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import msgspec

from codeward.daemon.edits.aftermath import answered, partial_servers, remember
from codeward.daemon.edits.change_delta import change_delta, shaped
from codeward.daemon.edits.delta import PositionMap, delta, entry, severity_counts
from codeward.daemon.edits.history import Snapshot
from codeward.daemon.git.revision import is_content_hash
from codeward.daemon.intel.inputs import resolve_inside
from codeward.daemon.lsp.service import FileDiagnostics, Found
from codeward.daemon.lsp.types import SEVERITY_NAMES, SEVERITY_RANKS
from codeward.daemon.paths import relative, resolve_input_path
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ErrorKind, ToolError

Severity = Literal["error", "warning", "information", "hint"]
DEFAULT_LIMIT = 500


class DiagnosticsArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str | None,
        msgspec.Meta(
            description="A file or a folder, relative to the project root or absolute inside "
            "it; none: the whole project."
        ),
    ] = None
    severity: Annotated[
        Severity | None,
        msgspec.Meta(description="Keep this level and the more severe ones."),
    ] = None
    limit: Annotated[int, msgspec.Meta(ge=1, description="The most diagnostics to return.")] = (
        DEFAULT_LIMIT
    )
    since: Annotated[
        str | None,
        msgspec.Meta(
            description="A `content_hash` this tool returned earlier for the same file "
            "(`sha256:...`): the answer is then what changed since (introduced, resolved, "
            "remaining). Or a git revision (`HEAD`, a branch, a tag, a commit, "
            "`merge-base:main`): the delta of every file the working tree changed against it."
        ),
    ] = None


@tool(
    "get_diagnostics",
    "Errors and warnings from the language servers. With `path` (a file), the file is synced "
    "from disk and every diagnostic server answers for that content, which `content_hash` "
    "names; a folder or no `path` asks every diagnostic server about every file there "
    "(`servers`: what each checked; `partial` and `unchecked_files`: what it did not, which "
    "the next call checks; basedpyright only within the project its configuration says, "
    "the files it leaves out counted in `files_excluded` / `files_ignored`). `severity` keeps "
    "that level and the more severe ones (error > warning > information > hint); `limit` "
    "caps the list (sorted by severity, file, line) and sets `truncated`. With `since` (a "
    "`content_hash` returned earlier for that file), the answer is the delta against what "
    "was reported then: `introduced`, `resolved` and `remaining` (counts by severity); a "
    "diagnostic that only moved with the edits in between is not introduced. With `since` a "
    "git revision (`HEAD`, a branch, a commit; `merge-base:main` for the branch point), "
    "`files` holds that delta for every file the working tree changed against it (added "
    "and deleted ones too; only below `path`, if given) and for the other open files it "
    "broke or fixed, the revision's text shown to the servers in memory (nothing written).",
    DiagnosticsArgs,
    title="Get diagnostics",
)
async def get_diagnostics(ctx: ToolContext, args: DiagnosticsArgs) -> dict[str, Any]:
    if args.limit < 1:  # the schema says so too; a direct call of the handler skips it
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `limit` as a positive number.")
    session = ctx.session
    root = session.root
    result: dict[str, Any] = {}
    path = root
    if args.path is not None:
        path = resolve_inside(root, args.path)
        if not path.exists():  # the full check says so, in its words
            path = resolve_input_path(root, args.path, allow_dir=True)
    if args.since is not None and not is_content_hash(args.since):
        found_delta = await change_delta(session, args.since, path)
        return shaped(found_delta, args.severity)
    if args.since is not None and path.is_dir():
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "`since` is a content hash of one file; give `path` as that file (or give "
            "`since` a git revision, such as `HEAD`, for the change of a folder).",
        )
    if path.is_dir():
        folder = await session.lsp.workspace_diagnostics(folder=path)
        found, errors = folder.diagnostics, folder.errors
        prefix = relative(path, root)
        if prefix != ".":
            found = [f for f in found if f.file == prefix or f.file.startswith(prefix + "/")]
        if folder.partial:
            result["partial"] = True
        if folder.unchecked:
            result["unchecked_files"] = folder.unchecked
        shown = [dataclasses.asdict(s) for s in folder.servers]
        result["servers"] = [{k: v for k, v in s.items() if v is not None} for s in shown]
    else:
        file = relative(path, root)
        history = session.diagnostics_history
        old = history.get(file, args.since) if args.since is not None else None
        if args.since is not None and old is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{args.since!r} is not a content hash get_diagnostics reported for {file!r} "
                f"in this session (the last {history.versions} of each file are kept); call "
                "get_diagnostics without `since` for the full list.",
            )
        answer = await session.lsp.diagnostics(path)
        remember(history, file, answer)
        found, errors = answer.diagnostics, answer.errors
        result["content_hash"] = answer.content_hash
        if answer.partial:
            result["partial"] = True
        if old is not None:
            return {**since(old, answer, args.severity), **result, **_errors(errors)}
    return {**shape(found, args.severity, args.limit), **result, **_errors(errors)}


def _errors(errors: list[ToolError]) -> dict[str, Any]:
    if not errors:
        return {}
    return {"errors": [{"server": e.details.get("server"), "message": e.message} for e in errors]}


def since(old: Snapshot, answer: FileDiagnostics, severity: str | None) -> dict[str, Any]:
    """The delta from what was reported for an earlier content to the answer now."""
    rank = SEVERITY_RANKS[severity] if severity else 4
    mapping = PositionMap.between(old.text, answer.text) if old.text != answer.text else None
    silent = list(dict.fromkeys([*old.partial, *partial_servers(answer)]))
    found = delta(answered(old.diagnostics, silent), answered(answer.diagnostics, silent), mapping)
    shown: dict[str, Any] = {
        "since": old.content_hash,
        "introduced": [entry(d) for d in found.introduced if d.severity <= rank],
        "resolved": {
            "count": sum(1 for d in found.resolved if d.severity <= rank),
            "diagnostics": [entry(d) for d in found.resolved if d.severity <= rank],
        },
        "remaining": severity_counts(found.remaining),
    }
    if silent:
        shown["partial"] = True
        shown["partial_servers"] = silent
    return shown


def shape(found: list[Found], severity: str | None, limit: int) -> dict[str, Any]:
    """Filter by severity, sort (severity, file, line, column), dedupe and cap at `limit`."""
    rank = SEVERITY_RANKS[severity] if severity else 4
    kept = sorted(
        (f for f in found if f.severity <= rank),
        key=lambda f: (f.severity, f.file, f.line, f.column, f.source or "", f.message),
    )
    unique: list[Found] = []
    for f in kept:
        if not unique or unique[-1] != f:
            unique.append(f)
    shown = unique[:limit]
    return {
        "diagnostics": [
            {
                "file": f.file,
                "line": f.line,
                "column": f.column,
                "end_line": f.end_line,
                "end_column": f.end_column,
                "severity": SEVERITY_NAMES.get(f.severity, "error"),
                "message": f.message,
                "code": f.code,
                "source": f.source,
            }
            for f in shown
        ],
        "count": len(unique),
        "truncated": len(unique) > limit,
    }
