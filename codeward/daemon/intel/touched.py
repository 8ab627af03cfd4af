"""The symbols a change touched and who uses them (for `review_changes`).

A file's definitions (`outline`: classes, functions, methods, types, and the names at its
top level; never a function's locals) are intersected with the change's hunks: the
innermost definitions a hunk meets are `added` (not in the revision's outline), `removed`
(not in the working tree's), or changed in their `signature` (the line of the name differs)
or `body`. `references` asks a server who uses a symbol, keeping the places outside the
change's hunks, grouped by file with counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.edits.hunks import Hunk, touched
from codeward.daemon.intel.locations import Locator
from codeward.daemon.intel.symbols import Budget, document_symbols
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.lsp.uris import path_to_uri

DEFINITIONS = frozenset(
    {"class", "function", "method", "constructor", "interface", "struct", "enum", "operator"}
)
TOP_LEVEL = frozenset({"variable", "constant", "field", "property", "enum_member"})
CALLABLE = frozenset({"function", "method", "constructor", "operator"})
OUTLINE_LIMIT = 5000  # symbols of one file's outline
FILES_SHOWN = 10  # files listed per symbol's references (the rest counted)
LINES_SHOWN = 8  # lines listed per file


@dataclass(frozen=True)
class Definition:
    key: tuple[str, ...]  # its name, after its containers' names
    kind: str
    line: int  # where its name is (what the other tools take)
    character: int
    start: int  # its lines
    end: int
    children: tuple[Definition, ...] = ()

    @property
    def name(self) -> str:
        return self.key[-1]


async def outline(manager: LanguageService, path: Path) -> list[Definition]:
    """The definitions of the file as its server has it now (a preview's text inside one)."""
    method = "textDocument/documentSymbol"
    answer = await manager.request(
        path, method, lambda doc: shapes.document_params(method, doc.uri), wait_ready=False
    )
    tree = shapes.answer(answer.result, answer.server, method)
    shown = document_symbols(
        tree, path_to_uri(path), Locator(manager), answer.encoding, Budget(OUTLINE_LIMIT)
    )
    return list(_definitions(shown, ()))


def _definitions(
    symbols: Iterable[dict[str, Any]], container: tuple[str, ...]
) -> Iterable[Definition]:
    for symbol in symbols:
        kind = str(symbol.get("kind") or "")
        key = (*container, str(symbol.get("name", "")))
        inner = () if kind in CALLABLE else tuple(_definitions(symbol.get("children") or [], key))
        if kind in DEFINITIONS or (not container and kind in TOP_LEVEL):
            span = symbol.get("range") or {}
            line = int(symbol.get("line", 0))
            yield Definition(
                key, kind, line, int(symbol.get("character", 1)),
                int(span.get("line", line)), int(span.get("end_line", line)), inner,
            )  # fmt: skip
        else:
            yield from inner


@dataclass
class Touched:
    definition: Definition
    change: str  # added, removed, signature, body
    references: dict[str, Any] | None = None
    new: bool = True  # where `definition` is: the working tree's text, else the revision's

    def public(self, file: str) -> dict[str, Any]:
        d = self.definition
        shown: dict[str, Any] = {
            "name": ".".join(d.key),
            "kind": d.kind,
            "change": self.change,
            "file": file,
            "line": d.line,
            "character": d.character,
            "end_line": d.end,
        }
        if self.references is not None:
            shown["references"] = self.references
        return shown


def compare(
    old: Sequence[Definition] | None,
    new: Sequence[Definition] | None,
    found: list[Hunk],
    old_lines: Sequence[str],
    new_lines: Sequence[str],
) -> list[Touched]:
    """The definitions the hunks touch, innermost first met, in the order of the text; a
    file added (no `old`) or deleted (no `new`) lists its top-level definitions."""
    if old is None:
        return [Touched(d, "added") for d in new or []]
    if new is None:
        return [Touched(d, "removed", new=False) for d in old]
    old_by_key = {d.key: d for d in _all(old)}
    new_by_key = {d.key: d for d in _all(new)}
    result: list[Touched] = []
    for d in _innermost(new, found, new_side=True):
        before = old_by_key.get(d.key)
        if before is None:
            result.append(Touched(d, "added"))
        elif _line(old_lines, before.line) != _line(new_lines, d.line):
            result.append(Touched(d, "signature"))
        else:
            result.append(Touched(d, "body"))
    for d in _innermost(old, found, new_side=False):
        if d.key not in new_by_key:
            result.append(Touched(d, "removed", new=False))
    return result


def _all(definitions: Iterable[Definition]) -> Iterable[Definition]:
    for d in definitions:
        yield d
        yield from _all(d.children)


def _innermost(
    definitions: Iterable[Definition], found: list[Hunk], *, new_side: bool
) -> Iterable[Definition]:
    for d in definitions:
        if not touched(found, d.start, d.end, new=new_side):
            continue
        inner = list(_innermost(d.children, found, new_side=new_side))
        yield from inner or [d]


def _line(lines: Sequence[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


async def references(
    manager: LanguageService,
    path: Path,
    definition: Definition,
    change_hunks: dict[str, list[Hunk]],
    *,
    new_side: bool,
) -> dict[str, Any]:
    """Who uses `definition` (in `path`), outside the change: `count`, `files` (each `file`,
    `count`, `lines`, the first `LINES_SHOWN`), `truncated` past `FILES_SHOWN` files."""
    method = "textDocument/references"
    line, character = definition.line, definition.character

    def params(doc: DocumentContext) -> Any:
        at = doc.position(line, character)
        context = lsp.ReferenceContext(include_declaration=False)
        return shapes.document_params(method, doc.uri, position=lsp.Position(**at), context=context)

    answer = await manager.request(path, method, params, result_type=list[LspLocation] | None)
    items: list[LspLocation] = answer.result or []
    locator = Locator(manager)
    await locator.prepare({item.uri for item in items})
    by_file: dict[str, list[int]] = {}
    for place in locator.locations(items, answer.encoding):
        hunks_there = change_hunks.get(place.path)
        if hunks_there is not None and touched(hunks_there, place.line, place.line, new=new_side):
            continue  # inside the change itself
        if place.path == _shown(manager, path) and place.line == line:
            continue  # the definition's own name
        by_file.setdefault(place.path, []).append(place.line)
    files = sorted(by_file.items(), key=lambda item: (-len(item[1]), item[0]))
    return {
        "count": sum(len(lines) for _, lines in files),
        "files": [
            {"file": file, "count": len(lines), "lines": sorted(set(lines))[:LINES_SHOWN]}
            for file, lines in files[:FILES_SHOWN]
        ],
        "truncated": len(files) > FILES_SHOWN,
        "partial": answer.partial,
    }


def _shown(manager: LanguageService, path: Path) -> str:
    return path.relative_to(manager.root).as_posix()
