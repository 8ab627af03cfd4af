"""An edit the system refuses to write (a full disk, a read-only file system, an immutable
file) is `write_failed` with `data.reason` saying which; every file keeps its content and
no staged copy is left. Faults are injected where the bytes are written (the staging, the
replace and the in-place write under leases); an immutable file is a real one (chattr +i,
as root)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.edits import Basis, commit, prepare
from codeward.protocol.errors import ErrorKind, ToolError
from tests.rpc import RpcClient, RpcFailure

BEFORE = {"a.py": "a = 1\n", "b.py": "b = 2\n"}
REFUSALS = [
    (errno.ENOSPC, "no_space", "the disk is full"),
    (errno.EDQUOT, "no_space", "the disk quota is used up"),
    (errno.EROFS, "read_only", "its file system is read-only"),
    (errno.EPERM, "not_permitted", "writing it is not permitted"),
    (errno.EACCES, "not_permitted", "writing it is not permitted"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path / "root"))
    path.mkdir()
    for name, text in BEFORE.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def sigio_ignored() -> Iterator[None]:
    """What the daemon does at start (leases signal SIGIO): edits take the in-place path."""
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


@pytest.fixture
def sigio_default() -> Iterator[None]:
    """SIGIO not ignored (a daemon in this process may have left it ignored): no leases,
    so edits take the replace path."""
    previous = signal.signal(signal.SIGIO, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


def both_files(root: Path) -> dict[str, Any]:
    """An edit of a.py and b.py (a longer text in each: the write needs more room)."""
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    return {
        "documentChanges": [
            {
                "textDocument": {"uri": (root / n).as_uri()},
                "edits": [{"range": rng, "newText": n * 50}],
            }
            for n in BEFORE
        ]
    }


def refuse_on(code: int, target: str, real: Callable[..., Any], at: int) -> Callable[..., Any]:
    """`real`, failing with `code` when its argument `at` names `target` (the second file;
    a name in its folder's descriptor)."""

    def refusing(*args: Any, **kwargs: Any) -> Any:
        if Path(str(args[at])).name == target:
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    return refusing


def assert_refused(info: pytest.ExceptionInfo[ToolError], reason: str, said: str) -> None:
    error = info.value
    assert error.kind is ErrorKind.WRITE_FAILED, error
    assert error.details == {"path": "b.py", "reason": reason}
    assert error.message.startswith(f"'b.py' cannot be written: {said}. Nothing was lost")


def assert_nothing_lost(root: Path) -> None:
    assert {p.name: p.read_text() for p in root.iterdir()} == BEFORE  # no staged copy left


@pytest.mark.parametrize(("code", "reason", "said"), REFUSALS)
def test_staging_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str, said: str
) -> None:
    """The staged copy of the second file cannot be made: nothing was replaced yet."""
    plan = prepare(root, both_files(root), "utf-16", Basis())
    real = os.open

    def staging(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).startswith(".b.py.") and flags & os.O_CREAT:
            raise OSError(code, os.strerror(code))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", staging)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert_refused(info, reason, said)
    assert_nothing_lost(root)


@pytest.mark.parametrize(("code", "reason", "said"), REFUSALS)
def test_replace_refused(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    sigio_default: None,
    code: int,
    reason: str,
    said: str,
) -> None:
    """The second file's replace fails: the first one, already replaced, gets its bytes back."""
    plan = prepare(root, both_files(root), "utf-16", Basis())
    monkeypatch.setattr(os, "replace", refuse_on(code, "b.py", os.replace, 1))
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert_refused(info, reason, said)
    assert_nothing_lost(root)


@pytest.mark.parametrize(("code", "reason", "said"), REFUSALS[:3])
def test_in_place_write_refused_midway(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    sigio_ignored: None,
    code: int,
    reason: str,
    said: str,
) -> None:
    """Under leases each file is written in place: the second one's write fails after part
    of its bytes (the disk filled up), and both get their old bytes back."""
    plan = prepare(root, both_files(root), "utf-16", Basis())
    second = os.open(root / "b.py", os.O_RDONLY)
    b_inode = os.fstat(second).st_ino
    os.close(second)
    real = os.pwrite
    refused: list[int] = []

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if os.fstat(fd).st_ino == b_inode and len(data) > len(BEFORE["b.py"]) and not refused:
            refused.append(real(fd, bytes(data[:3]), offset))  # part of it, then no room
            raise OSError(code, os.strerror(code))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert refused == [3]  # the in-place path was taken, and failed midway
    assert_refused(info, reason, said)
    assert_nothing_lost(root)


async def test_an_immutable_file(client: RpcClient, project: Path) -> None:
    """A real immutable file (chattr +i; root may write anything else): edit_file answers
    write_failed, not_permitted, and the file keeps its content."""
    path = project / "notes.txt"
    path.write_text("old\n")
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        with pytest.raises(RpcFailure) as info:
            await client.tool("edit_file", path="notes.txt", content="new\n")
        assert info.value.kind == "write_failed"
        assert info.value.data["reason"] == "not_permitted"
        assert "'notes.txt' cannot be written: writing it is not permitted" in info.value.message
        assert "lsattr" in info.value.message
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in project.iterdir()) == ["notes.txt"]
