"""A language-server process: its own process group, pipes, a bounded stderr ring, and a stop
that leaves nothing behind (SIGTERM to the group, then SIGKILL, then wait for every member);
what a group uses, from one walk of /proc shared by every server's watch (`group_usage`)."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import math
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import trio

from codeward.daemon import guardian
from codeward.daemon.child_path import with_clean_path
from codeward.daemon.lsp import early_process
from codeward.daemon.process_groups import signal_group, stop_group
from codeward.daemon.reads import receive_some
from codeward.daemon.reaper import stat_fields

log = logging.getLogger("codeward.lsp")

STDERR_LINES = 200
# The server's stdout pipe holds this much (Linux's default is 64 KiB): a reply of a few
# thousand locations is written by the server at once, and the daemon's reads of it do not
# wait for the server to be scheduled again every 64 KiB.
STDOUT_PIPE_BYTES = 256 * 1024


class ServerProcess:
    """One spawned server; `pid` is also its process group id. `early` is what a process
    started early was sent and wrote before it was taken (`early_process.Handover`)."""

    def __init__(
        self,
        name: str,
        process: trio.Process | early_process.EarlyProcess,
        early: early_process.Handover | None = None,
    ) -> None:
        self.name = name
        self.process = process
        self.early = early
        self.pid: int = process.pid
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        assert process.stdin is not None and process.stdout is not None
        self.stdin: trio.abc.SendStream = process.stdin
        self.stdout: trio.abc.ReceiveStream = process.stdout

    @classmethod
    async def spawn(
        cls,
        name: str,
        command: list[str],
        cwd: Path,
        env: dict[str, str],
        initialize: dict[str, Any] | None = None,
        settings: Any = None,
    ) -> ServerProcess:
        """Start `command` (or, given the params of its `initialize` and its settings, take
        the same process started early for the root and sent them: `early_process.take`);
        raises OSError (FileNotFoundError: not installed)."""
        full = with_clean_path({**os.environ, **env})
        process: trio.Process | early_process.EarlyProcess
        taken = None
        if initialize is not None:
            taken = await early_process.take(command, cwd, full, initialize, settings)
        if taken is not None:
            process = taken.process
            log.info("%s: taking the process started early (pid %d)", name, process.pid)
        else:
            process = await trio.lowlevel.open_process(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=full,
                start_new_session=True,
            )
            guardian.register(process.pid)
        stdout = process.stdout
        if isinstance(stdout, trio.lowlevel.FdStream):
            with contextlib.suppress(OSError):  # over the system's limit: the default stays
                fcntl.fcntl(stdout.fileno(), fcntl.F_SETPIPE_SZ, STDOUT_PIPE_BYTES)
        return cls(name, process, taken)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def stderr_tail(self, lines: int = 10) -> list[str]:
        return list(self.stderr)[-lines:]

    async def pump_stderr(self) -> None:
        """Keep the last stderr lines in the ring and in the log, until EOF."""
        stream = self.process.stderr
        assert stream is not None
        partial = b""
        while True:
            try:
                chunk = await receive_some(stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                break
            if not chunk:
                break
            *lines, partial = (partial + chunk).split(b"\n")
            if len(partial) > 65536:
                lines.append(partial)
                partial = b""
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    self.stderr.append(line)
                    log.debug("%s stderr: %s", self.name, line)
        if partial.strip():
            self.stderr.append(partial.decode("utf-8", "replace").rstrip())

    def signal_group(self, signum: int) -> None:
        signal_group(self.pid, signum)

    async def terminate(self, grace: float) -> None:
        """Stop the whole process group (`process_groups.stop_group`) and close the pipes.
        Call it shielded."""
        await stop_group(self.process, grace, name=self.name)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                await stream.aclose()


def is_stopped(pid: int) -> bool:
    """Whether `pid` is stopped by a signal (SIGSTOP, SIGTSTP) or a tracer."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] in (b"T", b"t")


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# How old a walk of /proc may be and still answer (`group_usage`): half the default
# `lsp.check_interval`, so the daemon walks /proc at most once a second however many servers
# it watches, while each server's checks, 2 s apart, see walks of their own at least a
# second apart (the window its CPU share is measured over, 1% of it a clock tick).
SNAPSHOT_AGE = 1.0


class GroupUsage(NamedTuple):
    """What a process group's live members use, from the walk of /proc taken at `taken`."""

    rss: int  # resident bytes
    cpu: float  # CPU seconds used so far
    taken: float  # `time.monotonic()` when the walk began


class ProcessTable:
    """Resident pages and CPU ticks of every process group on the machine, from one walk of
    /proc shared by every caller while it is younger than their `max_age`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one walk at a time; the callers waiting reuse it
        self._taken = -math.inf
        self._groups: dict[int, tuple[int, int]] = {}

    def usage(self, pgid: int, max_age: float) -> GroupUsage:
        with self._lock:
            now = time.monotonic()
            if now - self._taken >= max_age:
                self._taken, self._groups = now, _walk()
            pages, ticks = self._groups.get(pgid, (0, 0))
            return GroupUsage(pages * _PAGE, ticks / _TICKS, self._taken)


def _walk() -> dict[int, tuple[int, int]]:
    """(resident pages, utime + stime ticks) by process group, zombies left out, from each
    /proc/PID/stat read once ({} without /proc). The stat's rss is the kernel's per-CPU
    approximation (statm's is exact on recent kernels): off by a few counter batches a CPU,
    small beside a cap of gigabytes."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    groups: dict[int, tuple[int, int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        # state first: pgrp is 2, utime and stime 11 and 12, rss 21 (man 5 proc, less 3)
        fields = stat_fields(int(name))
        if len(fields) < 22 or fields[0] in (b"Z", b"X"):
            continue
        pgid = int(fields[2])
        pages, ticks = groups.get(pgid, (0, 0))
        groups[pgid] = (pages + int(fields[21]), ticks + int(fields[11]) + int(fields[12]))
    return groups


_table = ProcessTable()


def group_usage(pgid: int, max_age: float = SNAPSHOT_AGE) -> GroupUsage:
    """What the live members of group `pgid` use, from a walk of /proc at most `max_age`
    seconds old (blocking when it walks: call it in a thread). Zeros without /proc."""
    return _table.usage(pgid, max_age)


def group_rss(pgid: int) -> int:
    """The resident memory, in bytes, of every live member of group `pgid` (`group_usage`)."""
    return group_usage(pgid).rss
