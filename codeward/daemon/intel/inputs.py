"""Tool inputs: a source file inside the root, of a configured language, and a position in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeward.daemon.lsp.defaults import language_of
from codeward.daemon.lsp.manager import LspManager
from codeward.daemon.lsp.positions import split_lines
from codeward.daemon.paths import relative, resolve_input_path
from codeward.protocol.errors import ErrorKind, ToolError


@dataclass(frozen=True)
class SourceFile:
    path: Path  # canonical, inside the root
    shown: str  # root-relative, for results and messages
    language: str
    lines: list[str]

    @property
    def line_count(self) -> int:
        """Lines as an editor counts them (a final newline opens no line)."""
        if len(self.lines) > 1 and self.lines[-1] == "":
            return len(self.lines) - 1
        return len(self.lines)


def source_file(manager: LspManager, path: str) -> SourceFile:
    """Check `path` (inside the root, a file, of a language, text) and read it."""
    resolved = resolve_input_path(manager.root, path)
    shown = relative(resolved, manager.root)
    language = language_of(resolved, manager.root, manager.languages)
    if language is None:
        configured = ", ".join(sorted(manager.languages))
        raise ToolError(
            ErrorKind.UNSUPPORTED_FILE_TYPE,
            f"No language is configured for {shown!r} (configured: {configured}); give a source "
            "file of one of them, or add its patterns under [languages] in the config.",
            path=shown,
        )
    try:
        data = resolved.read_bytes()
    except OSError as exc:
        raise ToolError(
            ErrorKind.FILE_NOT_FOUND, f"{shown!r} cannot be read ({exc.strerror}); check it."
        ) from None
    try:
        if b"\x00" in data:
            raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), 1, "NUL byte")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            ErrorKind.UNSUPPORTED_FILE_TYPE,
            f"{shown!r} is not a UTF-8 text file (it looks binary); give a source file.",
            path=shown,
        ) from None
    return SourceFile(resolved, shown, language, split_lines(text))


def check_position(source: SourceFile, line: int, character: int) -> None:
    """`invalid_arguments` unless 1 <= line <= lines and 1 <= character <= line length + 1."""
    count = source.line_count
    if line < 1 or line > len(source.lines):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"Line {line} is not in {source.shown!r}, which has {count} "
            f"line{'s' if count != 1 else ''}; give a line from 1 to {max(count, 1)}.",
        )
    width = len(source.lines[line - 1])
    if character < 1 or character > width + 1:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"Character {character} is not on line {line} of {source.shown!r}, which has "
            f"{width} characters; give a character from 1 to {width + 1} "
            f"(the file has {count} line{'s' if count != 1 else ''}).",
        )
