"""Locations as compilers and grep print them: `path:line:col: text`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from codeward.protocol.render.values import as_int


def start(item: dict[str, Any]) -> tuple[int | None, int | None]:
    """1-based line and column of an item: `line` + `character`/`column`, else `range`."""
    line = as_int(item.get("line"))
    col = as_int(item.get("character", item.get("column")))
    rng = item.get("range")
    if line is None and isinstance(rng, dict):
        first = rng.get("start", rng)
        if isinstance(first, dict):
            line = as_int(first.get("line"))
            col = as_int(first.get("character", first.get("column")))
    return line, col


def location(item: dict[str, Any], path: str | None = None) -> str:
    """`path:line:col` (the parts that are known)."""
    where = item.get("path") or item.get("file") or item.get("uri") or path or "?"
    line, col = start(item)
    text = str(where)
    if line is not None:
        text += f":{line}"
        if col is not None:
            text += f":{col}"
    return text


def location_line(item: dict[str, Any], text: str | None = None) -> str:
    """`path:line:col: text`, where text defaults to the item's `preview`."""
    body = item.get("preview") if text is None else text
    head = location(item)
    return f"{head}: {body}" if body else head


def locations(items: Iterable[Any]) -> list[str]:
    return [location_line(item) for item in items if isinstance(item, dict)]
