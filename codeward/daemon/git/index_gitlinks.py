"""The gitlinks of a git index file, read without walking its entries in Python.

A refreshed index (what `git status`, `git add` and an editor's save make git write) keeps
its entries but rewrites their stat fields, so its stat changes while the set of gitlinks
(the submodules and repositories added inside it, which the inspection scans) does not.
`gitlinks` finds every entry whose mode is a gitlink's with C-level searches, each hit checked
as an entry (the name length in its flags and the name's NUL ending), so a 10,000-file
index costs a read and a few passes of C, not 10,000 steps of Python. Entries of versions 2
and 3 are padded to multiples of 8 bytes after a 12-byte header, so every mode lies 4 bytes
past a multiple of 8 and its one rare byte (0xe0) 6 past: the search takes those bytes
alone (one strided slice, an eighth of the file) and looks for 0xe0 there with `memchr`,
rather than for the mode's 4 bytes everywhere (which starts with NULs that every stat
field is full of: a byte-by-byte crawl, ~0.75 ms for a 10,000-file index against ~0.1).
A hit that only looks like an entry (stat or hash bytes that happen to spell the mode)
adds a name the next read finds again: the set only serves to compare one read with
another, and an extra name can only make a change be seen, never hide one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

GITLINK_MODE = b"\x00\x00\xe0\x00"  # 0o160000, big-endian, as every entry stores its mode
MODE_AT = 24  # ctime, mtime (8 bytes each), dev, ino (4 each), then the mode
HEADER = 12  # "DIRC", version, entry count
ALIGN = 8  # every entry's length is a multiple of this
RARE_AT = (HEADER + MODE_AT + 2) % ALIGN  # where a mode's 0xe0 lies past a multiple of 8
EXTENDED = 0x4000  # flags bit: two more flag bytes follow (version 3)
NAME_MASK = 0xFFF  # a name this long or longer stores 0xFFF and ends at its NUL
MAX_BYTES = 256 * 1024 * 1024  # beyond this the index is not read here (git lists it)
LINK = b"link"  # the signature of a split index's extension naming its shared part
LINK_SEARCH_BYTES = 16 * 1024  # an index this small is searched for it (less than a listing)


class Read(NamedTuple):
    stat: tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode: of the bytes read
    gitlinks: frozenset[bytes] | None  # None: not a format read here (git must list it)


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def read(index: Path, hash_bytes: int) -> Read | None:
    """The stat of the index file and the names of its gitlinks (None: no index file).

    The names are None for what is not read here: index version 4 (its names are
    prefix-compressed), a split index (its entries are in `sharedindex.*` files too), a
    file that is not an index, or one past `MAX_BYTES`."""
    try:
        fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        key = stat_key(st)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return Read(key, None)
        data = _read_all(fd, st.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)
    if (len(data) > LINK_SEARCH_BYTES or LINK in data) and _split(index.parent):
        return Read(key, None)
    return Read(key, parse(data, hash_bytes))


def parse(data: bytes, hash_bytes: int) -> frozenset[bytes] | None:
    """The gitlinks' names in the bytes of an index of version 2 or 3 (None: another)."""
    if data[:4] != b"DIRC" or data[4:8] not in (b"\x00\x00\x00\x02", b"\x00\x00\x00\x03"):
        return None
    flags_at = MODE_AT + 16 + hash_bytes  # mode, uid, gid, size, then the object id
    found: set[bytes] = set()
    column = data[RARE_AT::ALIGN]  # the byte where each entry's mode has its 0xe0
    i = column.find(b"\xe0", (HEADER + MODE_AT + 2) // ALIGN)  # from the first entry's
    while i >= 0:
        mode = RARE_AT + ALIGN * i - 2
        if data[mode : mode + 4] == GITLINK_MODE:
            name = _name(data, mode - MODE_AT, flags_at)
            if name is not None:
                found.add(name)
        i = column.find(b"\xe0", i + 1)
    return frozenset(found)


def _name(data: bytes, entry: int, flags_at: int) -> bytes | None:
    """The name of the entry starting at `entry`, if the bytes there read as one."""
    flags_end = entry + flags_at + 2
    if flags_end > len(data):
        return None
    flags = int.from_bytes(data[flags_end - 2 : flags_end], "big")
    start = flags_end + (2 if flags & EXTENDED else 0)
    length = flags & NAME_MASK
    end = data.find(b"\x00", start) if length == NAME_MASK else start + length
    if length == 0 or end < start + length or end >= len(data) or data[end] != 0:
        return None
    if data.find(b"\x00", start, end) >= 0:
        return None
    return data[start:end]


def _read_all(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        part = os.read(fd, size)
        if not part:
            break
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _split(git_dir: Path) -> bool:
    """Whether a split index may be in use: its shared part is a `sharedindex.*` file. (An
    index without the bytes of the `link` extension anywhere is whole whatever the folder
    holds: git reads a shared part only where that extension names one. A small index is
    searched for them first, which costs less than this listing.)"""
    try:
        with os.scandir(git_dir) as entries:
            return any(entry.name.startswith("sharedindex.") for entry in entries)
    except OSError:
        return True
