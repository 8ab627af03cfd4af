"""Symbols: kind names, the document tree and workspace matches in the tools' shape."""

from __future__ import annotations

from typing import Any

from codeward.daemon.intel.locations import Locator
from codeward.daemon.lsp.positions import Encoding

SYMBOL_KINDS = (
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
)


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
