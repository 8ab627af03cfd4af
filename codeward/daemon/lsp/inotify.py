"""Linux inotify through libc, read with trio (no thread): a non-blocking descriptor, watches
added and removed by path, and the events it has queued, parsed."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import trio

MODIFY, CLOSE_WRITE = 0x2, 0x8
MOVED_FROM, MOVED_TO, CREATE, DELETE = 0x40, 0x80, 0x100, 0x200
Q_OVERFLOW, IGNORED, ISDIR = 0x4000, 0x8000, 0x40000000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x1000000, 0x2000000, 0x4000000
_NONBLOCK, _CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
# What a folder's watch reports: its entries written, created, deleted or moved.
FOLDER_EVENTS = MODIFY | CLOSE_WRITE | MOVED_FROM | MOVED_TO | CREATE | DELETE
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name

_libc = ctypes.CDLL(None, use_errno=True)
AVAILABLE = hasattr(_libc, "inotify_init1")  # Linux
if AVAILABLE:
    _libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]


@dataclass(frozen=True, slots=True)
class Event:
    wd: int
    mask: int
    name: str  # "" for an event about the watched folder itself


class Inotify:
    """One inotify instance; `close()` it (or use it as a context manager)."""

    def __init__(self) -> None:
        fd = _libc.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            _raise()
        self.fd: int = fd

    def __enter__(self) -> Inotify:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            trio.lowlevel.notify_closing(self.fd)
            os.close(self.fd)
            self.fd = -1

    def add_folder(self, path: str) -> int:
        """Watch folder `path` (not through a symlink); its watch descriptor. Raises OSError
        (ENOSPC: the user's watch limit, ENOENT/ENOTDIR: gone or not a folder)."""
        wd = _libc.inotify_add_watch(
            self.fd, os.fsencode(path), FOLDER_EVENTS | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
        )
        if wd < 0:
            _raise(path)
        return wd

    def remove(self, wd: int) -> None:
        """Stop watch `wd`; nothing when it is already gone."""
        _libc.inotify_rm_watch(self.fd, wd)

    async def wait(self) -> None:
        """Until events are queued."""
        await trio.lowlevel.wait_readable(self.fd)

    def read(self) -> list[Event]:
        """Events queued now, up to 64 KiB of them (none: []): a bounded step however fast
        they come (`wait` returns at once while more are queued)."""
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        return list(_parse(data))


def _parse(data: bytes) -> Iterator[Event]:
    at = 0
    while at + _HEADER.size <= len(data):
        wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
        at += _HEADER.size
        name = data[at : at + size].split(b"\0", 1)[0]
        at += size
        yield Event(wd, mask, os.fsdecode(name))


def _raise(path: str | None = None) -> None:
    code = ctypes.get_errno()
    raise OSError(code, os.strerror(code), path)
