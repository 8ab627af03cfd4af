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
        _active.send(f"+{pgid} {start_time(pgid)}\n")


def unregister(pgid: int) -> None:
    """Group `pgid` is gone (reaped, every member killed): no longer watched."""
    if _active is not None:
        _active.send(f"-{pgid}\n")


def record_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".procs")


class Guardian:
    """The daemon's end: starts the guardian process and writes registrations to it."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self._fd = -1
        self._process: trio.Process | None = None

    async def start(self) -> None:
        """Reap what a previous daemon left (by its record), then start the guardian."""
        reaped = reap_record(self.record)
        if reaped:
            log.warning("killed %d process groups a previous daemon left behind", reaped)
        read, self._fd = os.pipe()
        try:
            self._process = await trio.lowlevel.open_process(
                [sys.executable, "-I", "-S", reaper.__file__, str(self.record)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.error("no guardian process (%s): servers may outlive a crash", exc)
            os.close(self._fd)
            self._fd = -1
            return
        finally:
            os.close(read)
        global _active
        _active = self

    def send(self, line: str) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, line.encode())  # small writes to a pipe are atomic
        except OSError as exc:  # the guardian is gone: say so once, carry on without it
            log.error("the guardian process is gone (%s): servers may outlive a crash", exc)
            os.close(self._fd)
            self._fd = -1

    async def stop(self) -> None:
        """Close the pipe (the guardian kills what is still registered) and reap it."""
        global _active
        if _active is self:
            _active = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._process is not None:
            with trio.CancelScope(shield=True):
                await self._process.wait()
