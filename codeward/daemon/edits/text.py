"""Applying LSP text edits to a text (sans IO), in the server's position encoding."""

from __future__ import annotations

from collections.abc import Sequence

from codeward.daemon.edits.workspace import TextEdit
from codeward.daemon.lsp.positions import Encoding, line_starts, to_code_points
from codeward.daemon.lsp.types import PositionLike
from codeward.protocol.errors import ErrorKind, ToolError


class Lines:
    """Offsets of the lines of a text, as the LSP counts lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)

    def offset(self, position: PositionLike, encoding: Encoding) -> int:
        """The index in the text of an LSP position; a position past a line's end or past
        the last line means that end, as the LSP says (never negative: lsprotocol's
        `Position` refuses that)."""
        if position.line >= len(self.starts):
            return len(self.text)
        start = self.starts[position.line]
        end = self.starts[position.line + 1] if position.line + 1 < len(self.starts) else None
        line = self.text[start:end].rstrip("\r\n")
        return start + to_code_points(line, position.character, encoding)


def apply_text_edits(text: str, edits: Sequence[TextEdit], encoding: Encoding) -> str:
    """`text` with every edit made; the ranges all refer to `text` and must not overlap.

    Edits that start at the same place are made in the order given (LSP's rule for
    inserts at one position).
    """
    lines = Lines(text)
    spans = sorted(
        (
            (lines.offset(e.range.start, encoding), i, lines.offset(e.range.end, encoding), e)
            for i, e in enumerate(edits)
        ),
        key=lambda span: (span[0], span[1]),
    )
    parts: list[str] = []
    at = 0
    for start, _, end, edit in spans:
        if start < at or end < start:
            raise ToolError(
                ErrorKind.LSP_ERROR,
                "The language server sent overlapping or reversed edits to one file; nothing "
                "was written: retry, or report it.",
            )
        parts.append(text[at:start])
        parts.append(edit.new_text)
        at = end
    parts.append(text[at:])
    return "".join(parts)
