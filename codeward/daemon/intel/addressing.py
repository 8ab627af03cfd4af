"""Where a position tool points, as a model says it: a line and character (snapped to the
nearest identifier when it is on none), a line and the identifier's `name`, or a `symbol`
name path (`Class.method`, a top-level `main`) found in a file's document symbols or, without
a file, in the workspace symbols. Never a guess: an ambiguous name path or a character far
from any identifier is an error that names the candidates.

The symbols are asked through the `SymbolLookup` the tool passes (the document and workspace
symbol requests the symbol tools make), so this module only reads names and positions.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from codeward.daemon.intel.inputs import SourceFile, check_position
from codeward.protocol.errors import ErrorKind, ToolError

SNAP = 4  # how far (in characters) from an identifier a character may be and still snap to it
SHOWN = 8  # candidates named in an error
By = Literal["position", "inside", "nearest", "name", "symbol"]

# An identifier: a letter, `_` or `$`, then word characters or `$` (`$` for PHP and JS).
_IDENTIFIER = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
# Words of the languages' syntax that name no symbol of their own: a position on one means
# the name beside it (`def`, `func`, `return`...). Literal values (`None`, `true`, `self`)
# are not among them: a hover on them answers something.
KEYWORDS = frozenset(
    {
        "abstract", "and", "as", "async", "await", "break", "catch", "class", "const",
        "continue", "def", "defer", "del", "do", "elif", "else", "enum", "except", "export",
        "extends", "finally", "fn", "for", "from", "func", "function", "goto", "if", "impl",
        "implements", "import", "in", "interface", "is", "lambda", "let", "mut", "namespace",
        "new", "nonlocal", "not", "or", "pass", "private", "protected", "pub", "public",
        "raise", "return", "static", "struct", "switch", "throw", "throws", "trait", "try",
        "typedef", "typeof", "unsafe", "var", "virtual", "void", "while", "with", "yield",
    }
)  # fmt: skip
# Separators of a name path: `Class.method`, `mod::Type::f`, `Class#method`.
_PATH_SEPARATOR = re.compile(r"\.|::|#")


@dataclass(frozen=True)
class Resolved:
    """The position a tool asks about, and how it was found."""

    source: SourceFile
    line: int  # 1-based
    character: int  # 1-based, in code points: what the servers are asked at
    name: str  # the identifier there
    by: By
    start: int | None = None  # where the name starts, when `character` is inside it

    def public(self) -> dict[str, Any]:
        """The answer's `at`: what the tool answered for (where its name starts)."""
        return {
            "name": self.name,
            "path": self.source.shown,
            "line": self.line,
            "character": self.start or self.character,
            "by": self.by,
        }


@dataclass(frozen=True)
class Word:
    start: int  # 0-based, in code points
    end: int  # exclusive
    text: str

    def distance(self, index: int) -> int:
        """How far 0-based `index` is from this word (0: on it)."""
        if index < self.start:
            return self.start - index
        if index >= self.end:
            return index - self.end + 1
        return 0


def words(text: str) -> list[Word]:
    """The identifiers of a line, keywords left out."""
    return [
        Word(m.start(), m.end(), m.group())
        for m in _IDENTIFIER.finditer(text)
        if m.group() not in KEYWORDS
    ]


def _line_text(source: SourceFile, line: int) -> str:
    return source.lines[line - 1].rstrip("\r\n")


def at_position(source: SourceFile, line: int, character: int) -> Resolved:
    """The identifier at `character` of `line`, or the nearest one within `SNAP` characters
    (the one after it on a tie: a model that misses a name mostly lands before it)."""
    check_position(source, line, character)
    text = _line_text(source, line)
    index = character - 1
    found = words(text)
    for word in found:
        if word.distance(index) == 0:  # inside a name but not at its start: said in `at`
            if word.start == index:
                return Resolved(source, line, character, word.text, "position")
            return Resolved(source, line, character, word.text, "inside", word.start + 1)
    if found and index < found[0].start and _leading(text[: found[0].start]):
        # in the indentation or the leading keywords (`def`, `async def`, `pub fn`): the
        # line's first name, what a declaration's line is about
        return Resolved(source, line, found[0].start + 1, found[0].text, "nearest")
    # on a tie, an opening bracket or a separator after a name belongs to that name
    # (`write(`); a space or a `.` to the name after it (`self.write`)
    after = index < len(text) and text[index] in "([<{:,;)]>}"
    near = sorted(found, key=lambda w: (w.distance(index), (w.start < index) != after))
    if near and near[0].distance(index) <= SNAP:
        word = near[0]
        return Resolved(source, line, word.start + 1, word.text, "nearest")
    shown = ", ".join(f"{w.text} (character {w.start + 1})" for w in near[:SHOWN])
    what = f"the nearest: {shown}" if near else "the line has none"
    raise ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"Character {character} of line {line} of {source.shown!r} is on no identifier, and "
        f"none is within {SNAP} characters ({what}); give `name` (the identifier on that "
        "line) or `symbol` (a name path) instead of counting characters.",
        candidates=[{"name": w.text, "line": line, "character": w.start + 1} for w in near[:SHOWN]],
    )


def _leading(text: str) -> bool:
    """Whether `text` (what a line holds before its first name) is only indentation,
    keywords and decorator-free punctuation of a declaration: `    async def `, `pub fn `."""
    return all(part in KEYWORDS for part in text.split())


def on_line(source: SourceFile, line: int, name: str, character: int | None) -> Resolved:
    """The identifier `name` on `line` (with `character`, its occurrence nearest it)."""
    check_position(source, line, 1)
    name = name.strip()
    found = [w for w in _all_words(_line_text(source, line)) if w.text == name]
    if found:
        if character is not None:
            found.sort(key=lambda w: (w.distance(character - 1), w.start))
        word = found[0]
        return Resolved(source, line, word.start + 1, word.text, "name")
    there = ", ".join(dict.fromkeys(w.text for w in words(_line_text(source, line))))
    elsewhere = _lines_with(source, name, line)
    hint = (
        f"; it is on line{'s' if len(elsewhere) > 1 else ''} "
        + ", ".join(str(n) for n in elsewhere)
        if elsewhere
        else ""
    )
    raise ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"{name!r} is not an identifier on line {line} of {source.shown!r} (its identifiers: "
        f"{there or 'none'}){hint}; give the line it is on, or `symbol` (a name path).",
        candidates=[{"name": name, "line": n} for n in elsewhere],
    )


def _all_words(text: str) -> list[Word]:
    """Every identifier of a line, keywords included (a name asked for by name is meant)."""
    return [Word(m.start(), m.end(), m.group()) for m in _IDENTIFIER.finditer(text)]


def _lines_with(source: SourceFile, name: str, near: int, radius: int = 50) -> list[int]:
    """The lines within `radius` of `near` that hold `name` as an identifier, nearest first."""
    pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    first, last = max(1, near - radius), min(source.line_count, near + radius)
    hits = [n for n in range(first, last + 1) if pattern.search(source.lines[n - 1])]
    return sorted(hits, key=lambda n: abs(n - near))[:SHOWN]


# -- name paths -------------------------------------------------------------------------------


def segments(symbol: str) -> list[str]:
    """A name path's parts: `Context.invoke` -> [Context, invoke]."""
    return [part.strip() for part in _PATH_SEPARATOR.split(symbol.strip()) if part.strip()]


def name_parts(name: str) -> list[str]:
    """A server's symbol name as name-path parts: gopls's `(*Server).Run` -> [Server, Run],
    jdtls's `run(String)` -> [run]."""
    name = name.strip()
    if name.startswith("("):  # a Go method with its receiver
        name = name.replace("(", "").replace(")", "").replace("*", "")
    else:
        name = name.split("(", 1)[0]
    return [part for part in _PATH_SEPARATOR.split(name) if part] or [name]


@dataclass(frozen=True)
class Candidate:
    chain: tuple[str, ...]  # the names from the top of the file (or the container) down
    path: str
    line: int
    character: int
    kind: str

    @property
    def shown(self) -> str:
        return f"{'.'.join(self.chain)} ({self.kind}, {self.path}:{self.line}:{self.character})"

    @property
    def place(self) -> tuple[Any, ...]:
        return (self.path, self.line, self.character)

    def public(self) -> dict[str, Any]:
        return {"symbol": ".".join(self.chain), "kind": self.kind, "path": self.path,
                "line": self.line, "character": self.character}  # fmt: skip


def document_candidates(tree: list[dict[str, Any]], path: str) -> Iterator[Candidate]:
    """Every symbol of a document-symbol answer (a tree, or a flat list with containers),
    with its chain of names."""

    def walk(items: list[dict[str, Any]], chain: tuple[str, ...]) -> Iterator[Candidate]:
        for item in items:
            if "line" not in item:
                continue
            container = item.get("container")
            above = chain or (tuple(_container_parts(container)) if container else ())
            own = (*above, *name_parts(str(item["name"])))
            yield Candidate(own, path, item["line"], item["character"], str(item.get("kind")))
            yield from walk(item.get("children") or [], own)

    yield from walk(tree, ())


def workspace_candidates(found: list[dict[str, Any]]) -> Iterator[Candidate]:
    for item in found:
        if "line" not in item or "path" not in item:
            continue
        container = item.get("container")
        chain = (*(_container_parts(container) if container else ()), *name_parts(item["name"]))
        yield Candidate(chain, item["path"], item["line"], item["character"], str(item["kind"]))


def _container_parts(container: str) -> list[str]:
    return [p for p in _PATH_SEPARATOR.split(container.replace("/", ".")) if p]


class Named(Protocol):
    """A symbol a name path may name: its chain of names, how an error shows it, where it
    is (one per place), and its entry in an error's `data.candidates`."""

    @property
    def chain(self) -> tuple[str, ...]: ...

    @property
    def shown(self) -> str: ...

    @property
    def place(self) -> tuple[Any, ...]: ...

    def public(self) -> dict[str, Any]: ...


N = TypeVar("N", bound=Named)


def choose(
    symbol: str,
    candidates: Sequence[N],
    where: str,
    ways: str = "`path`, or a line and name",
) -> N:
    """The one candidate that `symbol` names: its chain ends with the name path's parts (the
    whole chain first: `main` is the top-level `main` before any `X.main`). Ambiguity and
    absence are errors naming the candidates (`ways`: what else narrows it, if anything)."""
    parts = tuple(segments(symbol))
    if not parts:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `symbol` as a name path, e.g. "
                        "`Class.method` or `main`.")  # fmt: skip
    whole = _unique(c for c in candidates if c.chain == parts)
    ending = _unique(c for c in candidates if c.chain[-len(parts) :] == parts)
    for matches in (whole, ending):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            listed = "; ".join(c.shown for c in matches[:SHOWN])
            more = f" and {len(matches) - SHOWN} more" if len(matches) > SHOWN else ""
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{symbol!r} names {len(matches)} symbols {where}: {listed}{more}; give a "
                f"longer name path (`Class.method`){', ' + ways if ways else ''}.",
                candidates=[c.public() for c in matches[:SHOWN]],
            )
    names = sorted({".".join(c.chain) for c in candidates})
    close = difflib.get_close_matches(".".join(parts), names, n=SHOWN, cutoff=0.6)
    close += [n for n in names if n.split(".")[-1].lower() == parts[-1].lower() and n not in close]
    if close:
        hint = f" (close: {', '.join(close[:SHOWN])})"
    else:  # nothing alike: what there is at the top
        close = [n for n in names if "." not in n]
        hint = f" (its top-level symbols: {', '.join(close[:SHOWN]) or 'none'})"
    raise ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"No symbol {symbol!r} {where}{hint}; list them with get_symbols"
        f"{', or give ' + ways if ways else ''}.",
        candidates=[{"symbol": n} for n in close[:SHOWN]],
    )


def _unique(found: Iterator[N]) -> list[N]:
    """One candidate per place (a server may report a symbol twice)."""
    seen: dict[tuple[Any, ...], N] = {}
    for candidate in found:
        seen.setdefault(candidate.place, candidate)
    return list(seen.values())


# -- the whole address ------------------------------------------------------------------------

DocumentSymbols = Callable[[SourceFile], Awaitable[list[dict[str, Any]]]]
WorkspaceSymbols = Callable[[str], Awaitable[list[dict[str, Any]]]]
OpenSource = Callable[[str], SourceFile]


@dataclass(frozen=True)
class Address:
    """What a position tool was given (each may be missing)."""

    path: str | None = None
    line: int | None = None
    character: int | None = None
    name: str | None = None
    symbol: str | None = None


async def resolve(
    address: Address, open_source: OpenSource, document: DocumentSymbols,
    workspace: WorkspaceSymbols,
) -> Resolved:  # fmt: skip
    """The position `address` names (see the module's doc)."""
    if address.symbol is not None:
        if address.line is not None or address.character is not None or address.name is not None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "Give `symbol` (a name path) or a position (`line` with `character` or "
                "`name`), not both.",
            )
        if address.path is not None:
            source = open_source(address.path)
            found = list(document_candidates(await document(source), source.shown))
            chosen = choose(address.symbol, found, f"in {source.shown!r}")
        else:
            query = segments(address.symbol)[-1:] or [address.symbol]
            found = list(workspace_candidates(await workspace(query[0])))
            chosen = choose(address.symbol, found, "in the project")
            source = open_source(chosen.path)
        check_position(source, chosen.line, chosen.character)
        text = _line_text(source, chosen.line)
        word = _IDENTIFIER.match(text, chosen.character - 1)
        name = word.group() if word else chosen.chain[-1]
        return Resolved(source, chosen.line, chosen.character, name, "symbol")
    if address.path is None or address.line is None:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "Give `path` and `line` with `character` or `name` (the identifier on that line), "
            "or `symbol` (a name path such as `Class.method`, with or without `path`).",
        )
    source = open_source(address.path)
    if address.name is not None:
        if not address.name.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `name` as an identifier.")
        return on_line(source, address.line, address.name, address.character)
    if address.character is None:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"Give `character` or `name` (the identifier on line {address.line}) with `line`.",
        )
    return at_position(source, address.line, address.character)
