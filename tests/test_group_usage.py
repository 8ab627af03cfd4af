"""What a server's process group uses (`process.group_usage`), read by every server's watch
from one walk of /proc shared while it is young, with real process groups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeward.daemon.lsp.process import ProcessTable, group_usage
from codeward.daemon.process_groups import group_members
from codeward.daemon.reaper import stat_fields

BURN = "import time\nwhile time.process_time() < 0.3: pass\n"  # 0.3 s of CPU
CHILD = BURN + 'print("child", flush=True)\ntime.sleep(600)\n'
# A leader and its child, each having used 0.3 s of CPU before saying so.
LEADER_AND_CHILD = f"""
import subprocess, sys
{BURN}print("leader", flush=True)
subprocess.Popen([sys.executable, "-c", {CHILD!r}])
time.sleep(600)
"""
# A leader whose child used 0.3 s of CPU and exited, left a zombie (waited for, not reaped).
LEADER_AND_ZOMBIE = f"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", {BURN!r}])
os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
print(child.pid, flush=True)
time.sleep(600)
"""


@contextmanager
def group(*command: str) -> Iterator[subprocess.Popen[str]]:
    """`command` leading a process group of its own; the whole group killed at the end."""
    leader = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        yield leader
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()


def resident(pid: int) -> int:
    """The resident bytes of `pid` as /proc/PID/statm tells them (exact on recent kernels)."""
    return int(Path(f"/proc/{pid}/statm").read_bytes().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_group_with_a_child_is_measured_whole() -> None:
    with group(sys.executable, "-c", LEADER_AND_CHILD) as leader:
        assert leader.stdout is not None
        assert {leader.stdout.readline(), leader.stdout.readline()} == {"leader\n", "child\n"}
        usage = group_usage(leader.pid, 0.0)
        members = group_members(leader.pid)
        assert len(members) == 2
        # utime and stime are whole clock ticks each: a few hundredths may be cut off
        assert 0.55 <= usage.cpu < 2.0
        # the stat's rss is the kernel's per-CPU approximation of statm's
        exact = sum(resident(pid) for pid in members)
        assert abs(usage.rss - exact) < exact * 0.1


def test_a_zombie_member_is_not_counted() -> None:
    with group(sys.executable, "-c", LEADER_AND_ZOMBIE) as leader:
        assert leader.stdout is not None
        zombie = int(leader.stdout.readline())
        assert stat_fields(zombie)[:3:2] == [b"Z", str(leader.pid).encode()]
        usage = group_usage(leader.pid, 0.0)
        assert usage.cpu < 0.25  # the leader's own start; its zombie's 0.3 s left out
        assert group_members(leader.pid) == [leader.pid]


def test_a_young_walk_answers_and_group_members_stays_fresh() -> None:
    before = group_usage(os.getpgid(0), 0.0)
    with group("sleep", "600") as leader:
        young = group_usage(leader.pid, 60.0)  # the walk before it started answers
        assert young == (0, 0.0, before.taken)
        assert group_members(leader.pid) == [leader.pid]  # what a stop waits for: fresh
        fresh = group_usage(leader.pid, 0.0)
        assert fresh.taken > before.taken and fresh.rss > 0


def test_callers_at_once_share_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[str] = []
    listdir = os.listdir

    def counted(path: str) -> list[str]:
        if path == "/proc":
            walks.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counted)
    table = ProcessTable()
    callers = 8
    start = threading.Barrier(callers)
    answers: list[float] = []

    def check(pgid: int) -> None:
        start.wait()
        answers.append(table.usage(pgid, 60.0).taken)

    with group("sleep", "600") as leader:
        threads = [threading.Thread(target=check, args=(leader.pid + i,)) for i in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(walks) == 1 and len(answers) == callers and len(set(answers)) == 1
        assert table.usage(leader.pid, 60.0).taken == answers[0] and len(walks) == 1
        assert table.usage(leader.pid, 0.0).taken > answers[0] and len(walks) == 2
