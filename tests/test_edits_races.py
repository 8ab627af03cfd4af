"""Writes that land while an edit is being written: the edit ends as `stale_edit`, never as a
silent overwrite, and the other writer's change is kept (the races made deterministic)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.edits import Basis, RootWriter, apply_workspace_edit, atomic, commit, prepare
from codeward.daemon.lsp.documents import content_hash
from codeward.protocol.errors import ErrorKind, ToolError


def edit(line: int, char: int, end_char: int, text: str) -> dict[str, Any]:
    rng = {"start": {"line": line, "character": char}, "end": {"line": line, "character": end_char}}
    return {"range": rng, "newText": text}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    for name, text in {"a.py": "a = 1\n", "b.py": "b = 2\n", "gone.py": "old = 0\n"}.items():
        (path / name).write_text(text)
    return Path(os.path.realpath(path))


def multi_file_edit(root: Path) -> dict[str, Any]:
    """Edits a.py and b.py, deletes gone.py and creates new.py: every kind of change."""
    return {
        "documentChanges": [
            {"textDocument": {"uri": (root / "a.py").as_uri()}, "edits": [edit(0, 0, 1, "A")]},
            {"textDocument": {"uri": (root / "b.py").as_uri()}, "edits": [edit(0, 0, 1, "B")]},
            {"kind": "delete", "uri": (root / "gone.py").as_uri()},
            {"kind": "create", "uri": (root / "new.py").as_uri()},
        ]
    }


ORIGINAL = {"a.py": "a = 1\n", "b.py": "b = 2\n", "gone.py": "old = 0\n"}
APPENDED = "# a line someone appended\n"


def listing(root: Path) -> dict[str, str]:
    """Every file of the root (temporary files included, so leftovers show)."""
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def append(path: Path) -> None:
    with open(path, "a") as f:
        f.write(APPENDED)


# Where the other writer strikes: (moment, file). "staged": after the new contents are
# staged, before the check that precedes each replace; "replace": between that check and
# the replace itself (a write only the check after the replaces can see).
CASES = [
    ("staged", "a.py"),
    ("staged", "b.py"),
    ("staged", "gone.py"),
    ("replace", "a.py"),
    ("replace", "b.py"),
    ("replace", "gone.py"),
]


@pytest.mark.parametrize(("moment", "victim"), CASES)
def test_a_write_during_the_commit_is_never_lost(
    root: Path, monkeypatch: pytest.MonkeyPatch, moment: str, victim: str
) -> None:
    plan = prepare(root, multi_file_edit(root), "utf-16", Basis())
    assert plan.files == ["a.py", "b.py", "gone.py", "new.py"]
    target = root / victim
    struck: list[str] = []
    if moment == "staged":
        real_stage = atomic._stage

        def stage(path: Path, *args: Any) -> str:
            temp = real_stage(path, *args)
            if path.name == "new.py":  # the last one staged
                append(target)
                struck.append(victim)
            return temp

        monkeypatch.setattr(atomic, "_stage", stage)
    else:
        real_replace = os.replace

        def replace(src: Any, dst: Any, **at: Any) -> None:  # names in their folder
            if not struck and victim in (Path(dst).name, Path(src).name):
                append(target)
                struck.append(victim)
            real_replace(src, dst, **at)

        monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert struck == [victim]
    assert info.value.kind is ErrorKind.STALE_EDIT and info.value.details["path"] == victim
    expected = dict(ORIGINAL)
    expected[victim] += APPENDED
    assert listing(root) == expected  # every file as before, the appended line kept


def test_a_file_created_where_the_edit_creates_one(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Created after the first check: the edit's own file is linked only where none exists."""
    plan = prepare(root, multi_file_edit(root), "utf-16", Basis())
    real_stage = atomic._stage

    def stage(path: Path, *args: Any) -> str:
        temp = real_stage(path, *args)
        if path.name == "new.py":
            (root / "new.py").write_text("theirs\n")
        return temp

    monkeypatch.setattr(atomic, "_stage", stage)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT and info.value.details["path"] == "new.py"
    assert listing(root) == {**ORIGINAL, "new.py": "theirs\n"}


@pytest.mark.parametrize("swap", ["symlink", "fifo", "folder", "removed"])
def test_a_file_swapped_before_its_replace(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("a = 1\n")  # the very bytes the edit expects
    plan = prepare(root, multi_file_edit(root), "utf-16", Basis())
    real_stage = atomic._stage
    a = root / "a.py"

    def stage(path: Path, *args: Any) -> str:
        temp = real_stage(path, *args)
        if path.name == "new.py":
            a.unlink()
            if swap == "symlink":
                a.symlink_to(outside)
            elif swap == "fifo":
                os.mkfifo(a)
            elif swap == "folder":
                a.mkdir()
        return temp

    monkeypatch.setattr(atomic, "_stage", stage)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT and info.value.details["path"] == "a.py"
    assert outside.read_text() == "a = 1\n"
    assert sorted(p.name for p in root.iterdir()) == sorted(
        ["b.py", "gone.py"] + ([] if swap == "removed" else ["a.py"])
    )
    assert (root / "b.py").read_text() == "b = 2\n"


async def test_the_writer_takes_edits_one_at_a_time(root: Path, nursery: trio.Nursery) -> None:
    """Edits computed from the same content, asked at the same moment: one is written, every
    other one is stale_edit; none is lost while it says it was applied."""
    told: list[list[Path]] = []
    writer = RootWriter(root, lambda paths, created: told.append(list(paths)))
    await nursery.start(writer.run)
    a = root / "a.py"
    seen = Basis({a: (1, content_hash(a.read_bytes()))})  # what the server computed from
    outcomes: dict[str, str] = {}

    async def one(letter: str) -> None:
        change = {"changes": {a.as_uri(): [edit(0, 0, 1, letter)]}}
        try:
            result = await apply_workspace_edit(writer, change, "utf-16", seen, apply=True)
        except ToolError as exc:
            outcomes[letter] = exc.kind.value
        else:
            assert result.applied
            outcomes[letter] = "applied"

    with trio.fail_after(10):
        async with trio.open_nursery() as inner:
            for letter in "BCDEFGH":
                inner.start_soon(one, letter)
    applied = [letter for letter, outcome in outcomes.items() if outcome == "applied"]
    assert len(applied) == 1 and sorted(outcomes.values()).count("stale_edit") == 6
    assert a.read_text() == f"{applied[0]} = 1\n" and told == [[a]]


async def test_a_stopped_writer_refuses_at_once(root: Path) -> None:
    writer = RootWriter(root, lambda paths, created: None)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        nursery.cancel_scope.cancel()
    change = {"changes": {(root / "a.py").as_uri(): [edit(0, 0, 1, "Z")]}}
    with trio.fail_after(5), pytest.raises(ToolError) as info:
        await apply_workspace_edit(writer, change, "utf-16", Basis(), apply=True)
    assert info.value.kind is ErrorKind.CANCELLED and (root / "a.py").read_text() == "a = 1\n"
