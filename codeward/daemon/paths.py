"""Paths: tools' input paths (relative to the root or absolute inside it, resolved through
symlinks) and paths shown in text (`scrub`: root-relative inside the root, `<path>` outside)."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from codeward.protocol.errors import ErrorKind, ToolError

_O_PATH = getattr(os, "O_PATH", 0)


def real_path(path: str | Path) -> str:
    """`os.path.realpath(path)`, asked of the kernel for an existing file (Linux: open it
    with O_PATH and read its /proc/self/fd link): a few system calls instead of an lstat
    per component. Anything unusual falls back on `os.path.realpath`."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            pass
        else:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                real = ""
            finally:
                os.close(fd)
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return real
    for _ in range(5):
        try:
            return os.path.realpath(path)
        except OSError:  # a link replaced between its lstat and its readlink: look again
            continue
    raise ToolError(
        ErrorKind.FILE_NOT_FOUND,
        "A path kept changing while codeward resolved it (a link replaced over and over); "
        "run the tool again once it is settled.",
    )


def is_inside(path: Path, root: Path) -> bool:
    """Whether `path` (already resolved) is `root` or below it."""
    return path == root or root in path.parents


def resolve_input_path(
    root: Path, path: str, *, must_exist: bool = True, allow_dir: bool = False
) -> Path:
    """The canonical path of a tool's `path` argument, checked to lie inside `root`.

    Raises `path_outside_project`, `file_not_found` or `invalid_arguments`; a message shows
    the path as the caller wrote it, never an absolute path outside the project.
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `path` as a non-empty file path.")
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(real_path(candidate))
    if not is_inside(resolved, root):
        raise ToolError(
            ErrorKind.PATH_OUTSIDE_PROJECT,
            f"{_shown(path, root)} is outside the project; give a path inside the root.",
        )
    if must_exist and not resolved.exists():
        raise ToolError(
            ErrorKind.FILE_NOT_FOUND,
            f"{_shown(path, root)} does not exist; check the path (relative to the root).",
        )
    if must_exist and not allow_dir and resolved.is_dir():
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{_shown(path, root)} is a directory; give a file.",
        )
    return resolved


def relative(path: Path, root: Path) -> str:
    """A root-relative POSIX path for output (the path must be inside the root)."""
    return path.relative_to(root).as_posix() if path != root else "."


# Where an absolute path may start: after a space or an opening bracket, `=`, `:`, `,`, `;`,
# `|`, or after a quote that itself opens (a quote after a word closes: `'markdown'/x`).
_OPENERS = frozenset("([{=:,;|")
_QUOTES = frozenset("'\"`")
# A file URI, or an absolute path: a first part right after the `/` (so `https://x` is no
# path), in characters that are not spaces, quotes, brackets or separators of prose (a `:`
# ends either, so what follows one is read again as a path of its own: scrubbing twice
# changes nothing more).
_CANDIDATE = re.compile(
    r"file://(?P<uri>/[^\s'\"`<>()\[\]{},;:|\\^#?]*)"
    r"|(?P<path>/[^\s/'\"`<>()\[\]{},;:|*?\\#&^]+(?:/[^\s/'\"`<>()\[\]{},;:|*?\\#&^]*)*)"
)
_TRAILING_DOTS = re.compile(r"(?<=[^./])\.+\Z")  # a sentence's full stop, not a `..` part


def scrub(text: str, root: Path, show: Callable[[str], str | None] | None = None) -> str:
    """`text` with each absolute path and file URI in it shown root-relative when inside
    `root`, as `<path>` when outside; `show(path)` (default `shown_path`) may show each one
    its own way (None: `<path>`). Words with slashes (`text/markdown`, URLs) stay as they are."""
    out: list[str] = []
    done = 0
    for match in _CANDIDATE.finditer(text):
        start = match.start()
        if start < done or not _opens_word(text, start):
            continue
        uri = match.group("uri")
        raw = uri if uri is not None else match.group("path")
        end = match.end()
        if uri is None and start and text[start - 1] in _QUOTES:  # a quoted path: spaces too
            close = text.find(text[start - 1], start)
            if close > 0 and "\n" not in text[start:close]:
                raw, end = text[start:close], close
        stop = _TRAILING_DOTS.search(raw)
        if stop is not None:
            raw, end = raw[: stop.start()], end - len(stop.group(0))
        path = posixpath.normpath(unquote(raw) if uri is not None else raw)
        if uri is None and path.count("/") < 2 and path != str(root):
            continue  # one part (`/help`): too short to be taken for a file
        shown = show(path) if show is not None else shown_path(path, root)
        out.append(text[done:start])
        out.append(shown if shown is not None else "<path>")
        done = end
    out.append(text[done:])
    return "".join(out)


def _opens_word(text: str, at: int) -> bool:
    if at == 0:
        return True
    before = text[at - 1]
    if before.isspace() or before in _OPENERS:
        return True
    if before in _QUOTES:  # an opening quote: at the start, or after a space or a bracket
        return at == 1 or text[at - 2].isspace() or text[at - 2] in _OPENERS
    return False


def shown_path(path: str, root: Path) -> str | None:
    """An absolute, normalized `path` root-relative when inside `root`, else None."""
    prefix = str(root)
    if path == prefix:
        return "."
    if path.startswith(prefix.rstrip("/") + "/"):
        return path[len(prefix.rstrip("/")) + 1 :]
    return None


def _shown(path: str, root: Path) -> str:
    """The path as it may appear in a message: root-relative, or the caller's own words."""
    p = Path(path)
    if p.is_absolute():
        try:
            return repr(p.relative_to(root).as_posix())
        except ValueError:
            return "the given path"
    return repr(path)
