"""Stopping a child's process group so that nothing is left behind: SIGTERM, SIGKILL after a
grace period, the leader reaped and every member's exit awaited (pidfds, no polling).

Every process codeward starts leads a group of its own (`start_new_session=True`) and is
registered with the guardian; `stop_group` unregisters it once the whole group is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from typing import Protocol

import trio

from codeward.daemon import guardian
from codeward.daemon.reaper import stat_fields

log = logging.getLogger("codeward")

KILL_WAIT = 5.0  # seconds the killed members of a group get to be gone


class Leader(Protocol):
    """A started process that leads its group: a `trio.Process`, or a git runner's `Child`."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


def signal_group(pgid: int, signum: int) -> None:
    """`signum` to every member of group `pgid`; nothing when the group is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_gone(process: Leader) -> bool:
    """Whether the leader was reaped and nothing of its group is left (the common case): it
    is unregistered then, and `stop_group` has nothing to do."""
    if process.returncode is not None and not _group_exists(process.pid):
        guardian.unregister(process.pid)
        return True
    return False


async def stop_group(process: Leader, grace: float, *, name: str) -> None:
    """SIGTERM to the group of `process` (its leader), up to `grace` seconds for the leader,
    then SIGKILL; reaps the leader and returns once every member is gone.

    Members that outlive the leader are killed too (a killed process dies when it next runs,
    which under load can be after the leader was reaped). Call it shielded.
    """
    pgid = process.pid
    if group_gone(process):
        return
    if process.returncode is None:
        signal_group(pgid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await process.wait()
    signal_group(pgid, signal.SIGKILL)
    await process.wait()
    with trio.move_on_after(KILL_WAIT) as scope:
        await wait_group_gone(pgid)
    if scope.cancelled_caught:
        log.warning("%s: members of its process group outlive SIGKILL", name)
    else:
        guardian.unregister(pgid)


async def wait_group_gone(pgid: int) -> None:
    """Wait until group `pgid` has no live member, each member's exit awaited through a
    pidfd (no polling); SIGKILL again to members that came late. Without pidfds or /proc
    (not Linux) it returns at once."""
    while _group_exists(pgid) and (members := group_members(pgid)):
        signal_group(pgid, signal.SIGKILL)
        for pid in members:
            if not await _wait_exit(pid, pgid):
                return


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of group `pgid`, from /proc; [] without /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and _group_of(int(name)) == pgid]


def _group_exists(pgid: int) -> bool:
    """Whether any process (zombies included) is in group `pgid`: one system call, so a
    group already empty costs no walk of /proc."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_of(pid: int) -> int | None:
    """The process group of live process `pid`; None when it is gone or a zombie."""
    fields = stat_fields(pid)
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[2])


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
