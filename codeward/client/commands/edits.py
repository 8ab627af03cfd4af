"""The commands that change files: format, code actions, rename, edit, edit-symbol and move
(each a dry run or preview on request)."""

from __future__ import annotations

from typing import Any

from codeward.client.commands.positions import parse_position, position_arguments
from codeward.client.invocation import EXIT_OK, EXIT_TOOL_ERROR, Invocation, UsageError
from codeward.protocol.render.edits import actions, edit


def cmd_format(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "apply": not inv.args.dry_run,
    }
    if inv.args.lines:
        start, sep, end = inv.args.lines.partition("-")
        if not (start.isdigit() and end.isdigit() and sep) or not 1 <= int(start) <= int(end):
            raise UsageError(f"--lines wants START-END, such as 3-10, got {inv.args.lines!r}")
        arguments |= {"start_line": int(start), "end_line": int(end)}
    inv.show("format", inv.tool("format_code", arguments, confirm=True), edit)
    return EXIT_OK


def cmd_actions(inv: Invocation) -> int:
    spec = inv.args.position
    path, _, lines = spec.rpartition(":")
    start, _, end = lines.partition("-")
    _, (line,) = parse_position(f"{path}:{start}", 1)
    arguments: dict[str, Any] = {"path": inv.input_path(path), "line": line}
    if end:
        _, (end_line,) = parse_position(f"{path}:{end}", 1)
        if end_line < line:
            raise UsageError(f"the end line comes before the start line in {spec!r}")
        arguments["end_line"] = end_line
    if inv.args.kinds:
        arguments["kinds"] = inv.args.kinds
    if inv.args.apply is not None:
        choice = inv.args.apply
        arguments["apply"] = int(choice) if choice.isdigit() else choice
    inv.show("actions", inv.tool("get_code_actions", arguments, confirm=True), actions)
    return EXIT_OK


def cmd_rename(inv: Invocation) -> int:
    if not inv.args.new_name:
        raise UsageError("the new name is empty")
    arguments = position_arguments(inv, inv.args.position) | {
        "new_name": inv.args.new_name,
        "apply": not inv.args.dry_run,
    }
    inv.show("rename", inv.tool("rename_symbol", arguments, confirm=True), edit)
    return EXIT_OK


def cmd_edit(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "content": inv.stdin.read(),
        "mode": inv.args.mode,
        "create": inv.args.create,
    }
    if inv.args.expected_hash:
        arguments["expected_hash"] = inv.args.expected_hash
    if inv.args.severity:
        arguments["severity"] = inv.args.severity
    result = inv.tool("edit_file", arguments, confirm=True)
    inv.show("edit", result, edit)
    return EXIT_TOOL_ERROR if result.get("refused") else EXIT_OK


def cmd_edit_symbol(inv: Invocation) -> int:
    text = inv.args.text if inv.args.text is not None else inv.stdin.read()
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "symbol": inv.args.symbol,
        "action": inv.args.action,
        "text": text,
        "mode": inv.args.mode,
    }
    if inv.args.expected_hash:
        arguments["expected_hash"] = inv.args.expected_hash
    result = inv.tool("edit_symbol", arguments)
    inv.show("edit-symbol", result, edit)
    return EXIT_TOOL_ERROR if result.get("refused") else EXIT_OK


def cmd_move(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "new_path": inv.input_path(inv.args.new_path),
        "mode": "preview" if inv.args.dry_run else "apply",
        "force": inv.args.force,
    }
    inv.show("move", inv.tool("move_file", arguments), edit)
    return EXIT_OK
