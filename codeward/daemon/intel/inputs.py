"""Tool inputs: a source file inside the root, of a configured language, and a position in it."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.daemon.caches import keyed_by_paths
from codeward.daemon.files import read_file, stat_key
from codeward.daemon.lsp.positions import split_lines
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.uris import real_path
from codeward.daemon.paths import relative, resolve_input_path
from codeward.protocol.errors import ErrorKind, ToolError


@dataclass(frozen=True)
class SourceFile:
    path: Path  # canonical, inside the root
    shown: str  # root-relative, for results and messages
    language: str
    lines: Sequence[str]  # a LineIndex's `Lines`, or `split_lines`'

    @property
    def line_count(self) -> int:
        """Lines as an editor counts them (a final newline opens no line)."""
        if len(self.lines) > 1 and self.lines[-1] == "":
            return len(self.lines) - 1
        return len(self.lines)


def source_file(manager: LanguageService, path: str) -> SourceFile:
    """Check `path` (inside the root, a regular file, of a language, text) and read it.

    The text comes from the layer's own copy (an open document, or the line cache) when
    the file's stat still matches the one taken when that copy was read; else from disk,
    through `read_file` (no FIFO, device or swapped link is ever read).
    """
    resolved = resolve_inside(manager.root, path)
    limit = manager.config.lsp.max_file_bytes
    try:
        st = os.stat(resolved)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        # Missing, a folder, a FIFO, a device, too large: the reader says which, in its words.
        read_file(resolved, manager.root, limit)
    shown = _relative(resolved, manager.root)
    language = manager.language_or_none(resolved)
    if language is None:
        configured = ", ".join(manager.configured_languages())
        raise ToolError(
            ErrorKind.UNSUPPORTED_FILE_TYPE,
            f"No language is configured for {shown!r} (configured: {configured}); give a source "
            "file of one of them, or add its patterns under [languages] in the config.",
            path=shown,
        )
    if st is not None:
        known = manager.known_text(resolved, stat_key(st))
        if known is not None and known.plain:
            return SourceFile(resolved, shown, language, known.lines)
    data, _ = read_file(resolved, manager.root, limit)
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


def resolve_inside(root: Path, path: str) -> Path:
    """`resolve_input_path(root, path, must_exist=False)`, by string for a path that is
    plainly inside the root (it is hot); anything else goes the whole way, for its errors."""
    if isinstance(path, str) and path and "\x00" not in path:
        base = str(root)
        real = real_path(path if path.startswith("/") else f"{base}/{path}")
        if real == base or (base != "/" and real.startswith(base + "/")):
            return _path(real)
    return resolve_input_path(root, path, must_exist=False)


@keyed_by_paths
@functools.lru_cache(maxsize=4096)
def _path(real: str) -> Path:
    """One `Path` per resolved string (it is hot): its hash is computed once, and the
    service's tables find it by identity."""
    return Path(real)


def _relative(path: Path, root: Path) -> str:
    """`relative(path, root)` for a resolved path inside the root, by string (it is hot)."""
    text, base = str(path), str(root)
    if text.startswith(base) and text[len(base) : len(base) + 1] == "/" and base != "/":
        return text[len(base) + 1 :]
    return relative(path, root)


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
