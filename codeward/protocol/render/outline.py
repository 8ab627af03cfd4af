"""A file's symbols as an agent reads them: an outline, a line per run of siblings of one
kind."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from codeward.protocol.render.intel import symbol_text
from codeward.protocol.render.locations import location, start

# Short words for the commonest symbol kinds in an outline (the rest keep their name).
_SHORT_KINDS = {
    "function": "fn",
    "method": "fn",
    "constructor": "fn",
    "variable": "var",
    "constant": "const",
    "property": "prop",
    "enum_member": "member",
    "type_parameter": "type",
}
# A name printed bare: no space, quote or colon at its end, and not a number (which would
# read as a line); any other is printed as a JSON string.
_BARE_NAME = re.compile(r"[^\s\"]*[^\s\":]")


def _kind_word(symbol: dict[str, Any]) -> str:
    kind = symbol.get("kind")
    return _SHORT_KINDS.get(kind, kind) if isinstance(kind, str) and kind else "?"


def _name(symbol: dict[str, Any]) -> str:
    name = str(symbol.get("name", "?"))
    if _BARE_NAME.fullmatch(name) and not name.isdigit():
        return name
    return json.dumps(name, ensure_ascii=False)


def _groups(items: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    """Runs of siblings of one kind (and container, in a flat list); a symbol with children
    stands alone (they follow it)."""
    group: list[dict[str, Any]] = []
    for symbol in items:
        if group and (
            symbol.get("children")
            or group[-1].get("children")
            or _kind_word(symbol) != _kind_word(group[0])
            or symbol.get("container") != group[0].get("container")
        ):
            yield group
            group = []
        group.append(symbol)
    if group:
        yield group


def _group_line(group: list[dict[str, Any]], indent: int) -> str:
    """`kind@col name:line name:line` when the names share their column, else
    `kind name:line:col ...`; a name without a position is printed alone; `(in C)` after
    the symbols of container C in a flat list."""
    starts = [start(symbol) for symbol in group]
    columns = {col for line, col in starts if line is not None}
    shared = columns.pop() if len(columns) == 1 and None not in columns else None
    head = _kind_word(group[0]) + (f"@{shared}" if shared is not None else "")
    names = []
    for symbol, (line, col) in zip(group, starts, strict=True):
        text = _name(symbol)
        if line is not None:
            text += f":{line}" + (f":{col}" if shared is None and col is not None else "")
        names.append(text)
    container = group[0].get("container")  # a flat list's nesting
    tail = f" (in {container})" if container else ""
    return " " * indent + head + " " + " ".join(names) + tail


def outline(result: dict[str, Any]) -> list[str]:
    """Document symbols as an indented outline, one line per run of siblings of one kind:
    `fn@9 area:5 size:8` is two functions whose names stand at column 9 of lines 5 and 8
    (the line and character the position tools take); children follow their parent, one
    space deeper. Workspace matches print as `path:line:col: kind name (in container)`."""
    if result.get("scope") == "workspace":
        return [
            f"{location(s)}: {symbol_text(s, 0)}"
            for s in result.get("symbols") or []
            if isinstance(s, dict)
        ]
    lines: list[str] = []

    def walk(items: Any, indent: int) -> None:
        symbols = [s for s in items if isinstance(s, dict)] if isinstance(items, list) else []
        for group in _groups(symbols):
            lines.append(_group_line(group, indent))
            walk(group[-1].get("children"), indent + 1)

    walk(result.get("symbols"), 0)
    return lines
