"""Which files a git write changed: a stat snapshot of the work tree before and after."""

from __future__ import annotations

import os
from pathlib import Path

Snapshot = dict[str, tuple[int, int, int, int]]  # path -> (mtime_ns, size, inode, mode)


def parse_ls_files(data: bytes) -> list[str]:
    """Paths of `git ls-files -z`, relative to the directory it ran in."""
    return [p for p in data.decode("utf-8", "surrogateescape").split("\x00") if p]


def snapshot(root: Path, paths: list[str]) -> Snapshot:
    """The stat signature of each path under `root` (missing files are left out)."""
    result: Snapshot = {}
    for rel in paths:
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError:
            continue
        result[rel] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
    return result


def changed(root: Path, before: Snapshot, after: Snapshot) -> list[Path]:
    """Files that appeared, disappeared or changed between two snapshots, sorted."""
    names = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    return [root / name for name in sorted(names)]
