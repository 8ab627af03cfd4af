"""Writing a prepared edit atomically: every file or none.

Each file is reached through its folder, opened from the root's descriptor one name at a time
without following links (`folders.py`), so a folder swapped for a link after the edit was
checked cannot redirect any write, staging files included; a file with other hard links is
refused (`hard link`), never written. Each new content goes to a temporary file in the same
folder (fsynced, with the old file's permission bits and owner), and only when all are
staged does `os.replace` put them in place; a deleted file is first moved aside, and a new
file is linked only where none exists.
Just before each replace the file's bytes are compared with those the edit was computed
from, and the replaced file is kept open: after the last replace, a file that changed in
between (a write that landed after the check) rolls everything back as `stale_edit`, that
file getting the content it had just before the replace. When a replace fails, the files
already replaced get their old content back and the ones moved aside return.

A replace cannot see a program that opened the old file just before it and writes just
after the last check: that write lands in the replaced file and is lost. So an edit that
only changes existing files first takes a Linux write lease on each (`leases.py`): granted
only while no other process has the file open, and any process that opens it meanwhile
waits until the lease is released. Under the leases each file is checked and written in
place, its staged copy kept until the write is done; another writer then sees the new
content, never the old one. Where a lease cannot be had (the file is open elsewhere, a
file system without leases, SIGIO not ignored), the replace path above is taken.

`make_folders` makes the missing folders a moved file goes to, the same way (name by name
from the root, no link followed, no git directory), before the edit is prepared.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from codeward.daemon.edits.folders import (
    FOLDER,
    Folders,
    check_links,
    hard_link,
    in_git_dir,
    is_git_dir,
    moved,
)
from codeward.daemon.edits.leases import Leased, lease_all, unlease
from codeward.daemon.edits.plan import EditPlan, FileChange, stale
from codeward.daemon.files import Missing, read_file
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


def _current(root: Path, change: FileChange) -> tuple[bytes | None, os.stat_result | None]:
    """What `change.path` holds now, through `read_file` (None: nothing is there); anything
    but a regular file of at most the planned size makes the edit stale."""
    limit = len(change.before) if change.before is not None else 0
    try:
        data, st = read_file(change.path, root, limit)
    except Missing:
        return None, None
    except ToolError:
        raise stale(change.shown) from None
    check_links(st, change.shown)
    return data, st


def _stage(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None, at: int) -> str:
    """A fsynced temporary file beside `path`, in its open folder `at`, holding `data`; its
    name there."""
    while True:
        temp = _aside_name(path)
        try:
            fd = os.open(temp, _NEW, 0o600, dir_fd=at)
            break
        except FileExistsError:
            continue
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
            os.unlink(temp, dir_fd=at)
        raise
    return temp


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _aside_name(path: Path) -> str:
    """A fresh name beside `path` for a staged copy or a file moved aside."""
    return f".{path.name}.{secrets.token_hex(6)}.codeward"


# A write refused by the system: `write_failed`'s `data.reason`, what it means, what to do.
_REFUSED: dict[int, tuple[str, str, str]] = {
    errno.ENOSPC: ("no_space", "the disk is full", "free some space"),
    errno.EDQUOT: ("no_space", "the disk quota is used up", "free some space"),
    errno.EROFS: ("read_only", "its file system is read-only", "remount it writable"),
    errno.EPERM: (
        "not_permitted",
        "writing it is not permitted",
        "check its attributes (an immutable file: lsattr) and permissions",
    ),
    errno.EACCES: ("not_permitted", "writing it is not permitted", "check its permissions"),
}


def refused(shown: str, exc: OSError) -> ToolError:
    """`write_failed` for a write of `shown` the system refused (one of `_REFUSED`)."""
    reason, said, then = _REFUSED[exc.errno or 0]
    return ToolError(
        ErrorKind.WRITE_FAILED,
        f"{shown!r} cannot be written: {said}. Nothing was lost: every file of the "
        f"edit keeps its content; {then} and run it again.",
        path=shown,
        reason=reason,
    )


def _failed(change: FileChange, exc: OSError) -> ToolError:
    """The error of a file that could not be written (everything rolled back): which of
    `_REFUSED` it was, else `file_not_found` (its folder gone, say)."""
    if (exc.errno or 0) in _REFUSED:
        return refused(change.shown, exc)
    return ToolError(
        ErrorKind.FILE_NOT_FOUND,
        f"{change.shown!r} cannot be written ({exc.strerror or exc.__class__.__name__}), so "
        "nothing was changed; check that its folder still exists.",
        path=change.shown,
    )


def commit(plan: EditPlan) -> None:
    """Write every change of `plan`, or none of them (blocking: run it in a thread).

    Raises `stale_edit` when a file no longer has the content the plan was computed
    from, and `write_failed` (a full disk, a read-only file system, a refused write) or
    `file_not_found` when a file cannot be written (after rolling back).
    """
    owners: dict[Path, tuple[int, int]] = {}
    for change in plan.changes:
        data, st = _current(plan.root, change)
        if data != change.before:
            raise stale(change.shown)
        if st is not None:
            owners[change.path] = (st.st_uid, st.st_gid)
    default_mode = 0o666 & ~_umask()
    staged: list[tuple[FileChange, str | None]] = []
    with Folders(plan.root) as folders:
        at = {c.path: folders.of(c.path, c.shown) for c in plan.changes}
        try:
            for change in plan.changes:
                temp = None
                if change.after is not None:
                    mode = default_mode if change.mode is None else change.mode
                    owner = owners.get(change.path)
                    try:
                        temp = _stage(change.path, change.after, mode, owner, at[change.path])
                    except OSError as exc:
                        raise _failed(change, exc) from None
                staged.append((change, temp))
            leased = lease_all(plan.changes, at)
            if leased is not None:
                _write_in_place(leased, at)
            else:
                _replace_all(staged, default_mode, owners, at)
        finally:
            for change, temp in staged:
                if temp is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(temp, dir_fd=at[change.path])
        for fd in set(at.values()):
            with contextlib.suppress(OSError):
                os.fsync(fd)


def _replace_all(
    staged: list[tuple[FileChange, str | None]],
    mode: int,
    owners: dict[Path, tuple[int, int]],
    at: dict[Path, int],
) -> None:
    """Put every staged file in place, each checked against its bytes just before its
    replace; then check that no write reached a replaced file in between. Any failure
    puts every file back and raises."""
    undo: list[Callable[[], None]] = []
    aside: list[tuple[str, int]] = []  # files moved aside, by name in their folder
    held: list[tuple[FileChange, int]] = []  # the replaced files, still open
    restore: dict[Path, bytes | None] = {}  # what a file gets back when rolled back
    current = staged[0][0] if staged else None
    try:
        try:
            for change, temp in staged:
                current = change
                restore[change.path] = change.before
                folder, name = at[change.path], change.path.name
                if change.before is None:  # a new file: made only if still absent
                    assert temp is not None
                    _create(change, temp, folder)
                    undo.append(lambda n=name, f=folder: os.unlink(n, dir_fd=f))
                    continue
                held.append((change, _open_unchanged(change, folder)))
                if temp is None:  # a deletion: move it aside until everything else is in place
                    backup = _aside_name(change.path)
                    os.replace(name, backup, src_dir_fd=folder, dst_dir_fd=folder)
                    aside.append((backup, folder))
                    undo.append(
                        lambda n=name, b=backup, f=folder: os.replace(
                            b, n, src_dir_fd=f, dst_dir_fd=f
                        )
                    )
                else:
                    os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
                    undo.append(
                        lambda c=change, f=folder: _restore(
                            c, restore[c.path], mode, owners.get(c.path), f
                        )
                    )
            # A write that reached a file after its check went to the file now replaced.
            for change, fd in held:
                data = _read_fd(fd)
                if data != change.before:
                    restore[change.path] = data
                    current = change
                    raise stale(change.shown)
        except (OSError, ToolError) as exc:
            for step in reversed(undo):
                try:
                    step()
                except OSError as undo_exc:  # pragma: no cover - a second failure
                    log.error("rolling back an edit failed: %s", undo_exc)
            if isinstance(exc, ToolError):
                raise
            assert current is not None
            raise _failed(current, exc) from None
    finally:
        for _, fd in held:
            os.close(fd)
    for backup, folder in aside:
        with contextlib.suppress(OSError):
            os.unlink(backup, dir_fd=folder)


def _write_in_place(leased: Leased, at: dict[Path, int]) -> None:
    """Check and write each leased file through its descriptor; any failure writes the old
    bytes back and raises. The leases are released at the end, whatever happens."""
    written: list[tuple[FileChange, int]] = []
    current: FileChange | None = None
    with leased:
        try:
            for change, fd in leased.files:
                current = change
                if _read_fd(fd) != change.before:
                    raise stale(change.shown)
            for change, fd in leased.files:
                current = change
                assert change.after is not None
                written.append((change, fd))
                _overwrite(fd, change.after)
                if change.mode is not None:
                    os.fchmod(fd, change.mode)
            for change, fd in leased.files:  # still the file at its path: not moved away
                current = change
                if not _same_file(change.path, fd, at[change.path]):
                    raise stale(change.shown)
            # Held only while writing: programs waiting to open go on before the fsyncs.
            unlease(fd for _, fd in leased.files)
            for change, fd in leased.files:
                current = change
                os.fsync(fd)
        except (OSError, ToolError) as exc:
            for change, fd in reversed(written):
                try:
                    assert change.before is not None
                    _overwrite(fd, change.before)
                    os.fsync(fd)
                except OSError as undo_exc:  # pragma: no cover - a second failure
                    log.error("rolling back an edit failed: %s", undo_exc)
            if isinstance(exc, ToolError):
                raise
            assert current is not None
            raise _failed(current, exc) from None


def _overwrite(fd: int, data: bytes) -> None:
    """Make the open file hold exactly `data` (it grows first, then shrinks)."""
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)
    os.ftruncate(fd, len(data))


def _same_file(path: Path, fd: int, folder: int) -> bool:
    """Whether `path` (in its open `folder`) is still the file open as `fd`."""
    try:
        on_disk = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def _create(change: FileChange, temp: str, folder: int) -> None:
    """Link the staged file at `change.path`, which must not exist (never overwritten)."""
    try:
        name = change.path.name
        os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        raise stale(change.shown) from None


def _open_unchanged(change: FileChange, folder: int) -> int:
    """A descriptor of `change.path`, whose bytes must still be `change.before`."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(change.path.name, flags, dir_fd=folder)
    except OSError:  # gone, or a symlink or something else put in its place
        raise stale(change.shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or _read_fd(fd) != change.before:
            raise stale(change.shown)
        if st.st_nlink > 1:  # linked elsewhere since it was read
            raise hard_link(change.shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int) -> bytes:
    """Every byte of the open file `fd`, from its start."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _restore(
    change: FileChange, data: bytes | None, mode: int, owner: tuple[int, int] | None, folder: int
) -> None:
    """Put back `data` at `change.path`, in its open `folder` (None: remove the file)."""
    name = change.path.name
    if data is None:
        os.unlink(name, dir_fd=folder)
        return
    temp = _stage(change.path, data, change.mode or mode, owner, folder)
    try:
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


def make_folders(root: Path, folder: Path) -> list[Path]:
    """Make `folder` (canonical, inside the root) and its missing parents, name by name from
    the root's descriptor without following links, none in a git directory: the folders
    made, outermost first (an edit that fails removes them again)."""
    shown = folder.relative_to(root).as_posix()
    made: list[Path] = []
    current = root
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in folder.relative_to(root).parts:
            current = current / name
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
                made.append(current)
            except FileExistsError:
                pass
            inner = os.open(name, FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
            if is_git_dir(fd):
                raise in_git_dir(shown)
    except (OSError, ToolError) as exc:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        if isinstance(exc, ToolError):
            raise
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and current.is_symlink()):
            raise moved(shown, exc) from None
        if exc.errno in _REFUSED:
            raise refused(shown, exc) from None
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The folder {shown!r} cannot be made ({exc.strerror}), so nothing was written; "
            "give a path whose folders are folders.",
            path=shown,
        ) from None
    finally:
        os.close(fd)
    return made
