"""A language-server process: its own process group, pipes, a bounded stderr ring, and a stop
that leaves nothing behind (SIGTERM to the group, then SIGKILL, then wait for every member)."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.reaper import stat_fields

log = logging.getLogger("codeward.lsp")

STDERR_LINES = 200
KILL_WAIT = 5.0  # seconds the killed members of a group get to be gone


class ServerProcess:
    """One spawned server; `pid` is also its process group id."""

    def __init__(self, name: str, process: trio.Process) -> None:
        self.name = name
        self.process = process
        self.pid: int = process.pid
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        assert process.stdin is not None and process.stdout is not None
        self.stdin: trio.abc.SendStream = process.stdin
        self.stdout: trio.abc.ReceiveStream = process.stdout

    @classmethod
    async def spawn(
        cls, name: str, command: list[str], cwd: Path, env: dict[str, str]
    ) -> ServerProcess:
        """Start `command`; raises OSError (FileNotFoundError: not installed)."""
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **env},
            start_new_session=True,
        )
        guardian.register(process.pid)
        return cls(name, process)

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
                chunk = await stream.receive_some(65536)
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
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    async def terminate(self, grace: float) -> None:
        """SIGTERM to the group, up to `grace` seconds, then SIGKILL; reaps the leader.

        Members of the group that outlive the leader are killed too, and it returns once
        they are gone (a killed process dies when it next runs, which under load can be
        after the leader was reaped). Call it shielded.
        """
        if self.process.returncode is None:
            self.signal_group(signal.SIGTERM)
            with trio.move_on_after(grace):
                await self.process.wait()
        self.signal_group(signal.SIGKILL)
        await self.process.wait()
        with trio.move_on_after(KILL_WAIT) as scope:
            await wait_group_gone(self.pid)
        if scope.cancelled_caught:
            log.warning("%s: members of its process group outlive SIGKILL", self.name)
        else:
            guardian.unregister(self.pid)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                await stream.aclose()


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of group `pgid`, from /proc; [] without /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if name.isdigit() and _group_of(int(name)) == pgid:
            found.append(int(name))
    return found


def _group_of(pid: int) -> int | None:
    """The process group of live process `pid`; None when it is gone or a zombie."""
    fields = stat_fields(pid)
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[2])


def is_stopped(pid: int) -> bool:
    """Whether `pid` is stopped by a signal (SIGSTOP, SIGTSTP) or a tracer."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] in (b"T", b"t")


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def group_rss(pgid: int) -> int:
    """The resident memory, in bytes, of every live member of group `pgid` (0 without /proc)."""
    total = 0
    for pid in group_members(pgid):
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


async def wait_group_gone(pgid: int) -> None:
    """Wait until group `pgid` has no live member, each member's exit awaited through a
    pidfd (no polling); SIGKILL again to members that came late. Without pidfds or /proc
    (not Linux) it returns at once."""
    while members := group_members(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        for pid in members:
            if not await _wait_exit(pid, pgid):
                return


async def _wait_exit(pid: int, pgid: int) -> bool:
    """Wait until `pid`, a member of group `pgid`, has exited; False without pidfds."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return False
    try:
        fd: int = pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    try:
        if _group_of(pid) == pgid:  # still the member seen, not a pid used again since
            await trio.lowlevel.wait_readable(fd)  # a pidfd is readable once it has exited
    finally:
        os.close(fd)
    return True
