"""What a file says, remembered while its stat stands: one lstat a call instead of a read.

A value worked out from a path (a directory's names, a file's first bytes) is kept with the
path's stat and reused while a fresh lstat matches it. Only a settled stat counts: one whose
change time lies more than `SETTLE_NS` before the clock read ahead of the lstat. A change
after that gets a change time of its own, later than the one kept (the clock the kernel
stamps files with only goes on; the margin covers file systems that store coarse times), so
it always shows; a path changed just now (an index git wrote this very moment) is worked
out again until its stat has settled. A symbolic link counts as unsettled: what it leads to
changes without its own stat changing.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

SETTLE_NS = 2 * 10**9  # FAT stores times to 2 s; ext4, xfs, btrfs and tmpfs to the ns
ENTRIES = 256  # paths remembered, at most (a few per repository)
_COARSE_CLOCK = getattr(time, "CLOCK_REALTIME_COARSE", time.CLOCK_REALTIME)

Key = tuple[int, int, int, int, int] | None  # mtime, ctime, size, inode, mode; None: absent
_kept: dict[tuple[str, Callable[..., Any]], tuple[Key, Any]] = {}


def now_ns() -> int:
    """The clock files are stamped with, at its coarse tick."""
    return time.clock_gettime_ns(_COARSE_CLOCK)


def value(path: str, work_out: Callable[[str], T]) -> T:
    """`work_out(path)`, or what it returned before while `path`'s settled stat stands."""
    now = now_ns()
    try:
        st = os.lstat(path)
    except OSError:
        key: Key = None
    else:
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
    slot = (path, work_out)
    kept = _kept.get(slot)
    if kept is not None and kept[0] == key:
        return kept[1]
    found = work_out(path)
    if key is None or (key[1] < now - SETTLE_NS and not stat.S_ISLNK(key[4])):
        if len(_kept) >= ENTRIES:
            _kept.clear()
        _kept[slot] = (key, found)
    else:
        _kept.pop(slot, None)
    return found
