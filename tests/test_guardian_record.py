"""The record of process groups: registrations written to memory, read by the guardian."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.git import runner
from codeward.daemon.reaper import (
    HEADER_BYTES,
    INITIAL_SLOTS,
    SLOT,
    Table,
    read_record,
    start_time,
)


def test_a_start_lies_between_the_ticks_read_before_and_after() -> None:
    first = guardian.ticks()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    last = guardian.ticks()
    try:
        assert first <= start_time(child.pid) <= last
    finally:
        child.communicate(b"")


def test_the_table_is_the_record(tmp_path: Path) -> None:
    record = tmp_path / "codeward.sock.procs"
    table = Table(record, {7: (1, 2)})
    try:
        assert read_record(record) == {7: (1, 2)}
        table.add(8, (3, 3))
        table.remove(7)
        assert read_record(record) == {8: (3, 3)}  # written to memory, seen in the file
        for pgid in range(100, 100 + 2 * INITIAL_SLOTS):  # more than it first holds
            table.add(pgid, (5, 6))
        assert len(read_record(record)) == 1 + 2 * INITIAL_SLOTS
        table.remove(8)
        table.add(9, (4, 4))  # a freed slot is used again
        assert read_record(record)[9] == (4, 4) and 8 not in read_record(record)
        assert table.current()
        record.unlink()
        assert not table.current()
    finally:
        table.close()


def test_a_slot_without_its_pgid_and_a_short_record_are_ignored(tmp_path: Path) -> None:
    record = tmp_path / "codeward.sock.procs"
    Table(record, {11: (1, 1)}).close()
    data = bytearray(record.read_bytes())
    SLOT.pack_into(data, HEADER_BYTES + SLOT.size, 0, 5, 6)  # ticks written, pgid not yet
    record.write_bytes(bytes(data) + b"\x01\x02")  # and a partial slot at the end
    assert read_record(record) == {11: (1, 1)}
    record.write_bytes(data[: HEADER_BYTES // 2])
    assert read_record(record) == {}
    assert read_record(tmp_path / "missing") == {}


async def test_the_guardian_kills_a_registered_git_group_when_the_daemon_goes(
    tmp_path: Path,
) -> None:
    """The pipe closing (as at the daemon's death) is all the guardian needs: it kills what
    the record names, with the start ticks a git run registers, even once the record's
    name is gone."""
    record = tmp_path / "codeward.sock.procs"
    guard = guardian.Guardian(record)
    await guard.start()
    child = runner.spawn(["sleep", "600"], cwd=tmp_path, env=dict(os.environ), stdin=False)
    try:
        guardian.register(child.pid, child.started)
        assert read_record(record) == {child.pid: child.started}
        assert guard.pid is not None
        with trio.fail_after(10):
            while not holds(guard.pid, record):
                await trio.sleep(0.01)  # another process's state: polled, with a deadline
        record.unlink()  # a cleaner of old files: the guardian holds the record open
        guard._close()  # what the kernel does when the daemon dies
        with trio.fail_after(10):
            assert await child.wait() == -signal.SIGKILL
            assert guard._process is not None
            await guard._process.wait()
    finally:
        await guard.stop()
        if child.returncode is None:
            os.killpg(child.pid, signal.SIGKILL)
            await child.wait()
        child.close()


def holds(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):  # one it closed meanwhile
            if os.readlink(fds / fd) == str(path):
                return True
    return False


async def test_a_finished_run_leaves_its_group_unregistered(tmp_path: Path) -> None:
    record = tmp_path / "codeward.sock.procs"
    guard = guardian.Guardian(record)
    await guard.start()
    try:
        done = await runner.run_process(
            ["sh", "-c", "echo $$"], cwd=tmp_path, env=dict(os.environ), timeout=10.0,
            output_bytes=100,
        )  # fmt: skip
        assert done.exit_code == 0 and int(done.stdout) not in guard.groups
        assert read_record(record) == {}
    finally:
        await guard.stop()
