"""Reading a file safely: a regular file, never blocking, never through a swapped link.

Every file the daemon reads (tool inputs, the documents it sends to language servers, the
lines of previews, the files an edit touches) is read by `read_file`:

1. the path is resolved through symlinks and must lie inside the root (unless the caller
   reads a file a server named outside it, such as a standard-library stub);
2. a path that is not a regular file (a folder, FIFO, socket or device) is refused before
   anything is opened, and so is a file over the size limit;
3. the file is opened with O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY: a link swapped
   in at the last step is refused, and a FIFO swapped in cannot block the opening;
4. the descriptor is checked: fstat says it is a regular file within the limit, and its
   real path (`/proc/self/fd/N`) is the path resolved in step 1, so a link swapped in at
   any folder of the path is caught;
5. at most the limit (plus one byte, to notice growth) is read.

A race between the steps is a tool error, never the content of another file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from pathlib import Path

from codeward.daemon.paths import real_path, shown_path
from codeward.protocol.errors import ErrorKind, ToolError

DEFAULT_LIMIT = 8 * 1024 * 1024
Stat = tuple[int, ...]
UNTRUSTED: Stat = (-1,)  # equal to no real stat: the file is read again next time
# An open that meets a write lease (EWOULDBLOCK) is asked again this long, this often.
LEASE_WAIT = 0.1
_LEASE_RETRY = 0.0005
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class Missing(ToolError):
    """`file_not_found` for a path where nothing is (callers may take that as "deleted")."""


def stat_key(st: os.stat_result) -> Stat:
    """What must stay the same for a file not to have changed: mtime, size, inode, ctime."""
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


def content_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_file(
    path: Path | str, root: Path, limit: int = DEFAULT_LIMIT, *, outside: bool = False
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `path` and its stat as opened (see the module doc).

    With `outside`, a file outside `root` may be read (a server's standard-library stub);
    it is still resolved, opened without following links and checked the same way.
    Raises `file_not_found`, `invalid_arguments` (a folder), `unsupported_file_type` (not a
    regular file, or over `limit`) or `path_outside_project`; messages show the path
    relative to the root, never an absolute path outside it.
    """
    expected = real_path(path)
    shown = shown_path(expected, root)
    if not outside and shown is None:
        raise _outside()
    name = shown or "The file"
    try:
        before = os.stat(expected)
    except OSError as exc:
        raise _missing(name, exc) from None
    _check(before, name, limit)
    try:
        fd = _open(expected, name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the file became a link since it was resolved
            raise _changed(path, root, name, outside) from None
        raise _missing(name, exc) from None
    try:
        opened = os.fstat(fd)
        _check(opened, name, limit)
        if _fd_path(fd, expected, opened) != expected:
            raise _changed(path, root, name, outside)
        return _read(fd, opened.st_size, limit, name), opened
    except OSError as exc:
        raise _missing(name, exc) from None
    finally:
        os.close(fd)


def _open(expected: str, name: str) -> int:
    """Open without blocking. A regular file under another holder's write lease (an edit
    being written in place, edits/leases.py) answers EWOULDBLOCK: asked again for up to
    `LEASE_WAIT` seconds, the milliseconds such a write takes, then a clear error."""
    deadline = time.monotonic() + LEASE_WAIT
    while True:
        try:
            return os.open(expected, _FLAGS)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ToolError(
                    ErrorKind.TIMEOUT,
                    f"{name!r} is being written by another program (it holds a lease on it); "
                    "run the tool again in a moment.",
                    path=name,
                ) from None
            time.sleep(_LEASE_RETRY)


def _fd_path(fd: int, expected: str, opened: os.stat_result) -> str:
    """The real path of the open descriptor `fd`."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the inode must be the one the path names now
        now = os.stat(expected)
        return expected if (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino) else ""


def _check(st: os.stat_result, name: str, limit: int) -> None:
    if stat.S_ISREG(st.st_mode):
        if st.st_size > limit:
            raise too_large(name, st.st_size, limit)
        return
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"{name!r} is a directory; give a file.")
    what = next((label for test, label in _KINDS if test(st.st_mode)), "not a regular file")
    raise ToolError(
        ErrorKind.UNSUPPORTED_FILE_TYPE,
        f"{name!r} is {what}, not a regular file, so codeward does not read it; give a source "
        "file.",
        path=name,
    )


def _read(fd: int, size: int, limit: int, name: str) -> bytes:
    """Up to `limit` bytes; more than that (the file grew after fstat) is refused."""
    chunks: list[bytes] = []
    total = 0
    want = min(size, limit) + 1
    while True:
        # The size fstat gave, plus one byte to see the end: os.read allocates what it is
        # asked for and shrinks it, so asking for more leaves a hole per read in the heap.
        chunk = os.read(fd, want - total if total < want else 65536)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise too_large(name, total, limit)
    return b"".join(chunks)


def too_large(name: str, size: int, limit: int) -> ToolError:
    return ToolError(
        ErrorKind.UNSUPPORTED_FILE_TYPE,
        f"{name!r} is {_mib(size)}, more than the {_mib(limit)} codeward reads and sends to "
        "language servers; give a smaller file, or raise [lsp] max_file_bytes in the config.",
        path=name,
        size=size,
        limit=limit,
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def _outside() -> ToolError:
    return ToolError(
        ErrorKind.PATH_OUTSIDE_PROJECT,
        "The file is outside the project (a link leads out of it); give a path inside the root.",
    )


def _changed(path: Path | str, root: Path, name: str, outside: bool) -> ToolError:
    """The error for a file that changed between resolving and opening it."""
    if not outside and shown_path(real_path(path), root) is None:
        return ToolError(
            ErrorKind.PATH_OUTSIDE_PROJECT,
            f"{name!r} became a link out of the project while codeward opened it, so it was "
            "not read; give a path inside the root.",
        )
    return ToolError(
        ErrorKind.FILE_NOT_FOUND,
        f"{name!r} was replaced (by a link or a move) while codeward opened it, so it was "
        "not read; run the tool again once it is settled.",
        path=name,
    )


def _missing(name: str, exc: OSError) -> ToolError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Missing(
            ErrorKind.FILE_NOT_FOUND,
            f"{name!r} does not exist; check the path (relative to the root).",
            path=name,
        )
    return ToolError(
        ErrorKind.FILE_NOT_FOUND,
        f"{name!r} cannot be read ({exc.strerror}); check its permissions.",
        path=name,
    )
