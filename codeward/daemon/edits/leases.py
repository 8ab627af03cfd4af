"""Linux write leases over the files an edit changes: while held, no other process has the
files open, and one that opens them waits until they are released."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType

from codeward.daemon.edits.folders import hard_link
from codeward.daemon.edits.plan import FileChange

# A file open elsewhere (a reader between two reads, a writer between two lines) refuses a
# lease; it is asked again for this long before the edit takes the replace path instead.
LEASE_PATIENCE = 0.05
_RETRY = 0.002


class Leased:
    """Open descriptors (read-write) of the changed files, each under a write lease;
    a context manager that releases and closes them."""

    def __init__(self, files: list[tuple[FileChange, int]]) -> None:
        self.files = files

    def __enter__(self) -> Leased:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        release(fd for _, fd in self.files)


def leases_usable() -> bool:
    """Leases notify their holder with SIGIO, which ends a process that does not ignore it
    (the daemon ignores it from its start)."""
    return hasattr(fcntl, "F_SETLEASE") and signal.getsignal(signal.SIGIO) is signal.SIG_IGN


def lease_all(
    changes: list[FileChange], at: Mapping[Path, int], patience: float = LEASE_PATIENCE
) -> Leased | None:
    """A write lease on every changed file (opened in its folder's descriptor `at[path]`),
    or None when any cannot be had (or a change creates or deletes a file: those take the
    replace path). A file with other hard links is refused (`hard link`)."""
    if not changes or not leases_usable():
        return None
    if any(c.before is None or c.after is None for c in changes):
        return None
    held: list[tuple[FileChange, int]] = []
    try:
        for change in changes:
            fd = _lease(change, at[change.path], patience)
            if fd is None:
                release(fd for _, fd in held)
                return None
            held.append((change, fd))
    except BaseException:
        release(fd for _, fd in held)
        raise
    return Leased(held)


def _lease(change: FileChange, folder: int, patience: float) -> int | None:
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(change.path.name, flags, dir_fd=folder)
    except OSError:
        return None  # gone or not a plain file: the replace path says so precisely
    deadline = time.monotonic() + patience
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        if st.st_nlink > 1:  # written in place, its other names would change too
            raise hard_link(change.shown)
        while True:
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
                return fd
            except OSError:  # EAGAIN: open elsewhere; EINVAL: no leases on this file system
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return None
                time.sleep(_RETRY)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def unlease(fds: Iterable[int]) -> None:
    """Give the leases up (programs waiting to open the files go on); keep the files open."""
    for fd in fds:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


def release(fds: Iterable[int]) -> None:
    """Give the leases up and close the descriptors."""
    fds = list(fds)
    unlease(fds)
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
