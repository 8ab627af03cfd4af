"""Positions: the tools' 1-based code points, and a server's 0-based UTF-8/16/32 units."""

from __future__ import annotations

from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]
ENCODINGS: tuple[Encoding, ...] = ("utf-8", "utf-16", "utf-32")


def split_lines(text: str) -> list[str]:
    """The lines of `text` as LSP counts them (`\\n`, `\\r\\n` and `\\r` end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


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
        self.lines = split_lines(text)

    def line(self, number: int) -> str:
        """The 0-based line `number`, or "" past the end."""
        return self.lines[number] if 0 <= number < len(self.lines) else ""

    def to_server(self, line: int, character: int, encoding: Encoding) -> dict[str, int]:
        """An LSP Position from 1-based `line` and `character` (code points)."""
        zero = max(line - 1, 0)
        return {"line": zero, "character": to_units(self.line(zero), character - 1, encoding)}

    def to_client(self, line: int, character: int, encoding: Encoding) -> tuple[int, int]:
        """1-based (line, character) in code points from a server's 0-based position."""
        return line + 1, to_code_points(self.line(line), character, encoding) + 1
