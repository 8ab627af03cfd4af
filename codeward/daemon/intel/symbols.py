"""Symbols: kind names, the document tree and workspace matches in the tools' shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from codeward.daemon.intel.locations import Locator
from codeward.daemon.lsp.positions import Encoding

SymbolKind = Literal[
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum_member",
    "struct",
    "event",
    "operator",
    "type_parameter",
]
SYMBOL_KINDS: tuple[str, ...] = get_args(SymbolKind)


def kind_name(kind: Any) -> str:
    """The name of an LSP `SymbolKind` (1-based), e.g. 5 -> `class`."""
    if isinstance(kind, int) and not isinstance(kind, bool) and 1 <= kind <= len(SYMBOL_KINDS):
        return SYMBOL_KINDS[kind - 1]
    return "unknown"


class Budget:
    """How many more symbols a result may hold."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.truncated = False

    def take(self) -> bool:
        if self.left <= 0:
            self.truncated = True
            return False
        self.left -= 1
        return True


CALLABLE = frozenset({"function", "method", "constructor", "operator"})


@dataclass(frozen=True)
class Outline:
    """Which symbols to show. The default is the outline a person wants: classes, functions,
    methods and the names of modules and classes, without what lives inside a function
    (parameters, local variables, nested functions). `all` shows everything; `kinds` keeps
    those kinds (and the containers on the way to them); `depth` cuts the tree (1: top level)."""

    all: bool = False
    kinds: frozenset[str] | None = None
    depth: int | None = None

    def select(self, items: Any, level: int = 1) -> list[dict[str, Any]]:
        """The `DocumentSymbol`s (or flat `SymbolInformation`s) of `items` to show, with
        their `children` selected the same way."""
        items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        if self.depth is not None and level > self.depth:
            return []
        if not self.all and any("location" in i for i in items):
            items = _outside_callables(items)
        chosen: list[dict[str, Any]] = []
        for item in items:
            kind = kind_name(item.get("kind"))
            children: list[dict[str, Any]] = []
            if "children" in item and (self.all or kind not in CALLABLE):
                children = self.select(item.get("children"), level + 1)
            if self.kinds is not None and kind not in self.kinds and not children:
                continue
            chosen.append({**item, "children": children} if "children" in item else item)
        return chosen


def _outside_callables(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flat symbols without those inside a function's range (its parameters and locals)."""
    spans = [
        (_start(i["location"]["range"]), _end(i["location"]["range"]), i["location"].get("uri"))
        for i in items
        if kind_name(i.get("kind")) in CALLABLE and _has_range(i)
    ]
    kept: list[dict[str, Any]] = []
    for item in items:
        if _has_range(item):
            uri, start = item["location"].get("uri"), _start(item["location"]["range"])
            if any(u == uri and first < start <= last for first, last, u in spans):
                continue
        kept.append(item)
    return kept


def _has_range(item: dict[str, Any]) -> bool:
    location = item.get("location")
    return isinstance(location, dict) and isinstance(location.get("range"), dict)


def _start(rng: dict[str, Any]) -> tuple[int, int]:
    return rng["start"]["line"], rng["start"]["character"]


def _end(rng: dict[str, Any]) -> tuple[int, int]:
    return rng["end"]["line"], rng["end"]["character"]


def inside_callable(
    position: tuple[int, int], symbols: Any, point: Callable[[Any], tuple[int, int]]
) -> bool:
    """Whether `position` lies inside a function or method of the `DocumentSymbol` tree
    `symbols`, its name excepted: a parameter, a local or a nested function. `point` turns
    an LSP position into the units of `position`."""
    for item in symbols if isinstance(symbols, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("range"), dict):
            continue
        rng = item["range"]
        selection = item.get("selectionRange") or rng
        if not point(rng["start"]) <= position <= point(rng["end"]):
            continue
        if kind_name(item.get("kind")) in CALLABLE and position != point(selection["start"]):
            return True
        if inside_callable(position, item.get("children"), point):
            return True
    return False


def document_symbols(
    result: Any, uri: str, locator: Locator, encoding: Encoding, budget: Budget
) -> list[dict[str, Any]]:
    """The hierarchical tree of `DocumentSymbol`s, or flat `SymbolInformation`s with containers."""
    items = result if isinstance(result, list) else []
    shaped: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "location" in item:  # SymbolInformation: flat
            flat = information(item, locator, encoding)
            if flat is not None and budget.take():
                shaped.append(flat)
            continue
        rng = item.get("range")
        if not isinstance(rng, dict) or not budget.take():
            continue
        selection: dict[str, Any] = item.get("selectionRange") or rng
        if not isinstance(selection, dict):
            selection = rng
        line, char, end_line, end_char = locator.span(uri, rng, encoding)
        name_line, name_char, _, _ = locator.span(uri, selection, encoding)
        symbol: dict[str, Any] = {
            "name": item["name"],
            "kind": kind_name(item.get("kind")),
            "detail": item.get("detail") or None,
            "line": name_line,
            "character": name_char,
            "range": {
                "line": line,
                "character": char,
                "end_line": end_line,
                "end_character": end_char,
            },
            "children": document_symbols(item.get("children"), uri, locator, encoding, budget),
        }
        shaped.append(symbol)
    return shaped


def information(
    item: dict[str, Any], locator: Locator, encoding: Encoding
) -> dict[str, Any] | None:
    """A `SymbolInformation` or `WorkspaceSymbol` as `{name, kind, container, path, ...}`."""
    location = item.get("location")
    if not isinstance(location, dict) or not isinstance(location.get("uri"), str):
        return None
    uri = location["uri"]
    symbol: dict[str, Any] = {
        "name": item.get("name"),
        "kind": kind_name(item.get("kind")),
        "container": item.get("containerName") or None,
    }
    rng = location.get("range")
    if isinstance(rng, dict):
        where = locator.location(uri, rng, encoding)
        if where is None:
            return None
        symbol.update(where)
    else:  # a WorkspaceSymbol without a range: the file only
        place = locator.place(uri)
        if place is None:
            return None
        symbol["path"] = place[0]
    return symbol


def rank(query: str, name: str) -> int:
    """0 for an exact name, 1 for a prefix, 2 for a case-insensitive prefix, 3 otherwise."""
    if name == query:
        return 0
    if name.startswith(query):
        return 1
    if name.lower().startswith(query.lower()):
        return 2
    return 3
