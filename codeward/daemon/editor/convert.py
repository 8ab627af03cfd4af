"""Positions between the editor's encoding and a server's.

Where both use the same encoding nothing is converted (the payloads pass as raw JSON).
Otherwise a payload is decoded and every Position in it (`{"line", "character"}`) is
converted on its line of the document it belongs to: the nearest enclosing `uri`
(`targetUri`, `textDocument.uri`, a `changes` key), else the request's document. The
lines come from `lines(uri)`: the editor's buffer when open, else the file as the servers
see it. Semantic tokens (relative, packed integers) are converted by `tokens`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codeward.daemon.lsp.positions import Encoding, LineIndex, to_code_points, to_units

Lines = Callable[[str], LineIndex | None]
_URI_KEYS = ("uri", "targetUri")


class Converter:
    """Converts positions from encoding `source` to `target` (see the module docstring)."""

    def __init__(self, source: Encoding, target: Encoding, lines: Lines) -> None:
        self.source: Encoding = source
        self.target: Encoding = target
        self.lines = lines
        self._indexes: dict[str, LineIndex | None] = {}

    def __call__(self, value: Any, uri: str | None) -> Any:
        """`value` with its positions converted (a new value; `value` is not changed)."""
        return self._walk(value, uri)

    def _walk(self, value: Any, uri: str | None) -> Any:
        if isinstance(value, list):
            return [self._walk(item, uri) for item in value]
        if not isinstance(value, dict):
            return value
        line, character = value.get("line"), value.get("character")
        if isinstance(line, int) and isinstance(character, int) and len(value) == 2:
            return {"line": line, "character": self._character(uri, line, character)}
        own = uri
        for key in _URI_KEYS:
            if isinstance(value.get(key), str):
                own = value[key]
                break
        document = value.get("textDocument")
        if isinstance(document, dict) and isinstance(document.get("uri"), str):
            own = document["uri"]
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "changes" and isinstance(item, dict):
                out[key] = {u: self._walk(edits, u) for u, edits in item.items()}
            elif key == "originSelectionRange":
                out[key] = self._walk(item, uri)  # (a link's origin is in the asking document)
            else:
                out[key] = self._walk(item, own)
        return out

    def _character(self, uri: str | None, line: int, character: int) -> int:
        index = self._index(uri)
        if index is None:
            return character
        text = index.line(line)
        if text.isascii():
            return character
        return to_units(text, to_code_points(text, character, self.source), self.target)

    def _index(self, uri: str | None) -> LineIndex | None:
        if uri is None:
            return None
        if uri not in self._indexes:
            self._indexes[uri] = self.lines(uri)
        return self._indexes[uri]


def tokens(data: list[int], index: LineIndex, source: Encoding, target: Encoding) -> list[int]:
    """Semantic tokens (`[deltaLine, deltaStart, length, type, modifiers]*`, relative) with
    their starts and lengths converted on the lines of `index`."""
    out: list[int] = []
    line = start = 0  # the previous token's, in both encodings
    last_start = 0  # its start in `target`
    for i in range(0, len(data) - 4, 5):
        delta_line, delta_start, length, kind, modifiers = data[i : i + 5]
        if delta_line:
            line, start, last_start = line + delta_line, delta_start, 0
        else:
            start += delta_start
        text = index.line(line)
        if text.isascii():
            new_start, new_length = start, length
        else:
            first = to_code_points(text, start, source)
            end = to_code_points(text, start + length, source)
            new_start = to_units(text, first, target)
            new_length = to_units(text, end, target) - new_start
        out += [delta_line, new_start - last_start, new_length, kind, modifiers]
        last_start = new_start
    return out
