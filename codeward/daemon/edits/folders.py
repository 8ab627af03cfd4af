"""Where an edit may write: in folders opened from the root's descriptor one name at a time,
never through a link (a folder swapped for a symlink after the edit was checked cannot send
the write elsewhere), never inside a git directory (known by what it holds: `HEAD`,
`objects/` and `refs/`, whatever its name), and never into a file with other hard links
(writing it would change the other names' content too, perhaps outside the root)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from types import TracebackType

from codeward.protocol.errors import ErrorKind, ToolError

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Folders:
    """The folders of one edit's files, each opened once from the root and held until the
    edit is written (a context manager that closes them)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fds: dict[Path, int] = {}

    def __enter__(self) -> Folders:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def of(self, path: Path, shown: str) -> int:
        """A descriptor of the folder holding `path` (canonical, inside the root): opened
        name by name from the root without following links, none of them a git directory."""
        folder = path.parent
        held = self._fds.get(folder)
        if held is not None:
            return held
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise moved(shown, exc) from None
        try:
            if is_git_dir(fd):
                raise in_git_dir(shown)
            for name in folder.relative_to(self.root).parts:
                try:
                    inner = os.open(name, FOLDER, dir_fd=fd)
                except OSError as exc:
                    raise moved(shown, exc) from None
                os.close(fd)
                fd = inner
                if is_git_dir(fd):
                    raise in_git_dir(shown)
        except BaseException:
            os.close(fd)
            raise
        self._fds[folder] = fd
        return fd


def is_git_dir(folder: Path | int) -> bool:
    """Whether `folder` (a path, or an open folder's descriptor) is a git directory: it
    holds `HEAD` and the folders `objects` and `refs`, as git itself decides."""

    def kind(name: str) -> int:
        if isinstance(folder, int):
            return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        return os.stat(folder / name, follow_symlinks=False).st_mode

    try:
        head = kind("HEAD")
        return (
            (stat.S_ISREG(head) or stat.S_ISLNK(head))
            and stat.S_ISDIR(kind("objects"))
            and stat.S_ISDIR(kind("refs"))
        )
    except OSError:
        return False


def git_dir_holding(root: Path, path: Path) -> str | None:
    """The root-relative git directory `path` (canonical, inside `root`) is or lies in, if
    any: anything named `.git` (a folder, or a worktree's gitfile), or any folder from the
    root down that is a git directory."""
    parts = path.relative_to(root).parts
    if ".git" in parts:
        return Path(*parts[: parts.index(".git") + 1]).as_posix()
    for depth in range(len(parts)):
        folder = root.joinpath(*parts[:depth])
        if is_git_dir(folder):
            return folder.relative_to(root).as_posix()
    return None


def in_git_dir(shown: str) -> ToolError:
    return ToolError(
        ErrorKind.PATH_OUTSIDE_PROJECT,
        f"{shown!r} is inside a git directory (a folder holding HEAD, objects/ and refs/, "
        "whatever its name), so nothing was written; codeward edits only work-tree files.",
        path=shown,
        reason="git directory",
    )


def hard_link(shown: str) -> ToolError:
    return ToolError(
        ErrorKind.PATH_OUTSIDE_PROJECT,
        f"{shown!r} has other hard links (names that may lie outside the project share its "
        "content), so codeward neither edits nor shows it; nothing was written. To edit it, "
        "make it a file of its own (copy it, then move the copy over it).",
        path=shown,
        reason="hard link",
    )


def check_links(st: os.stat_result, shown: str) -> None:
    """Refuse a regular file with more than one link (see `hard_link`)."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise hard_link(shown)


def moved(shown: str, exc: OSError) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ToolError(
            ErrorKind.PATH_OUTSIDE_PROJECT,
            f"A folder of {shown!r} became a link while codeward wrote it, so nothing was "
            "written; give a path inside the root.",
            path=shown,
        )
    if exc.errno == errno.ENOENT:
        return ToolError(
            ErrorKind.STALE_EDIT,
            f"A folder of {shown!r} was moved or removed after the edit was computed, so "
            "nothing was written; run the tool again.",
            path=shown,
        )
    return ToolError(
        ErrorKind.FILE_NOT_FOUND,
        f"A folder of {shown!r} cannot be opened ({exc.strerror}), so nothing was written; "
        "check its permissions.",
        path=shown,
    )
