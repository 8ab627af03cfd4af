"""An agent's own text edits (`edit_file`), checked and made on a text (sans IO).

Positions are the tools' 1-based lines and 1-based code-point characters; an edit covers
`line`:`character` up to (not including) `end_line`:`end_character`. Edits all refer to the
original text and may not overlap; inserts at one position are made in the order given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codeward.daemon.lsp.positions import line_starts
from codeward.protocol.errors import ErrorKind, ToolError


@dataclass(frozen=True)
class OwnEdit:
    line: int
    character: int
    end_line: int
    end_character: int
    new_text: str


def decode_source(data: bytes, shown: str) -> str:
    """The text of a file an agent edits: UTF-8 without NUL bytes, else `invalid_arguments`."""
    try:
        if b"\x00" in data:
            raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), 1, "NUL byte")
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{shown!r} is not a UTF-8 text file (it looks binary), so edit_file does not "
            "edit it; give a text file.",
            path=shown,
        ) from None


def _offset(text: str, starts: Sequence[int], line: int, character: int, where: str) -> int:
    count = len(starts)
    if line < 1 or line > count:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The {where} line {line} is outside the text, which has {count} line"
            f"{'s' if count != 1 else ''} (a final newline opens an empty last one); give a "
            f"line from 1 to {count}.",
        )
    start = starts[line - 1]
    end = starts[line] if line < count else len(text)
    content = text[start:end].rstrip("\r\n")
    if character < 1 or character > len(content) + 1:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The {where} character {character} is outside line {line}, which has "
            f"{len(content)} characters; give a character from 1 to {len(content) + 1}.",
        )
    return start + character - 1


def apply_own_edits(text: str, edits: Sequence[OwnEdit]) -> str:
    """`text` with every edit made; `invalid_arguments` for a position outside the text, an
    end before its start, or edits that overlap."""
    starts = line_starts(text)
    spans: list[tuple[int, int, int, OwnEdit]] = []
    for i, e in enumerate(edits):
        start = _offset(text, starts, e.line, e.character, f"edits[{i}] start")
        end = _offset(text, starts, e.end_line, e.end_character, f"edits[{i}] end")
        if end < start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"edits[{i}] ends ({e.end_line}:{e.end_character}) before it starts "
                f"({e.line}:{e.character}); give end_line:end_character at or after the start.",
            )
        spans.append((start, end, i, e))
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    parts: list[str] = []
    at = 0
    previous = -1
    for start, end, i, edit in spans:
        if start < at:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"edits[{i}] overlaps edits[{previous}]; every edit refers to the original "
                "text, so their ranges may touch but not overlap.",
            )
        parts.append(text[at:start])
        parts.append(edit.new_text)
        at, previous = end, i
    parts.append(text[at:])
    return "".join(parts)


def whole_text_edit(uri: str, old: str, new: str) -> dict[str, object]:
    """A WorkspaceEdit replacing all of `old` by `new` (positions in UTF-32, code points)."""
    starts = line_starts(old)
    end = {"line": len(starts) - 1, "character": len(old) - starts[-1]}
    edit = {"range": {"start": {"line": 0, "character": 0}, "end": end}, "newText": new}
    return {"changes": {uri: [edit]}}
