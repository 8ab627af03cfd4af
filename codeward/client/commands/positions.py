"""Positions on the command line: `PATH:LINE:COL`, `PATH:LINE:NAME`, `PATH:SYMBOL` or `SYMBOL`,
as a tool's arguments."""

from __future__ import annotations

from typing import Any

from codeward.client.invocation import Invocation, UsageError

POSITION = "PATH:LINE:COL|PATH:LINE:NAME|PATH:SYMBOL|SYMBOL"
POSITION_HELP = (
    "a line and column, a line and the identifier on it, or a name path (Class.method) in "
    "a file or across the project"
)


def parse_position(spec: str, count: int) -> tuple[str, list[int]]:
    """`PATH:LINE:COL` (count 2) or `PATH:LINE` (count 1): the path and 1-based numbers."""
    shape = "PATH:LINE:COL" if count == 2 else "PATH:LINE"
    pieces = spec.rsplit(":", count)
    if len(pieces) != count + 1 or not pieces[0]:
        raise UsageError(f"expected {shape}, got {spec!r}")
    try:
        numbers = [int(piece) for piece in pieces[1:]]
    except ValueError:
        raise UsageError(f"expected {shape} with whole numbers, got {spec!r}") from None
    if any(n < 1 for n in numbers):
        raise UsageError(f"lines and columns count from 1, got {spec!r}")
    return pieces[0], numbers


def position_arguments(inv: Invocation, spec: str) -> dict[str, Any]:
    """`PATH:LINE:COL`, `PATH:LINE:NAME` (the identifier on the line), `PATH:SYMBOL` (a name
    path in the file) or `SYMBOL` (a name path across the project)."""
    if ":" not in spec:
        return {"symbol": spec}
    pieces = spec.rsplit(":", 2)
    if len(pieces) == 3 and pieces[1].isdigit() and not pieces[2].isdigit():
        path, (line,) = parse_position(f"{pieces[0]}:{pieces[1]}", 1)
        return {"path": inv.input_path(path), "line": line, "name": pieces[2]}
    if not pieces[-1].isdigit() and not (len(pieces) > 1 and pieces[-2].isdigit()):
        path, _, symbol = spec.partition(":")
        if path and symbol:
            return {"path": inv.input_path(path), "symbol": symbol}
    path, (line, character) = parse_position(spec, 2)
    return {"path": inv.input_path(path), "line": line, "character": character}
