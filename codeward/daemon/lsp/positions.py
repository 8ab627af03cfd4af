"""Positions: the tools' 1-based code points, and a server's 0-based UTF-8/16/32 units."""

from __future__ import annotations

import itertools
import re
from array import array
from collections.abc import Iterator, Sequence
from typing import Literal, overload

Encoding = Literal["utf-8", "utf-16", "utf-32"]
ENCODINGS: tuple[Encoding, ...] = ("utf-8", "utf-16", "utf-32")
_EOL = re.compile(r"\r\n|\r|\n")  # what ends a line, as LSP counts lines


def split_lines(text: str) -> list[str]:
    """The lines of `text` as LSP counts them (`\\n`, `\\r\\n` and `\\r` end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


class Lines(Sequence[str]):
    """The lines of a text as `split_lines` gives them, each cut from the text when asked: the
    text and an array of where each line starts, not a string per line (the texts a session
    kept of a large project's files were a million small strings; what the daemon kept
    beside them after the session, in the same allocator arenas, held those arenas)."""

    __slots__ = ("_starts", "_text")

    def __init__(self, text: str) -> None:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # the same object when no CR
        self._text = text
        # line n is text[starts[n]:starts[n + 1] - 1]: each start one past the line before
        # it and its "\n" (the pieces of the split last only for this expression)
        lengths = map(len, text.split("\n"))
        self._starts = array("q", itertools.accumulate(map((1).__add__, lengths), initial=0))

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        count = len(self._starts) - 1
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("line index out of range")
        return self._text[self._starts[index] : self._starts[index + 1] - 1]

    def get(self, index: int) -> str:
        """Line `index` (0-based), or "" past either end."""
        starts = self._starts
        if 0 <= index < len(starts) - 1:
            return self._text[starts[index] : starts[index + 1] - 1]
        return ""

    def __iter__(self) -> Iterator[str]:
        return iter(self._text.split("\n"))

    def __eq__(self, other: object) -> bool:
        """The same lines as `other`'s (another `Lines`, or a list as `split_lines` gives)."""
        if isinstance(other, Lines):
            return self._text == other._text
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal to one

    @property
    def text(self) -> str:
        """The text, its lines ended by "\n" alone."""
        return self._text


def line_starts(text: str) -> list[int]:
    """The offset of each line's first code point, lines ended as LSP ends them."""
    return [0] + [m.end() for m in _EOL.finditer(text)]


def _width(char: str, encoding: Encoding) -> int:
    code = ord(char)
    if encoding == "utf-8":
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    if encoding == "utf-16":
        return 2 if code >= 0x10000 else 1
    return 1


def to_units(line: str, code_points: int, encoding: Encoding) -> int:
    """Code units before the `code_points`-th character of `line` (clamped to the line)."""
    prefix = line[: max(code_points, 0)]
    if encoding == "utf-32" or prefix.isascii():
        return len(prefix)
    if encoding == "utf-16":
        return len(prefix) + sum(1 for c in prefix if ord(c) >= 0x10000)
    return len(prefix.encode("utf-8", "surrogatepass"))


def to_code_points(line: str, units: int, encoding: Encoding) -> int:
    """Code points before code unit `units` of `line`; a unit inside a character counts it."""
    if encoding == "utf-32" or line.isascii():  # one unit per character
        return min(max(units, 0), len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += _width(char, encoding)
    return len(line)


def negotiated(encoding: object) -> Encoding:
    """The server's chosen encoding; anything unknown means the LSP default, UTF-16."""
    return encoding if encoding in ENCODINGS else "utf-16"  # type: ignore[return-value]


class LineIndex:
    """Converts positions in one text between code points (1-based) and server units (0-based)."""

    def __init__(self, text: str) -> None:
        self.lines = Lines(text)
        self.ascii = text.isascii()  # one unit per character in every encoding (known: O(1))
        self._plain: bool | None = None

    @property
    def plain(self) -> bool:
        """Whether the text has no NUL and no U+FFFD: decoded with replacement, it then surely
        came from valid UTF-8 without NUL bytes."""
        if self._plain is None:
            text = self.lines.text
            self._plain = "\x00" not in text and "\ufffd" not in text
        return self._plain

    def line(self, number: int) -> str:
        """The 0-based line `number`, or "" past the end."""
        return self.lines.get(number)

    def to_server(self, line: int, character: int, encoding: Encoding) -> dict[str, int]:
        """An LSP Position from 1-based `line` and `character` (code points)."""
        zero = max(line - 1, 0)
        return {"line": zero, "character": to_units(self.line(zero), character - 1, encoding)}

    def locate(
        self, line: int, character: int, end_line: int, end_character: int, encoding: Encoding
    ) -> tuple[int, int, int, int, str]:
        """`to_client` of a server range's start and end, and the start line trimmed (a
        location's preview): in one step, as a 1,000-location answer needs it."""
        text = self.lines.get(line)
        end_text = text if end_line == line else self.lines.get(end_line)
        if encoding == "utf-32" or (text.isascii() and end_text.isascii()):
            first = min(max(character, 0), len(text))  # one unit per character
            last = min(max(end_character, 0), len(end_text))
        else:
            first = to_code_points(text, character, encoding)
            last = to_code_points(end_text, end_character, encoding)
        return line + 1, first + 1, end_line + 1, last + 1, text.strip()

    def to_client(self, line: int, character: int, encoding: Encoding) -> tuple[int, int]:
        """1-based (line, character) in code points from a server's 0-based position."""
        return line + 1, to_code_points(self.line(line), character, encoding) + 1
