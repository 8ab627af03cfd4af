"""The guardian: nothing the daemon started outlives it, however the daemon dies.

Every language server and git process runs in its own process group. The daemon starts one
small guardian process (`codeward/daemon/reaper.py RECORD`, in a session of its own, so
signals sent to the daemon's group do not reach it) and holds the write end of a pipe that
is the guardian's stdin. Each process group the daemon starts is registered in RECORD
(`<socket>.procs`, next to the socket), a table the daemon keeps mapped in its memory: the
group's id, and the clock ticks since boot its leader started between; it is unregistered
once the group is gone. A registration is a write to memory: starting a git process costs
no system call for it, and does not wake the guardian. When the pipe closes (the daemon
exited, SIGKILL included: the kernel closes its descriptors), the guardian SIGKILLs every
group RECORD names, removes it and exits.

Should the guardian die with the daemon (both killed at once), the next daemon reaps what
RECORD names before it starts its own guardian; a leader whose start time lies outside the
ticks recorded means the pid was used again since, and that process is left alone.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import trio

from codeward.daemon import reaper
from codeward.daemon.reaper import Started, Table, reap_record, start_time

log = logging.getLogger(__name__)

_active: Guardian | None = None
_NS_PER_TICK = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def ticks() -> int:
    """Now, in the clock ticks since boot of a process's start time (/proc/PID/stat)."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) // _NS_PER_TICK


def register(pgid: int, started: Started | None = None) -> None:
    """Put process group `pgid` (just started by this daemon) under the guardian's watch;
    `started`: the ticks its leader started between (`ticks()` before and after it was
    started), else read from /proc (which waits while the leader is still in exec)."""
    if _active is not None:
        if started is None:
            at = start_time(pgid)
            started = (at, at)
        _active.groups[pgid] = started
        if _active.table is not None:
            _active.table.add(pgid, started)


def unregister(pgid: int) -> None:
    """Group `pgid` is gone (reaped, every member killed): no longer watched."""
    if _active is not None and _active.table is not None:
        _active.table.remove(pgid)
    if _active is not None:
        _active.groups.pop(pgid, None)


def record_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".procs")


class Guardian:
    """The daemon's end: keeps the record, starts the guardian process, and starts a new one
    should it die while the daemon runs."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.groups: dict[int, Started] = {}  # registered: pgid -> leader start ticks
        self.table: Table | None = None
        self.generation = 0  # guardian processes started so far
        self._fd = -1
        self._process: trio.Process | None = None
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def start(self) -> None:
        """Reap what a previous daemon left (by its record), then start the guardian."""
        reaped = reap_record(self.record)
        if reaped:
            log.warning("killed %d process groups a previous daemon left behind", reaped)
        global _active
        _active = self
        await self._spawn()

    def _keep_record(self) -> None:
        """Write the record anew with every live group, unless it is there as written."""
        if self.table is not None and self.table.current():
            return
        if self.table is not None:
            self.table.close()
            self.table = None
        try:
            self.table = Table(self.record, self.groups)
        except OSError as exc:
            log.error("no record of process groups (%s): a guardian killed with the daemon "
                      "leaves them behind", exc)  # fmt: skip

    async def _spawn(self) -> None:
        self._keep_record()
        read, write = os.pipe()
        try:
            self._process = await trio.lowlevel.open_process(
                [sys.executable, "-I", "-S", reaper.__file__, str(self.record)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.error("no guardian process (%s): servers may outlive a crash", exc)
            os.close(write)
            return
        finally:
            os.close(read)
        self._fd = write
        self.generation += 1

    async def watch(self) -> None:
        """Start a new guardian whenever the running one dies (until cancelled)."""
        while self._process is not None:
            await self._process.wait()
            if self._stopping:
                return
            log.error(
                "the guardian process died (code %s): starting another", self._process.returncode
            )
            self._close()
            await trio.sleep(1.0)  # never a busy loop, whatever kills it
            await self._spawn()

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    async def stop(self, grace: float = 5.0) -> None:
        """Close the pipe (the guardian kills what is still registered) and reap it."""
        global _active
        if _active is self:
            _active = None
        self._stopping = True
        self._close()
        process = self._process
        if process is not None:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(grace):
                    await process.wait()
                if process.returncode is None:  # stopped, or stuck: not left behind
                    process.kill()
                    await process.wait()
        if self.table is not None:
            self.table.close()
            self.table = None
