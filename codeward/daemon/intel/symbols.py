"""Symbols: kind names, the document tree and workspace matches in the tools' shape."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import attrs
import msgspec
from lsprotocol import types as lsp

from codeward.daemon.intel.locations import Locator
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.types import Symbol

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

DocumentSymbols = Sequence[lsp.DocumentSymbol] | Sequence[lsp.SymbolInformation]
Pos = tuple[int, int]
Point = Callable[[lsp.Position], Pos]


@dataclass(frozen=True)
class Outline:
    """Which symbols to show. The default is the outline a person wants: classes, functions,
    methods and the names of modules and classes, without what lives inside a function
    (parameters, local variables, nested functions). `all` shows everything; `kinds` keeps
    those kinds (and the containers on the way to them); `depth` cuts the tree (1: top level)."""

    all: bool = False
    kinds: frozenset[str] | None = None
    depth: int | None = None

    def select(self, items: DocumentSymbols | None, level: int = 1) -> DocumentSymbols:
        """The `DocumentSymbol`s (or flat `SymbolInformation`s) of `items` to show, with
        their `children` selected the same way."""
        if not items or (self.depth is not None and level > self.depth):
            return []
        if isinstance(items[0], lsp.SymbolInformation):
            flat = [i for i in items if isinstance(i, lsp.SymbolInformation)]
            if not self.all:
                flat = _outside_callables(flat)
            return [i for i in flat if self.kinds is None or kind_name(i.kind) in self.kinds]
        chosen: list[lsp.DocumentSymbol] = []
        for item in items:
            if not isinstance(item, lsp.DocumentSymbol):
                continue
            kind = kind_name(item.kind)
            children: Sequence[lsp.DocumentSymbol] = []
            if item.children and (self.all or kind not in CALLABLE):
                children = self.select(item.children, level + 1)  # type: ignore[assignment]
            if self.kinds is not None and kind not in self.kinds and not children:
                continue
            chosen.append(attrs.evolve(item, children=children))
        return chosen


def _outside_callables(items: list[lsp.SymbolInformation]) -> list[lsp.SymbolInformation]:
    """Flat symbols without those inside a function's range (its parameters and locals)."""
    spans = [
        (_point(i.location.range.start), _point(i.location.range.end), i.location.uri)
        for i in items
        if kind_name(i.kind) in CALLABLE
    ]
    return [
        item
        for item in items
        if not any(
            uri == item.location.uri and first < _point(item.location.range.start) <= last
            for first, last, uri in spans
        )
    ]


def _point(position: lsp.Position) -> tuple[int, int]:
    return position.line, position.character


class Callables:
    """Where the functions and methods of a `DocumentSymbol` tree lie, asked by `holds` of
    many positions (a workspace-symbols call asks it of hundreds of symbols in the same
    files): each symbol's range is turned into client positions once, when first needed.
    `point` turns an LSP position into the units of the positions asked."""

    def __init__(self, symbols: DocumentSymbols | None, point: Point) -> None:
        self._symbols = symbols or []
        self._point = point
        # (start, end, the name's start for a function (else None), its children's)
        self._nodes: list[tuple[Pos, Pos, Pos | None, Callables | None]] | None = None

    def holds(self, position: tuple[int, int]) -> bool:
        """Whether `position` lies inside a function or method, its name excepted: a
        parameter, a local or a nested function."""
        for start, end, name, children in self._converted():
            if not start <= position <= end:
                continue
            if name is not None and position != name:
                return True
            if children is not None and children.holds(position):
                return True
        return False

    def _converted(self) -> list[tuple[Pos, Pos, Pos | None, Callables | None]]:
        if self._nodes is None:
            point = self._point
            self._nodes = [
                (
                    point(item.range.start),
                    point(item.range.end),
                    point(item.selection_range.start) if kind_name(item.kind) in CALLABLE else None,
                    Callables(item.children, point) if item.children else None,
                )
                for item in self._symbols
                if isinstance(item, lsp.DocumentSymbol)
            ]
        return self._nodes


def document_symbols(
    items: DocumentSymbols | None, uri: str, locator: Locator, encoding: Encoding, budget: Budget
) -> list[dict[str, Any]]:
    """The hierarchical tree of `DocumentSymbol`s, or flat `SymbolInformation`s with containers."""
    shaped: list[dict[str, Any]] = []
    for item in items or []:
        if isinstance(item, lsp.SymbolInformation):  # flat
            flat = information(item, locator, encoding)
            if flat is not None and budget.take():
                shaped.append(flat)
            continue
        if not budget.take():
            continue
        line, char, end_line, end_char = locator.span(uri, item.range, encoding)
        name_line, name_char, _, _ = locator.span(uri, item.selection_range, encoding)
        symbol: dict[str, Any] = {
            "name": item.name,
            "kind": kind_name(item.kind),
            "detail": item.detail or None,
            "line": name_line,
            "character": name_char,
            "range": {
                "line": line,
                "character": char,
                "end_line": end_line,
                "end_character": end_char,
            },
            "children": document_symbols(item.children, uri, locator, encoding, budget),
        }
        shaped.append(symbol)
    return shaped


def information(
    item: lsp.SymbolInformation | lsp.WorkspaceSymbol | Symbol,
    locator: Locator,
    encoding: Encoding,
) -> dict[str, Any] | None:
    """A `SymbolInformation` or `WorkspaceSymbol` as `{name, kind, container, path, ...}`."""
    location = item.location
    symbol: dict[str, Any] = {
        "name": item.name,
        "kind": kind_name(item.kind),
        "container": item.container_name or None,
    }
    rng = getattr(location, "range", None)  # none: a WorkspaceSymbol's file alone
    if rng is not None:
        where = locator.location(location.uri, rng, encoding)
        if where is None:
            return None
        symbol.update(where)
    else:  # a WorkspaceSymbol without a range: the file only
        place = locator.place(location.uri)
        if place is None:
            return None
        symbol["path"] = place[0]
    return symbol


def workspace_symbols(data: Any, server: str) -> list[Symbol]:
    """A server's `workspace/symbol` answer (decoded JSON) as `Symbol`s, converted by
    msgspec (a hundred times faster than lsprotocol's hooks for the hundreds an answer may
    hold); an `lsp_error` naming the server and the method when it is off the LSP spec."""
    try:
        return msgspec.convert(data, list[Symbol] | None) or []
    except msgspec.ValidationError as exc:
        raise shapes.off_spec(server, "workspace/symbol", str(exc)) from None


SCAN_LINES = 200  # how far into a symbol's range its name is looked for
# a line that a doc comment holds (`/**`, ` * `, `//`, `#`, `--`, a docstring's quotes)
_COMMENT = re.compile(r"\s*(/\*|\*|//|#|--|;|\"\"\"|''')")


def at_name(locator: Locator, uri: str, symbol: dict[str, Any]) -> bool:
    """Whether a project symbol's name is in its range in the file as it is now; the symbol
    is then shown at the name. A server's range may begin with the doc comment or the
    decorators before the name (intelephense's docblocks, tsserver's decorators), and its
    index may be older than the file: a symbol whose name is not there is dropped, never
    shown with a name the file does not hold."""
    place = locator.place(uri)
    if place is None or not place[1] or "line" not in symbol:
        return True  # an indicator: the standard library, not the project's files
    words = re.findall(r"\w+", symbol["name"])
    if not words:
        return True
    index = locator.index(uri)
    if index is None:
        return False
    name = words[-1]
    first = symbol["line"] - 1
    last = min(symbol.get("end_line", symbol["line"]) - 1, first + SCAN_LINES)
    in_comment: tuple[int, int, str] | None = None
    for number in range(first, last + 1):
        text = index.line(number)
        found = find_word(text, name)
        if found < 0:
            continue
        if _COMMENT.match(text) is None:
            if number != first:
                _move(symbol, number, found, text)
            return True
        in_comment = in_comment or (number, found, text)
    if in_comment is None:
        return False
    number, character, text = in_comment  # `/** doc */ function name()` on one line
    if number != first:
        _move(symbol, number, character, text)
    return True


def find_word(text: str, word: str) -> int:
    """Where `word` first stands in `text` as a whole word (no word character, as regular
    expressions' `\\w` counts them, on either side), or -1: what a pattern per name would
    find, without compiling one per symbol (hundreds of names a call overflow `re`'s
    cache, and compiling them cost most of a workspace-symbols call)."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if (start == 0 or not _is_word(text[start - 1])) and (
            end == len(text) or not _is_word(text[end])
        ):
            return start
        start = text.find(word, start + 1)
    return -1


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _move(symbol: dict[str, Any], number: int, character: int, text: str) -> None:
    """Show `symbol` at its name: 0-based line `number`, code point `character`."""
    symbol.update(line=number + 1, character=character + 1, preview=text.strip())


def best_first(
    found: Iterable[tuple[Symbol, Encoding]],
    query: str,
    locator: Locator,
    kinds: frozenset[str] | None,
) -> Iterator[dict[str, Any]]:
    """The workspace symbols `found` (each with its server's encoding) in the tools' shape,
    project symbols at their names (`at_name`), of `kinds`, best first: by the rank of the
    name, then path, line, character and name. A symbol keeps its path when it is moved to
    its name, so they are shaped a (rank, path) at a time, as they are taken: a call that
    shows 200 of sympy's 1,100 `Symbol` matches shapes a few hundred."""
    groups: dict[tuple[int, str], list[tuple[Symbol, Encoding]]] = {}
    for item, encoding in found:
        place = locator.place(item.location.uri)
        if place is not None:  # else dropped (nothing to show it as)
            groups.setdefault((rank(query, item.name), place[0]), []).append((item, encoding))
    for key in sorted(groups):
        shaped: list[dict[str, Any]] = []
        for item, encoding in groups[key]:
            symbol = information(item, locator, encoding)
            if symbol is None or not at_name(locator, item.location.uri, symbol):
                continue
            if kinds is None or symbol["kind"] in kinds:
                shaped.append(symbol)
        shaped.sort(key=lambda s: (s.get("line", 0), s.get("character", 0), s["name"]))
        yield from shaped


def rank(query: str, name: str) -> int:
    """0 for an exact name, 1 for a prefix, 2 for a case-insensitive prefix, 3 otherwise."""
    if name == query:
        return 0
    if name.startswith(query):
        return 1
    if name.lower().startswith(query.lower()):
        return 2
    return 3
