"""The guardian process, and the record of process groups both it and the daemon read.

Run as a script (`python -I -S reaper.py RECORD`, standard library only, so it starts in
milliseconds): it reads registrations from stdin (`+PGID START` when the daemon starts a
process group, `-PGID` once that group is gone), keeps them in RECORD, and when stdin
closes (the daemon exited, however) SIGKILLs every group still registered, removes RECORD
and exits. See `codeward.daemon.guardian` for the daemon's side.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path


def stat_fields(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command name (state first); [] when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # the command name may hold spaces and parentheses: split after the last ')'
            return f.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return []


def start_time(pid: int) -> int:
    """The start time of `pid` in clock ticks since boot (0 when it is gone)."""
    fields = stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else 0


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def kill_group(pgid: int, started: int) -> bool:
    """SIGKILL group `pgid` unless its id now belongs to another group (a new leader with
    that pid and another start time). True when a signal was sent."""
    fields = stat_fields(pgid)
    if len(fields) > 19 and int(fields[2]) == pgid and int(fields[19]) != started:
        return False  # pid used again, by the leader of a new group: not ours
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def read_record(record: Path) -> dict[int, int]:
    """pgid -> leader start time from `record`; {} when missing or from another boot."""
    try:
        lines = record.read_text().splitlines()
    except OSError:
        return {}
    if not lines or lines[0] != f"boot {boot_id()}":
        return {}
    groups: dict[int, int] = {}
    for line in lines[1:]:
        with contextlib.suppress(ValueError):
            pgid, started = line.split()
            groups[int(pgid)] = int(started)
    return groups


def write_record(record: Path, groups: dict[int, int]) -> None:
    temporary = record.with_name(record.name + ".tmp")
    body = "".join(f"{pgid} {started}\n" for pgid, started in groups.items())
    temporary.write_text(f"boot {boot_id()}\n{body}")
    os.replace(temporary, record)


def reap_record(record: Path) -> int:
    """Kill the groups a previous daemon's record names; remove it. How many were killed."""
    killed = sum(kill_group(pgid, started) for pgid, started in read_record(record).items())
    with contextlib.suppress(FileNotFoundError):
        record.unlink()
    return killed


# -- the guardian process ----------------------------------------------------------------------


def main(record: Path) -> int:
    """Watch stdin until EOF, keeping the record; then kill every group still registered."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTSTP):
        signal.signal(signum, signal.SIG_IGN)
    groups: dict[int, int] = {}
    stdin = sys.stdin.buffer
    while line := stdin.readline():
        if not line.endswith(b"\n"):
            break  # the daemon died mid-line
        with contextlib.suppress(ValueError):
            if line.startswith(b"+"):
                pgid, started = line[1:].split()
                groups[int(pgid)] = int(started)
            elif line.startswith(b"-"):
                groups.pop(int(line[1:]), None)
            else:
                continue
        write_record(record, groups)
    for pgid, started in groups.items():
        kill_group(pgid, started)
    with contextlib.suppress(FileNotFoundError):
        record.unlink()
    return 0


if __name__ == "__main__":  # pragma: no cover (runs in the guardian process)
    sys.exit(main(Path(sys.argv[1])))
