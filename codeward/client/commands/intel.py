"""The code-intelligence commands: diagnostics, the position commands (hover, definition,
references...), symbols, call and type hierarchies, signatures and the review of a change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codeward.client.commands.positions import parse_position, position_arguments
from codeward.client.invocation import EXIT_OK, Invocation, UsageError
from codeward.protocol.render.diagnostics import diagnostics
from codeward.protocol.render.intel import (
    calls,
    definition,
    hover,
    implementations,
    references,
    signatures,
    symbols,
    type_definition,
    types,
)
from codeward.protocol.render.review import review


def cmd_diagnostics(inv: Invocation) -> int:
    arguments: dict[str, Any] = {}
    if inv.args.path:
        arguments["path"] = inv.input_path(inv.args.path)
    if inv.args.severity:
        arguments["severity"] = inv.args.severity
    if inv.args.limit is not None:
        arguments["limit"] = inv.args.limit
    if inv.args.since:
        arguments["since"] = inv.args.since
    inv.show("diagnostics", inv.tool("get_diagnostics", arguments), diagnostics)
    return EXIT_OK


def _position_command(
    command: str, tool: str, lines: Callable[[dict[str, Any]], list[str]]
) -> Callable[[Invocation], int]:
    def run(inv: Invocation) -> int:
        arguments = position_arguments(inv, inv.args.position)
        if command == "references":
            arguments["include_declaration"] = inv.args.include_declaration
        inv.show(command, inv.tool(tool, arguments), lines)
        return EXIT_OK

    run.__name__ = f"cmd_{command.replace('-', '_')}"
    return run


POSITION_COMMANDS: list[tuple[str, Callable[[Invocation], int], str]] = [
    (
        "hover",
        _position_command("hover", "get_hover_info", hover),
        "type and docs of the symbol at a position",
    ),
    (
        "definition",
        _position_command("definition", "go_to_definition", definition),
        "where the symbol at a position is defined",
    ),
    (
        "references",
        _position_command("references", "find_references", references),
        "references to the symbol at a position",
    ),
    (
        "implementations",
        _position_command("implementations", "find_implementations", implementations),
        "implementations of the interface or method at a position",
    ),
    (
        "type-definition",
        _position_command("type-definition", "get_type_definition", type_definition),
        "where the type of the symbol at a position is defined",
    ),
]


def cmd_symbols(inv: Invocation) -> int:
    arguments: dict[str, Any]
    path: str | None = None
    if inv.args.workspace:
        arguments = {"scope": "workspace", "query": inv.args.target or ""}
        if inv.args.language is not None:
            arguments["language"] = inv.args.language
    else:
        if not inv.args.target:
            raise UsageError("give a PATH, or --workspace QUERY")
        path = inv.args.target
        arguments = {"scope": "document", "path": inv.input_path(inv.args.target)}
    if inv.args.limit is not None:
        arguments["limit"] = inv.args.limit
    if inv.args.all:
        arguments["all"] = True
    if inv.args.kinds:
        arguments["kinds"] = [k for item in inv.args.kinds for k in item.split(",") if k]
    if inv.args.depth is not None:
        arguments["depth"] = inv.args.depth
    result = inv.tool("get_symbols", arguments)
    inv.show("symbols", result, lambda r: symbols(r, r.get("path") or path))
    return EXIT_OK


def cmd_calls(inv: Invocation) -> int:
    arguments = position_arguments(inv, inv.args.position) | {"direction": inv.args.direction}
    inv.show("calls", inv.tool("call_hierarchy", arguments), calls)
    return EXIT_OK


def cmd_types(inv: Invocation) -> int:
    arguments = position_arguments(inv, inv.args.position) | {"direction": inv.args.direction}
    inv.show("types", inv.tool("type_hierarchy", arguments), types)
    return EXIT_OK


def cmd_signature(inv: Invocation) -> int:
    path, (line, character) = parse_position(inv.args.position, 2)  # a place inside a call, as is
    arguments = {"path": inv.input_path(path), "line": line, "character": character}
    inv.show("signature", inv.tool("signature_help", arguments), signatures)
    return EXIT_OK


def cmd_review(inv: Invocation) -> int:
    arguments: dict[str, Any] = {"since": inv.args.revision}
    if inv.args.path:
        arguments["path"] = inv.input_path(inv.args.path)
    inv.show("review", inv.tool("review_changes", arguments), review)
    return EXIT_OK
