"""Input paths of tools: relative to the root or absolute inside it, resolved through symlinks."""

from __future__ import annotations

import os
from pathlib import Path

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


def _shown(path: str, root: Path) -> str:
    """The path as it may appear in a message: root-relative, or the caller's own words."""
    p = Path(path)
    if p.is_absolute():
        try:
            return repr(p.relative_to(root).as_posix())
        except ValueError:
            return "the given path"
    return repr(path)
