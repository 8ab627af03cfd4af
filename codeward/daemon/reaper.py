"""The guardian process, and the record of process groups that the daemon keeps and the
guardian (or the next daemon) reads.

RECORD (`<socket>.procs`) is a table the daemon maps into its memory: a header with the boot
id, then one slot per process group (`pgid`, and the first and last clock tick since boot
its leader can have started at; a pgid of 0 is a free slot). Registering or unregistering a
group is a write to that memory: no system call, and nothing to wake.

Run as a script (`python -I -S reaper.py RECORD`, standard library only, so it starts in
milliseconds), the guardian opens RECORD, waits for its stdin to close (the daemon exited,
however), then SIGKILLs every group RECORD names, removes RECORD and exits. See
`codeward.daemon.guardian` for the daemon's side.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import struct
import sys
from pathlib import Path

Started = tuple[int, int]  # first and last clock tick since boot its leader can have started at

HEADER_BYTES = 64  # `boot ID\n`, padded with NULs
SLOT = struct.Struct("=qqq")  # pgid, first, last
INITIAL_SLOTS = 256


def stat_fields(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command name (state first); [] when gone."""
    try:  # os.read, not a file object: a walk of /proc reads every process's
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return []
    try:
        # the command name may hold spaces and parentheses: split after the last ')'
        return os.read(fd, 4096).rsplit(b")", 1)[-1].split()
    except OSError:
        return []
    finally:
        os.close(fd)


def start_time(pid: int) -> int:
    """The start time of `pid` in clock ticks since boot (0 when it is gone)."""
    fields = stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else 0


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _header() -> bytes:
    return f"boot {boot_id()}\n".encode().ljust(HEADER_BYTES, b"\0")[:HEADER_BYTES]


def kill_group(pgid: int, started: Started) -> bool:
    """SIGKILL group `pgid` unless its id now belongs to another group (a new leader with
    that pid, started outside `started`). True when a signal was sent."""
    fields = stat_fields(pgid)
    leader = len(fields) > 19 and int(fields[2]) == pgid
    if leader and not started[0] <= int(fields[19]) <= started[1]:
        return False  # pid used again, by the leader of a new group: not ours
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def read_record(record: Path) -> dict[int, Started]:
    """pgid -> leader start ticks from `record`; {} when missing or from another boot."""
    try:
        data = record.read_bytes()
    except OSError:
        return {}
    return parse_record(data)


def parse_record(data: bytes) -> dict[int, Started]:
    """pgid -> leader start ticks from a record's bytes; {} when from another boot."""
    if len(data) < HEADER_BYTES or data[:HEADER_BYTES] != _header():
        return {}
    groups: dict[int, Started] = {}
    end = len(data) - (len(data) - HEADER_BYTES) % SLOT.size
    for pgid, first, last in SLOT.iter_unpack(data[HEADER_BYTES:end]):
        if pgid > 0 and first <= last:
            groups[pgid] = (first, last)
    return groups


def reap_record(record: Path) -> int:
    """Kill the groups a previous daemon's record names; remove it. How many were killed."""
    killed = sum(kill_group(pgid, started) for pgid, started in read_record(record).items())
    with contextlib.suppress(FileNotFoundError):
        record.unlink()
    return killed


class Table:
    """The daemon's side of RECORD: the file, mapped, with a slot per registered group."""

    def __init__(self, record: Path, groups: dict[int, Started]) -> None:
        """Write `record` anew (atomically: renamed over the old one) holding `groups`."""
        self.record = record
        self.slots: dict[int, int] = {}  # pgid -> slot index
        self._free: list[int] = []
        capacity = max(INITIAL_SLOTS, 2 * len(groups))
        temporary = record.with_name(record.name + ".tmp")
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, HEADER_BYTES + capacity * SLOT.size)
            self._map = mmap.mmap(fd, 0)
            self.inode = os.fstat(fd).st_ino
        finally:
            os.close(fd)
        self._map[:HEADER_BYTES] = _header()
        self._free = list(range(capacity - 1, -1, -1))
        for pgid, started in groups.items():
            self.add(pgid, started)
        os.replace(temporary, record)

    def add(self, pgid: int, started: Started) -> None:
        if pgid in self.slots:
            self.remove(pgid)
        if not self._free:
            self._grow()
        index = self._free.pop()
        offset = HEADER_BYTES + index * SLOT.size
        # the start ticks first, the pgid last: a slot is in use once its pgid is set
        SLOT.pack_into(self._map, offset, 0, *started)
        self._map[offset : offset + 8] = pgid.to_bytes(8, sys.byteorder, signed=True)
        self.slots[pgid] = index

    def remove(self, pgid: int) -> None:
        index = self.slots.pop(pgid, None)
        if index is not None:
            offset = HEADER_BYTES + index * SLOT.size
            self._map[offset : offset + 8] = bytes(8)
            self._free.append(index)

    def _grow(self) -> None:
        capacity = (len(self._map) - HEADER_BYTES) // SLOT.size
        self._map.resize(HEADER_BYTES + 2 * capacity * SLOT.size)  # the file grows with it
        self._free = list(range(2 * capacity - 1, capacity - 1, -1))

    def current(self) -> bool:
        """Whether RECORD is still this table's file (not removed or replaced)."""
        try:
            return os.stat(self.record).st_ino == self.inode
        except OSError:
            return False

    def close(self) -> None:
        self._map.close()


# -- the guardian process ----------------------------------------------------------------------


def main(record: Path) -> int:
    """Wait for stdin to close; then kill every group the record names, and remove it.

    The record is opened first and read through that descriptor, so a record removed
    meanwhile (by a cleaner of old files) still names the daemon's groups."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTSTP):
        signal.signal(signum, signal.SIG_IGN)
    try:
        fd = os.open(record, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        fd = -1
    while os.read(0, 65536):
        pass  # nothing is sent: the pipe is there to close when the daemon is gone
    if fd < 0:
        reap_record(record)
        return 0
    info = os.fstat(fd)
    for pgid, started in parse_record(os.pread(fd, info.st_size, 0)).items():
        kill_group(pgid, started)
    with contextlib.suppress(OSError):
        if os.stat(record).st_ino == info.st_ino:  # ours, not a next daemon's
            record.unlink()
    os.close(fd)
    return 0


if __name__ == "__main__":  # pragma: no cover (runs in the guardian process)
    sys.exit(main(Path(sys.argv[1])))
