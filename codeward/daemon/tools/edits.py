"""The edit tools whose edits a language server computes: format_code, get_code_actions and
rename_symbol, asked of the servers and applied through the edit layer (atomic, only inside
the root, only on the content the server computed them from), the files' diagnostics asked
before and after (`write_checked`). Their arguments are in `edit_args`, the choice of code
actions in `code_action_choice`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.edits import Basis, EditResult, ServerEdits, apply_workspace_edit, left_out
from codeward.daemon.edits.actions import Action, collect, in_lines, matches
from codeward.daemon.edits.aftermath import Aftermath
from codeward.daemon.edits.batch import Replacement, combine
from codeward.daemon.edits.formatters import (
    Formatter,
    formatter_for,
    narrowed_out,
    run_formatter,
)
from codeward.daemon.edits.identifiers import invalid_reason
from codeward.daemon.edits.own_edits import whole_text_edit
from codeward.daemon.files import content_hash, read_file
from codeward.daemon.intel.inputs import SourceFile, source_file
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import CONTENT_MODIFIED, Answer, DocumentContext, LanguageService
from codeward.daemon.tools.code_action_choice import (
    CODE_ACTION,
    FIX_ALL,
    MAX_AT_DIAGNOSTICS,
    PREFERRED,
    at_diagnostic,
    choose,
    replacements,
)
from codeward.daemon.tools.edit_args import CodeActionArgs, FormatArgs, RenameArgs, check_lines
from codeward.daemon.tools.positions import PositionArgs, locate
from codeward.daemon.tools.registry import ToolContext, approve_writes, tool
from codeward.protocol.errors import ErrorKind, ToolError

FORMATTING_OPTIONS = lsp.FormattingOptions(
    tab_size=4,
    insert_spaces=True,
    trim_trailing_whitespace=True,
    insert_final_newline=True,
    trim_final_newlines=True,
)


def _edit_result(result: EditResult) -> dict[str, Any]:
    return {
        "files_changed": result.files_changed,
        "edits": result.edits,
        "diff": result.diff,
        "applied": result.applied,
    }


async def write_checked(
    ctx: ToolContext, tool: str, edit: Any, encoding: Encoding, basis: Basis, *, apply: bool
) -> tuple[EditResult, dict[str, Any]]:
    """A server's WorkspaceEdit through the edit layer; with `apply`, approved (when the
    policy says to confirm edits) and the diagnostics of the files it touches taken before
    and after (`diagnostics_after`)."""
    writer = ctx.session.writer
    planned = await apply_workspace_edit(writer, edit, encoding, basis, apply=False)
    if not apply or not planned.paths:
        return planned, {}
    await approve_writes(ctx, tool, planned.paths)
    manager = ctx.session.lsp
    check = Aftermath.plan(ctx.session, planned.paths)
    check.took(await manager.files_diagnostics(check.asked, check.changing))
    done = await apply_workspace_edit(writer, edit, encoding, basis, apply=True)
    after = await manager.files_diagnostics(check.to_ask(done.paths, done.deleted), done.paths)
    report = check.report(done.paths, done.deleted, after)
    return done, {"diagnostics_after": report.public(), **await _unanalysed(ctx, done.paths)}


async def _unanalysed(ctx: ToolContext, paths: Sequence[Path]) -> dict[str, Any]:
    """`unanalysed` beside `diagnostics_after`, when a server checks only part of the
    project (see `edits.left_out`)."""
    scopes = await left_out.unanalysed(ctx.session, paths)
    return {"unanalysed": scopes} if scopes else {}


def _errors(errors: list[ToolError]) -> dict[str, Any]:
    if not errors:
        return {}
    return {"errors": [{"server": e.details.get("server"), "message": e.message} for e in errors]}


# -- format_code ---------------------------------------------------------------------------


@tool(
    "format_code",
    "Format a file (or the lines `start_line`..`end_line`) with the language's formatter "
    "(ruff for Python, gopls for Go, clangd for C/C++; without a formatting server, the "
    "language's standard formatter from PATH, named in `formatter`: gofmt, ruff format, "
    "clang-format, shfmt, prettier). Returns the unified diff; with "
    "`apply` (the default) the file is written, atomically and only if it did not change "
    "meanwhile. `changed` is false when the file is already formatted.",
    FormatArgs,
    title="Format code",
    idempotent=True,
    write_switch="apply",
    writes=lambda args: args.apply,
)
async def format_code(ctx: ToolContext, args: FormatArgs) -> dict[str, Any]:
    manager = ctx.session.lsp
    source = source_file(manager, args.path)
    ranged = args.start_line is not None or args.end_line is not None
    first = args.start_line if args.start_line is not None else 1
    last = args.end_line if args.end_line is not None else source.line_count
    if ranged:
        check_lines(source, first, last)

    method = "textDocument/rangeFormatting" if ranged else "textDocument/formatting"

    def params(doc: DocumentContext) -> Any:
        if not ranged:
            return shapes.document_params(method, doc.uri, options=FORMATTING_OPTIONS)
        end = len(doc.index.line(last - 1)) + 1
        rng = shapes.structure(doc.range(first, 1, last, end), lsp.Range)
        return shapes.document_params(method, doc.uri, range=rng, options=FORMATTING_OPTIONS)

    try:
        answer = await manager.request(source.path, method, params, wait_ready=False, snapshot=True)
    except ToolError as exc:
        formatter = formatter_for(source.language)
        unformatted = (ErrorKind.LSP_UNAVAILABLE, ErrorKind.UNSUPPORTED_BY_SERVER)
        if exc.kind not in unformatted or ranged or formatter is None:
            raise
        left_out = ctx.session.narrowed.get(source.language, [])
        kept = manager.servers_of(source.language)
        narrowed = narrowed_out(formatter, source.language, source.shown, kept, left_out)
        if narrowed is not None:
            raise narrowed from None
        return await _format_with(ctx, source, formatter, apply=args.apply)
    why = manager.formatting_off(answer.server)
    if why is not None:
        raise ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"{answer.server} does not format {source.shown!r} in an untrusted root: {why}; "
            "trust the root (codeward trust) to format it.",
            server=answer.server,
            restricted=True,
        )
    edits = shapes.answer(answer.result, answer.server, method) or []
    result, after = await write_checked(
        ctx,
        "format_code",
        lsp.WorkspaceEdit(changes={source.path.as_uri(): edits}),
        answer.encoding,
        _basis(answer),
        apply=args.apply,
    )
    return {
        "changed": bool(result.files_changed),
        "diff": result.diff,
        "applied": result.applied,
        **after,
    }


async def _format_with(
    ctx: ToolContext, source: SourceFile, formatter: Formatter, *, apply: bool
) -> dict[str, Any]:
    """Format the whole file with the language's standard formatter from PATH."""
    root = ctx.session.root
    data, _ = await trio.to_thread.run_sync(
        read_file, source.path, root, ctx.session.config.lsp.max_file_bytes
    )
    old = data.decode("utf-8")
    new = await run_formatter(formatter, root, source.shown, old, trusted=ctx.session.trusted)
    edit = whole_text_edit(source.path.as_uri(), old, new)
    basis = Basis({source.path: (0, content_hash(data))})
    result, after = await write_checked(ctx, "format_code", edit, "utf-32", basis, apply=apply)
    return {
        "changed": bool(result.files_changed),
        "diff": result.diff,
        "applied": result.applied,
        "formatter": formatter.name,
        **after,
    }


# -- get_code_actions ----------------------------------------------------------------------


@tool(
    "get_code_actions",
    "List the code actions (quick fixes, refactorings, source actions such as organize "
    "imports) the language servers offer for lines `line`..`end_line`, with the diagnostics "
    "they fix (no `line`: the whole file); `kinds` keeps only those kinds. Give `apply` (an "
    'index from `actions`, or an exact title) to apply one, or `"preferred"` to apply '
    "every preferred quick fix (and the `source.fixAll` actions when `kinds` asks for them) "
    "in one atomic write; the result then has `files_changed`, `diff` and "
    "`diagnostics_after`.",
    CodeActionArgs,
    title="Get or apply code actions",
    writes=lambda args: args.apply is not None,
)
async def get_code_actions(ctx: ToolContext, args: CodeActionArgs) -> dict[str, Any]:
    manager = ctx.session.lsp
    source = source_file(manager, args.path)
    start = args.line
    if args.symbol is not None:
        if args.line is not None:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `line` or `symbol`, not both.")
        _, at = await locate(ctx, PositionArgs(path=args.path, symbol=args.symbol))
        start = at.line
    if start is None and args.end_line is not None:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `line` with `end_line`.")
    first = start if start is not None else 1
    last = args.end_line if args.end_line is not None else (start or source.line_count)
    check_lines(source, first, last)
    if isinstance(args.apply, str) and not args.apply:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `apply` as an index or a title.")
    diagnostics = await manager.server_diagnostics(source.path)

    def params(doc: DocumentContext) -> Any:
        version, items = diagnostics.get(doc.server, (None, []))
        context = lsp.CodeActionContext(
            diagnostics=in_lines(items, first - 1, last - 1) if version == doc.version else [],
            only=args.kinds or None,
            trigger_kind=lsp.CodeActionTriggerKind.Invoked,
        )
        end = len(doc.index.line(last - 1)) + 1
        rng = shapes.structure(doc.range(first, 1, last, end), lsp.Range)
        return shapes.document_params(CODE_ACTION, doc.uri, range=rng, context=context)

    def at_diagnostics(server: str) -> list[Callable[[DocumentContext], Any]]:
        """A server whose quick fixes are asked at each diagnostic's own range: one
        request more per diagnostic of the lines (the first MAX_AT_DIAGNOSTICS)."""
        if manager.code_actions_at(server) != "diagnostic":
            return []
        _, items = diagnostics.get(server, (None, []))
        found = in_lines(items, first - 1, last - 1)[:MAX_AT_DIAGNOSTICS]
        return [functools.partial(at_diagnostic, d, args.kinds) for d in found]

    answers, errors = await manager.request_all(
        source.path, CODE_ACTION, params, snapshot=True, also=at_diagnostics
    )
    actions, unreadable = collect(answers, source.path.as_uri(), args.kinds)
    if unreadable and len(unreadable) == len(answers):
        raise unreadable[0]  # no server's answer could be read
    errors += unreadable
    result: dict[str, Any] = {"actions": [a.public() for a in actions], **_errors(errors)}
    if args.apply is None:
        return result
    if args.apply == PREFERRED:
        return {**result, **await _apply_preferred(ctx, source, actions, answers, args.kinds)}
    action = choose(actions, args.apply)
    basis = next((_basis(a) for a in answers if a.server == action.server), Basis())
    # (the file asked about: an action's command may write others, known only as it runs)
    await approve_writes(ctx, "get_code_actions", [source.path])
    check = Aftermath.plan(ctx.session, [source.path])
    check.took(await manager.files_diagnostics(check.asked, check.changing))
    done = await _apply_action(ctx, manager, action, basis)
    after = await manager.files_diagnostics(check.to_ask(done.paths, done.deleted), done.paths)
    report = check.report(done.paths, done.deleted, after)
    return {
        **result,
        "action": {"index": action.index, "title": action.title},
        **_edit_result(done),
        "applied": True,
        "diagnostics_after": report.public(),
    }


async def _apply_preferred(
    ctx: ToolContext,
    source: SourceFile,
    actions: list[Action],
    answers: list[Answer],
    kinds: list[str] | None,
) -> dict[str, Any]:
    """Every preferred quick fix (and fix-all action, when asked for by kind), resolved,
    as one WorkspaceEdit written atomically; an action that overlaps one already taken,
    or that only runs a command, is skipped and says why."""
    manager = ctx.session.lsp
    fix_all = any(k == FIX_ALL or k.startswith(FIX_ALL + ".") for k in kinds or [])
    chosen = [
        a
        for a in actions
        if a.disabled is None and (a.preferred or (fix_all and matches(a.kind, [FIX_ALL])))
    ]
    by_server = {a.server: a for a in answers}
    basis = Basis()
    edits: list[list[Replacement]] = []
    unusable: dict[int, str] = {}
    for position, action in enumerate(chosen):
        item, answer, server = action.item, by_server[action.server], action.server
        if isinstance(item, lsp.Command):
            unusable[position] = "it only runs a command; apply it by its index"
            edits.append([])
            continue
        if item.edit is None and await manager.offers(server, "codeAction/resolve"):
            answer = await manager.ask(server, "codeAction/resolve", action.raw, snapshot=True)
            if answer.result is not None:
                resolved = shapes.answer(answer.result, server, "codeAction/resolve")
                item = resolved if isinstance(resolved, lsp.CodeAction) else item
        basis.documents.update(_basis(answer).documents)
        try:
            edits.append(replacements(answer, item.edit))
        except ToolError as exc:
            unusable[position] = exc.message
            edits.append([])
        if item.command is not None and position not in unusable:
            unusable[position] = "it also runs a command; apply it by its index"
            edits[-1] = []
    combined = combine(edits)
    skipped = [
        {"index": chosen[i].index, "title": chosen[i].title, "reason": unusable.get(i, why)}
        for i, why in sorted(combined.skipped.items())
    ]
    taken = [{"index": chosen[i].index, "title": chosen[i].title} for i in combined.taken]
    if combined.empty:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "No preferred quick fix with an edit is offered for these lines"
            + (
                f" ({'; '.join(s['title'] + ': ' + s['reason'] for s in skipped)})"
                if skipped
                else ""
            )
            + "; list the actions and apply one by its index.",
        )
    done, after = await write_checked(
        ctx, "get_code_actions", combined.edit, "utf-32", basis, apply=True
    )
    return {
        "applied_actions": taken,
        "skipped_actions": skipped,
        **_edit_result(done),
        "applied": done.applied,
        **after,
    }


async def _apply_action(
    ctx: ToolContext, manager: LanguageService, action: Action, basis: Basis
) -> EditResult:
    """The action's edit (resolved first when the server sends it later), then its command."""
    session = ctx.session
    server = action.server
    item = action.item
    done = EditResult()
    encoding = action.encoding
    if (
        isinstance(item, lsp.CodeAction)
        and item.edit is None
        and await manager.offers(server, "codeAction/resolve")
    ):
        resolved = await manager.ask(server, "codeAction/resolve", action.raw, snapshot=True)
        basis, encoding = _basis(resolved), resolved.encoding
        if resolved.result is not None:
            item = shapes.answer(resolved.result, server, "codeAction/resolve")
    if isinstance(item, lsp.CodeAction) and item.edit is not None:
        done.merge(
            await apply_workspace_edit(session.writer, item.edit, encoding, basis, apply=True)
        )
    command = item if isinstance(item, lsp.Command) else item.command
    if command is not None:
        # the edits the server asks for while it runs the command go through the edit layer
        taken = ServerEdits(session.writer)
        await manager.execute_command(server, shapes.unstructure(command), taken.on_edit)
        done.merge(taken.result)
        if taken.refused and not taken.result.applied:
            raise taken.refused[0]
    return done


def _basis(answer: Answer) -> Basis:
    """The content the server computed `answer` from (asked with `snapshot=True`)."""
    return Basis(answer.versions or {})


# -- rename_symbol -------------------------------------------------------------------------


@tool(
    "rename_symbol",
    "Rename the symbol at a position everywhere the language server knows it is used, "
    "across files. Returns the files changed, the number of edits and the unified diff; "
    "with `apply` (the default) every file is written atomically, and only if none changed "
    "since the server computed the rename.",
    RenameArgs,
    title="Rename a symbol",
    write_switch="apply",
    writes=lambda args: args.apply,
)
async def rename_symbol(ctx: ToolContext, args: RenameArgs) -> dict[str, Any]:
    name = args.new_name
    if not name.strip() or any(c in name for c in "\n\r\x00"):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "Give `new_name` as a non-empty name on one line.",
        )
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    invalid = invalid_reason(source.language, name)
    if invalid is not None:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{invalid}; give a valid name.")
    where = f"{at.name!r} (line {line}, character {character} of {source.shown!r})"
    server = await manager.route(source.language, "textDocument/rename")

    def prepare(doc: DocumentContext) -> Any:
        position = lsp.Position(**doc.position(line, character))
        return shapes.document_params("textDocument/prepareRename", doc.uri, position=position)

    if manager.supports(server, "textDocument/prepareRename"):
        try:
            prepared = await manager.request(source.path, "textDocument/prepareRename", prepare)
        except ToolError as exc:
            if exc.kind is not ErrorKind.LSP_ERROR or "code" not in exc.details:
                raise
            raise _refused(where, source.shown, exc) from None
        if prepared.result is None:
            raise _nothing(where)

    def params(doc: DocumentContext) -> Any:
        position = lsp.Position(**doc.position(line, character))
        return shapes.document_params(
            "textDocument/rename", doc.uri, position=position, new_name=name
        )

    try:
        answer = await manager.request(source.path, "textDocument/rename", params, snapshot=True)
    except ToolError as exc:
        if exc.kind is not ErrorKind.LSP_ERROR or "code" not in exc.details:
            raise
        raise _refused(where, source.shown, exc) from None
    edit = shapes.answer(answer.result, answer.server, "textDocument/rename")
    if edit is None:
        raise _nothing(where)
    result, after = await write_checked(
        ctx, "rename_symbol", edit, answer.encoding, _basis(answer), apply=args.apply
    )
    if not result.files_changed:  # nothing written: say why, never "0 files changed"
        if result.edits:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"The symbol at {where} is already named {name!r}; give a different name.",
            )
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The {answer.server} language server renames nothing at {where} to {name!r} "
            "(it may not accept that name there); give a valid name, or another position.",
            server=answer.server,
        )
    shown = {**_edit_result(result), **after}
    # the old name where the server's edit did not reach (a file it does not analyse, docs)
    skipped = [] if args.apply else result.files_changed
    mentioned = await left_out.mentions(ctx.session, at.name, skipped)
    if mentioned:
        shown["unanalysed_mentions"] = mentioned
    if at.by != "position":
        shown["at"] = at.public()
    if answer.partial:
        shown["partial"] = True
    return shown


def _refused(where: str, shown: str, error: ToolError) -> ToolError:
    """The server's error answer to a rename: the file changed while it computed (a stale
    edit, to run again), or nothing at that position can be renamed."""
    if error.details.get("code") == CONTENT_MODIFIED:
        return ToolError(
            ErrorKind.STALE_EDIT,
            f"{shown!r} changed while the language server computed the rename, so nothing "
            "was written; run the tool again.",
            path=shown,
        )
    return _nothing(where, error.message)


def _nothing(where: str, reason: str = "") -> ToolError:
    if reason:
        return ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The symbol at {where} cannot be renamed ({reason.rstrip('.')}); give the "
            "position of a name the project defines.",
        )
    return ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"There is no symbol to rename at {where}; give the position of a name.",
    )
