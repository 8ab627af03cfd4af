"""Output locations: server URIs and ranges to root-relative paths or indicators, with previews.

A path inside the root (dependency folders such as `.venv/` included) is shown relative to
it; a standard-library or installed-dependency file outside becomes an indicator
(`python:os.path`); anything else is dropped without a trace.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec
import trio

from codeward.daemon.files import Stat, stat_key
from codeward.daemon.intel.indicators import go_env, indicator, typeshed_module
from codeward.daemon.lsp.positions import Encoding, LineIndex, Lines, to_code_points
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.lsp.types import PositionLike, Range, RangeLike
from codeward.daemon.lsp.uris import real_path, uri_to_path
from codeward.daemon.paths import scrub

Location = dict[str, Any]
_MISSING = object()
NO_LINES = Lines("")  # of a location with no text to read (never read: its count is -1)


class Shown(msgspec.Struct, gc=False):
    """One location of a bulk answer (thousands of references), as a `Location` dict shows
    it: a Struct, built and encoded without a dict per row. `msgspec.to_builtins` makes it
    the dict for callers that read results as data (MCP's text, Lua)."""

    path: str
    line: int
    character: int
    end_line: int
    end_character: int
    preview: str


def point(position: PositionLike | dict[str, Any]) -> tuple[int, int]:
    """(line, character) of an LSP Position, as a Struct, an lsprotocol type or a dict."""
    if isinstance(position, dict):
        return int(position["line"]), int(position["character"])
    return position.line, position.character


def bounds(rng: RangeLike | dict[str, Any]) -> tuple[Any, Any]:
    if isinstance(rng, dict):
        return rng["start"], rng["end"]
    return rng.start, rng.end


def targets(result: Any) -> list[tuple[str, Any]]:
    """(uri, range) of each `Location` or `LocationLink` in a definition-style result."""
    items = result if isinstance(result, list) else [result]
    found: list[tuple[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("targetUri"), str):
            rng = item.get("targetSelectionRange") or item.get("targetRange")
            if isinstance(rng, dict):
                found.append((item["targetUri"], rng))
        elif isinstance(item.get("uri"), str) and isinstance(item.get("range"), dict):
            found.append((item["uri"], item["range"]))
    return found


class Locator:
    """Turns one answer's URIs and ranges into tool locations; caches per URI."""

    def __init__(self, manager: LanguageService) -> None:
        self.manager = manager
        self.root = manager.root
        self._root_str = str(manager.root)
        self._root_prefix = self._root_str.rstrip("/") + "/"
        self._places: dict[str, tuple[str, bool] | None] = {}
        self._paths: dict[str, Path | None] = {}
        self._reals: dict[str, str | None] = {}
        self._folders: dict[str, str] = {}  # real paths of folders
        self._stats: dict[str, Stat] = {}  # files' stats as `real` found them
        self._indexes: dict[str, LineIndex | None] = {}

    async def prepare(self, uris: Iterable[str]) -> None:
        """Learn GOROOT and the module cache (a subprocess, once) when a Go file is outside."""
        if any(uri.endswith(".go") and self.place(uri, go=False) is None for uri in uris):
            await trio.to_thread.run_sync(go_env)
            self._places.clear()

    def place(self, uri: str, *, go: bool = True) -> tuple[str, bool] | None:
        """(shown path, inside the root) of `uri`, or None when it must be dropped."""
        cached = self._places.get(uri, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        real = self.real(uri)
        found: tuple[str, bool] | None = None
        if real is not None:
            if real == self._root_str:
                found = (".", True)
            elif real.startswith(self._root_prefix):
                shown = real[len(self._root_prefix) :]
                # typeshed in a project .venv (a stub: no Path made for any other file)
                stub = typeshed_module(PurePosixPath(shown)) if shown.endswith(".pyi") else None
                found = (f"python:{stub}", False) if stub else (shown, True)
            elif go or os.path.splitext(real)[1] != ".go":
                shown = indicator(Path(real))
                found = (shown, False) if shown else None
            else:
                return None
        self._places[uri] = found
        return found

    def real(self, uri: str) -> str | None:
        """The real path of `uri` (through symlinks, asked again by each answer: they may
        change), or None when it names no file."""
        real = self._reals.get(uri, _MISSING)
        if real is _MISSING:
            path = self.path(uri)
            real = self._reals[uri] = None if path is None else self._real(path)
        return real  # type: ignore[return-value]

    def _real(self, path: Path) -> str:
        """`real_path(path)`, its folder's resolved once an answer: a file that is no link
        lies in its folder's real path (one lstat a file, for answers naming thousands)."""
        text = str(path)  # (strings: a Path's parent and hash cost more than the lstat)
        parent, _, name = text.rpartition("/")
        if name not in ("", ".", ".."):
            try:
                st = os.lstat(text)
            except OSError:
                st = None  # gone, say: as real_path finds it
            if st is not None and not stat.S_ISLNK(st.st_mode):
                self._stats[text] = stat_key(st)  # no link: its stat too, for `index`
                folder = self._folders.get(parent)
                if folder is None:
                    folder = self._folders[parent] = real_path(parent or "/")
                return f"{folder.rstrip('/')}/{name}"
        return real_path(path)

    def path(self, uri: str) -> Path | None:
        path = self._paths.get(uri, _MISSING)
        if path is _MISSING:
            path = self._paths[uri] = uri_to_path(uri)
        return path  # type: ignore[return-value]

    def index(self, uri: str) -> LineIndex | None:
        if uri not in self._indexes:
            path = self.path(uri)
            index = None
            if path is not None:
                index = self.manager.line_index(path, self._stats.get(str(path)))
            self._indexes[uri] = index
        return self._indexes[uri]

    def span(
        self, uri: str, rng: RangeLike | dict[str, Any], encoding: Encoding
    ) -> tuple[int, ...]:
        """1-based (line, character, end_line, end_character) in code points."""
        start, end = bounds(rng)
        index = self.index(uri)
        (line, char), (end_line, end_char) = point(start), point(end)
        if index is None:
            return line + 1, char + 1, end_line + 1, end_char + 1
        return (
            *index.to_client(line, char, encoding),
            *index.to_client(end_line, end_char, encoding),
        )

    def preview(self, uri: str, line: int) -> str:
        index = self.index(uri)
        return index.line(line - 1).strip() if index is not None else ""

    def location(
        self, uri: str, rng: RangeLike | dict[str, Any], encoding: Encoding
    ) -> Location | None:
        """`{path, line, character, end_line, end_character, preview}`, or None to drop."""
        place = self.place(uri)
        if place is None:
            return None
        if isinstance(rng, Range):  # decoded Structs: the 1,000-location case
            start, end = rng.start, rng.end
            line, char, end_line, end_char = start.line, start.character, end.line, end.character
        else:
            start, end = bounds(rng)
            (line, char), (end_line, end_char) = point(start), point(end)
        index = self.index(uri)
        preview = ""
        if index is not None:
            line, char, end_line, end_char, preview = index.locate(
                line, char, end_line, end_char, encoding
            )
        else:  # no text to read: 0-based units, shown 1-based
            line, char, end_line, end_char = line + 1, char + 1, end_line + 1, end_char + 1
        return {
            "path": place[0],
            "line": line,
            "character": char,
            "end_line": end_line,
            "end_character": end_char,
            "preview": preview,
        }

    def locations(self, items: Iterable[LspLocation], encoding: Encoding) -> list[Shown]:
        """`finish` of each item's `location`, in one pass for answers of thousands: the
        place and text of a URI looked up once per run of it, duplicates dropped, rows kept
        per shown file (sorted by file, then as plain tuples of numbers within each) and the
        output Structs built last."""
        files: dict[str, set[tuple[int, int, int, int, str]]] = {}
        add = None
        last_uri: str | None = None
        shown = ""
        lines = NO_LINES
        count = 0
        units = encoding == "utf-32"  # every line counts code points, as the tools do
        for item in items:
            uri = item.uri
            if uri != last_uri:
                last_uri = uri
                place = self.place(uri)
                shown = place[0] if place is not None else ""
                index = self.index(uri) if shown else None
                lines = index.lines if index is not None else NO_LINES
                count = len(lines) if index is not None else -1
                units = encoding == "utf-32" or (index is not None and index.ascii)
                add = files.setdefault(shown, set()).add if shown else None
            if add is None:
                continue
            rng = item.range
            start, end = rng.start, rng.end
            line, char, end_line, end_char = start.line, start.character, end.line, end.character
            if count < 0:  # no text to read: 0-based units, shown 1-based
                add((line + 1, char + 1, end_line + 1, end_char + 1, ""))
                continue
            text = lines.get(line)
            if end_line == line and units and 0 <= char <= end_char <= len(text):
                add((line + 1, char + 1, line + 1, end_char + 1, text.strip()))  # the usual one
                continue
            end_text = text if end_line == line else lines.get(end_line)
            if units:
                size, end_size = len(text), len(end_text)
                first = char if 0 <= char <= size else 0 if char < 0 else size
                last = end_char if 0 <= end_char <= end_size else 0 if end_char < 0 else end_size
            else:
                first = to_code_points(text, char, encoding)
                last = to_code_points(end_text, end_char, encoding)
            add((line + 1, first + 1, end_line + 1, last + 1, text.strip()))
        return [
            Shown(path, *row)
            for path in sorted(files, key=lambda path: (_external(path), path))
            for row in sorted(files[path])
        ]

    def scrub(self, text: str) -> str:
        """`text` with each absolute path shown as the tools show paths (or `<path>`)."""
        return scrub(text, self.root, self._shown)

    def _shown(self, path: str) -> str | None:
        place = self.place(PurePosixPath(path).as_uri())
        return place[0] if place is not None else None


def finish(locations: Iterable[Location | None]) -> list[Location]:
    """Drop Nones and duplicates; sort project files first, then by path and position."""
    seen: set[tuple[Any, ...]] = set()
    unique: list[Location] = []
    for loc in locations:
        if loc is None:
            continue
        key = (loc["path"], loc["line"], loc["character"], loc["end_line"], loc["end_character"])
        if key not in seen:
            seen.add(key)
            unique.append(loc)
    external = {path: _external(path) for path in {loc["path"] for loc in unique}}
    unique.sort(key=lambda loc: (external[loc["path"]], loc["path"], loc["line"], loc["character"]))
    return unique


def _external(path: str) -> bool:
    """Whether a shown path is an indicator (`python:os`) rather than a project path."""
    head, sep, _ = path.partition(":")
    return bool(sep) and head in ("python", "go", "elixir", "erlang", "c", "cpp")
