"""Catch leaked processes: the test process is a child subreaper, so orphans come back to it."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Collection
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def children() -> dict[int, tuple[str, str]]:
    """pid -> (state, command) of this process's children (orphans included, as subreaper)."""
    me = os.getpid()
    found: dict[int, tuple[str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # the command name may hold spaces and parentheses: split after the last ')'
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == me:
            found[int(entry.name)] = (state, cmdline.strip()[:200])
    return found


def reap_zombies() -> None:
    for pid, (state, _) in children().items():
        if state == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def leftovers(grace: float = 3.0, keep: Collection[int] = ()) -> list[str]:
    """Children still alive after `grace` seconds (reaping the dead), but those of `keep`
    (a module's shared daemon); they are then killed."""
    deadline = time.monotonic() + grace
    while True:
        reap_zombies()
        alive = {
            pid: cmd for pid, (state, cmd) in children().items() if state != "Z" and pid not in keep
        }
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # teardown only: give exiting processes a moment
    for pid in alive:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    if alive:
        time.sleep(0.1)
        reap_zombies()
    return [f"{pid}: {cmd}" for pid, cmd in alive.items()]
