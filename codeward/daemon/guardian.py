"""The guardian: nothing the daemon started outlives it, however the daemon dies.

Every language server and git process runs in its own process group. The daemon starts one
small guardian process (`codeward/daemon/reaper.py RECORD`, in a session of its own, so
signals sent to the daemon's group do not reach it) and holds the write end of a pipe that
is the guardian's stdin. Each process group the daemon starts is registered on
that pipe (`+PGID START`), and unregistered once it is gone (`-PGID`). When the pipe
closes (the daemon exited, SIGKILL included: the kernel closes its descriptors), the
guardian SIGKILLs every group still registered, removes its record and exits.

The guardian keeps the registered groups in RECORD (`<socket>.procs`, next to the socket),
with the boot id and each group leader's start time. Should the guardian die with the daemon
(both killed at once), the next daemon reaps what that record names before it starts its own
guardian; a start time that does not match means the pid was used again since, and that
process is left alone.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import trio

from codeward.daemon import reaper
from codeward.daemon.reaper import reap_record, start_time

log = logging.getLogger(__name__)

_active: Guardian | None = None


def register(pgid: int) -> None:
    """Put process group `pgid` (just started by this daemon) under the guardian's watch."""
    if _active is not None:
        started = start_time(pgid)
        _active.groups[pgid] = started
        _active.send(f"+{pgid} {started}\n")


def unregister(pgid: int) -> None:
    """Group `pgid` is gone (reaped, every member killed): no longer watched."""
    if _active is not None and _active.groups.pop(pgid, None) is not None:
        _active.send(f"-{pgid}\n")


def record_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".procs")


class Guardian:
    """The daemon's end: starts the guardian process, writes registrations to it, and
    starts a new one (told every live group) should it die while the daemon runs."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.groups: dict[int, int] = {}  # registered: pgid -> leader start time
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

    async def _spawn(self) -> None:
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
        os.set_blocking(write, False)  # a guardian that does not read never stalls the daemon
        self._fd = write
        self.generation += 1
        for pgid, started in self.groups.items():
            self.send(f"+{pgid} {started}\n")

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

    def send(self, line: str) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, line.encode())  # small writes to a pipe are atomic
        except BlockingIOError:
            log.error("the guardian process does not read its pipe: %s is not registered", line)
        except OSError:
            self._close()  # it died: `watch` starts another and registers every group

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
