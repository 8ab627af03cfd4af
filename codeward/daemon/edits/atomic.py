"""Writing a prepared edit atomically: every file or none.

Each new content goes to a temporary file in the same folder (fsynced, with the old file's
permission bits and owner), and only when all are staged does `os.replace` put them in
place; a deleted file is first moved aside. When a replace fails, the files already
replaced get their old content back and the ones moved aside return.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path

from codeward.daemon.edits.plan import EditPlan, FileChange, stale
from codeward.protocol.errors import ErrorKind, ToolError

log = logging.getLogger("codeward.edits")


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _current(path: Path) -> tuple[bytes | None, os.stat_result | None]:
    try:
        with open(path, "rb") as f:
            return f.read(), os.fstat(f.fileno())
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except IsADirectoryError:
        return b"", None  # a folder where a file was: never equal to what was planned


def _stage(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None) -> str:
    """A fsynced temporary file beside `path` holding `data`; its name."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".codeward")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            if owner is not None and owner != (os.getuid(), os.getgid()):
                with contextlib.suppress(OSError):
                    os.fchown(f.fileno(), *owner)
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _failed(change: FileChange, exc: OSError) -> ToolError:
    return ToolError(
        ErrorKind.FILE_NOT_FOUND,
        f"{change.shown!r} cannot be written ({exc.strerror or exc.__class__.__name__}), so "
        "nothing was changed; check its permissions and free space.",
        path=change.shown,
    )


def commit(plan: EditPlan) -> None:
    """Write every change of `plan`, or none of them (blocking: run it in a thread).

    Raises `stale_edit` when a file no longer has the content the plan was computed
    from, and `file_not_found` when a file cannot be written (after rolling back).
    """
    owners: dict[Path, tuple[int, int]] = {}
    for change in plan.changes:
        data, st = _current(change.path)
        if data != change.before:
            raise stale(change.shown)
        if st is not None:
            owners[change.path] = (st.st_uid, st.st_gid)
    default_mode = 0o666 & ~_umask()
    staged: list[tuple[FileChange, str | None]] = []
    try:
        for change in plan.changes:
            temp = None
            if change.after is not None:
                mode = default_mode if change.mode is None else change.mode
                try:
                    temp = _stage(change.path, change.after, mode, owners.get(change.path))
                except OSError as exc:
                    raise _failed(change, exc) from None
            staged.append((change, temp))
        _replace_all(staged, default_mode, owners)
    finally:
        for _, temp in staged:
            if temp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
    for folder in {c.path.parent for c in plan.changes}:
        _fsync_dir(folder)


def _replace_all(
    staged: list[tuple[FileChange, str | None]], mode: int, owners: dict[Path, tuple[int, int]]
) -> None:
    undo: list[Callable[[], None]] = []
    aside: list[str] = []
    current = staged[0][0] if staged else None
    try:
        for change, temp in staged:
            current = change
            if temp is None:  # a deletion: move it aside until everything else is in place
                backup = str(
                    change.path.parent / f".{change.path.name}.{secrets.token_hex(6)}.codeward"
                )
                os.replace(change.path, backup)
                aside.append(backup)
                undo.append(lambda c=change, b=backup: os.replace(b, c.path))
            else:
                os.replace(temp, change.path)
                undo.append(lambda c=change: _restore(c, mode, owners.get(c.path)))
    except OSError as exc:
        for step in reversed(undo):
            try:
                step()
            except OSError as undo_exc:  # pragma: no cover - a second failure while rolling back
                log.error("rolling back an edit failed: %s", undo_exc)
        assert current is not None
        raise _failed(current, exc) from None
    for backup in aside:
        with contextlib.suppress(OSError):
            os.unlink(backup)


def _restore(change: FileChange, mode: int, owner: tuple[int, int] | None) -> None:
    """Put back what `change.path` held before (its old content, or nothing)."""
    if change.before is None:
        os.unlink(change.path)
        return
    temp = _stage(change.path, change.before, change.mode or mode, owner)
    try:
        os.replace(temp, change.path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
