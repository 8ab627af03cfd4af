"""The editor's open documents: each one's whole text and version, its changes (whole or
incremental, positions in the editor's encoding) applied as they come."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.daemon.lsp.positions import (
    Encoding,
    LineIndex,
    line_starts,
    split_lines,
    to_code_points,
)


class BadChange(ValueError):
    """A change that cannot be applied (its message says why)."""


@dataclass
class Buffer:
    uri: str
    path: Path | None  # None for a URI that is no file
    language_id: str
    text: str
    version: int
    _index: LineIndex | None = field(default=None, repr=False)

    @property
    def index(self) -> LineIndex:
        if self._index is None:
            self._index = LineIndex(self.text)
        return self._index


class Buffers:
    """The documents one editor has open, by URI."""

    def __init__(self, encoding: Encoding) -> None:
        self.encoding: Encoding = encoding
        self.open: dict[str, Buffer] = {}

    def get(self, uri: str) -> Buffer | None:
        return self.open.get(uri)

    def did_open(self, uri: str, path: Path | None, language_id: str, version: int,
                 text: str) -> Buffer:  # fmt: skip
        buffer = Buffer(uri, path, language_id, text, version)
        self.open[uri] = buffer
        return buffer

    def did_change(self, uri: str, version: int, changes: list[dict[str, Any]]) -> Buffer:
        """Apply `changes` in order (each a whole text, or a range and its new text)."""
        buffer = self.open.get(uri)
        if buffer is None:
            raise BadChange("didChange of a document that is not open; send didOpen first.")
        text = buffer.text
        for change in changes:
            new = change.get("text")
            if not isinstance(new, str):
                raise BadChange("A content change needs its text.")
            rng = change.get("range")
            if rng is None:
                text = new
                continue
            start, end = (
                _offset(text, rng, "start", self.encoding),
                _offset(text, rng, "end", self.encoding),
            )
            if end < start:
                raise BadChange("A change's range ends before it starts.")
            text = text[:start] + new + text[end:]
        buffer.text, buffer.version, buffer._index = text, version, None
        return buffer

    def did_close(self, uri: str) -> Buffer | None:
        return self.open.pop(uri, None)


def _offset(text: str, rng: Any, end: str, encoding: Encoding) -> int:
    """The string index of a range's `start` or `end` in `text` (LSP's rules: a line past
    the end is the end of the text, a character past the line's end is the line's end)."""
    try:
        position = rng[end]
        line, character = int(position["line"]), int(position["character"])
    except (TypeError, KeyError, ValueError):
        raise BadChange(f"A change's range needs {end}.line and {end}.character.") from None
    if line < 0 or character < 0:
        raise BadChange("A change's position is negative.")
    starts = line_starts(text)
    if line >= len(starts):
        return len(text)
    return starts[line] + to_code_points(split_lines(text)[line], character, encoding)
