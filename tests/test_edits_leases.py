"""Edits of existing files under write leases: a program that opens a file while it is
written waits, then sees the new content, so its own write is never lost; where no lease
can be had the replace path is taken."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon import files
from codeward.daemon.edits import Basis, atomic, commit, prepare
from codeward.daemon.edits import leases as leases_module
from codeward.protocol.errors import ErrorKind, ToolError

APPEND = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write('# theirs\\n')\n"


@pytest.fixture
def sigio_ignored() -> Iterator[None]:
    """What the daemon does at start: leases are signalled with SIGIO."""
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path / "root"))
    path.mkdir()
    (path / "a.py").write_text("a = 1\n")
    (path / "b.py").write_text("b = 2\n")
    return path


def two_file_edit(root: Path) -> dict[str, Any]:
    def edit(name: str, text: str) -> dict[str, Any]:
        rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
        return {
            "textDocument": {"uri": (root / name).as_uri()},
            "edits": [{"range": rng, "newText": text}],
        }

    return {"documentChanges": [edit("a.py", "alpha"), edit("b.py", "beta")]}


def test_an_opener_waits_for_the_write_and_keeps_its_line(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    plan = prepare(root, two_file_edit(root), "utf-16", Basis())
    real = atomic._overwrite
    appenders: list[subprocess.Popen[bytes]] = []

    def overwrite(fd: int, data: bytes) -> None:
        if not appenders:  # another program opens a.py to append while the edit holds it
            appenders.append(subprocess.Popen([sys.executable, "-c", APPEND, str(root / "a.py")]))
            with pytest.raises(subprocess.TimeoutExpired):
                appenders[0].wait(0.3)  # its open waits for the lease
        real(fd, data)

    monkeypatch.setattr(atomic, "_overwrite", overwrite)
    monkeypatch.setattr(os, "replace", _no_replace)
    commit(plan)
    assert appenders[0].wait(10) == 0
    assert (root / "a.py").read_text() == "alpha = 1\n# theirs\n"
    assert (root / "b.py").read_text() == "beta = 2\n"
    assert sorted(p.name for p in root.iterdir()) == ["a.py", "b.py"]  # no staged leftovers


def test_a_file_open_elsewhere_takes_the_replace_path(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    plan = prepare(root, two_file_edit(root), "utf-16", Basis())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; f = open(sys.argv[1]); print('open', flush=True); sys.stdin.read()",
            root / "b.py",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"open\n"  # it holds b.py open from now on
        replaced: list[str] = []
        real_replace = os.replace

        def replace(src: Any, dst: Any, **at: Any) -> None:
            replaced.append(Path(dst).name)
            real_replace(src, dst, **at)

        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(leases_module, "LEASE_PATIENCE", 0.0)
        commit(plan)
        assert replaced == ["a.py", "b.py"]  # no lease on b.py: both are replaced
        assert (root / "a.py").read_text() == "alpha = 1\n"
        assert (root / "b.py").read_text() == "beta = 2\n"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)


def test_a_file_renamed_over_during_the_write_is_stale_and_kept(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    """Renaming another file over the path needs no open of the leased one: the check after
    the writes sees it, every leased file gets its old bytes back, and theirs stays."""
    plan = prepare(root, two_file_edit(root), "utf-16", Basis())
    real_same = atomic._same_file
    (root / "theirs.tmp").write_text("theirs\n")

    def same_file(path: Path, fd: int, folder: int) -> bool:
        if path.name == "b.py" and (root / "theirs.tmp").exists():
            os.rename(root / "theirs.tmp", path)
        return real_same(path, fd, folder)

    monkeypatch.setattr(atomic, "_same_file", same_file)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT and info.value.details["path"] == "b.py"
    assert (root / "a.py").read_text() == "a = 1\n"
    assert (root / "b.py").read_text() == "theirs\n"


def test_changed_before_the_lease_is_stale_and_untouched(root: Path, sigio_ignored: None) -> None:
    plan = prepare(root, two_file_edit(root), "utf-16", Basis())
    (root / "b.py").write_text("b = 3\n")
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT and info.value.details["path"] == "b.py"
    assert (root / "a.py").read_text() == "a = 1\n"


def test_a_failed_write_puts_the_old_bytes_back(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    plan = prepare(root, two_file_edit(root), "utf-16", Basis())
    real = atomic._overwrite
    calls: list[int] = []

    def overwrite(fd: int, data: bytes) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(atomic, "_overwrite", overwrite)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.WRITE_FAILED and "b.py" in info.value.message
    assert info.value.details["reason"] == "no_space"
    assert (root / "a.py").read_text() == "a = 1\n"
    assert (root / "b.py").read_text() == "b = 2\n"


def test_leases_need_sigio_ignored(root: Path) -> None:
    """A process that does not ignore SIGIO would be ended by a lease break: no leases."""
    previous = signal.signal(signal.SIGIO, signal.SIG_DFL)
    try:
        plan = prepare(root, two_file_edit(root), "utf-16", Basis())
        assert not leases_module.leases_usable()
        assert leases_module.lease_all(plan.changes, {}) is None
    finally:
        signal.signal(signal.SIGIO, previous)


def _no_replace(src: Any, dst: Any, **at: Any) -> None:
    raise AssertionError(f"the lease path replaced {dst}")


def _lease_on(path: Path) -> int:
    fd = os.open(path, os.O_RDWR)
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    return fd


def test_a_read_waits_for_a_lease_to_end(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    """The daemon's own reads meet its edits' leases (EWOULDBLOCK on open): they are asked
    again until the write is done, and see the new content."""
    fd = _lease_on(root / "a.py")
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the edit finishes while the reader waits
        if not waits:
            os.pwrite(fd, b"alpha = 1\n", 0)
            leases_module.release([fd])
        waits.append(seconds)

    monkeypatch.setattr(files.time, "sleep", sleep)
    data, _ = files.read_file(root / "a.py", root)
    assert data == b"alpha = 1\n" and len(waits) == 1


def test_a_lease_held_too_long_is_a_clear_timeout(
    root: Path, monkeypatch: pytest.MonkeyPatch, sigio_ignored: None
) -> None:
    fd = _lease_on(root / "a.py")
    monkeypatch.setattr(files, "LEASE_WAIT", 0.01)
    try:
        with pytest.raises(ToolError) as info:
            files.read_file(root / "a.py", root)
    finally:
        leases_module.release([fd])
    assert info.value.kind is ErrorKind.TIMEOUT
    assert info.value.message.startswith("'a.py' is being written by another program")
