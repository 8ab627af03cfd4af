"""The root watcher on real inotify: what it reports, what it never watches, how it stops."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
import trio

from codeward.daemon.lsp import inotify
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.watched_tree import (
    CHANGED,
    CREATED,
    DELETED,
    STEP,
    WatchedTree,
    coarse_now,
)
from codeward.daemon.lsp.watcher import watch_root
from tests.conftest import OpenClient
from tests.git_repos import make_repo
from tests.lsp_support import needs

pytestmark = pytest.mark.skipif(not inotify.AVAILABLE, reason="inotify is Linux's")


class Seen:
    """The batches a watcher delivered, and a way to wait for a path in them."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[Path, int]]] = []
        self._arrived = trio.Event()

    def __call__(self, batch: list[tuple[Path, int]]) -> None:
        self.batches.append(batch)
        self._arrived.set()

    @property
    def changes(self) -> list[tuple[Path, int]]:
        return [change for batch in self.batches for change in batch]

    async def until(self, change: tuple[Path, int]) -> None:
        with trio.fail_after(10):
            while change not in self.changes:
                await self._arrived.wait()
                self._arrived = trio.Event()


@asynccontextmanager
async def watching(root: Path) -> AsyncIterator[Seen]:
    seen = Seen()
    async with trio.open_nursery() as nursery:
        await nursery.start(watch_root, root, seen)
        yield seen
        nursery.cancel_scope.cancel()


def inotify_fds() -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in os.listdir(fds) if _link(fds / fd).endswith("inotify"))


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:  # the listing's own descriptor, closed by now
        return ""


async def test_files_created_changed_and_deleted(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text("x = 1\n")
    async with watching(tmp_path) as seen:
        (tmp_path / "new.py").write_text("y = 2\n")
        await seen.until((tmp_path / "new.py", CREATED))
        with (tmp_path / "old.py").open("a") as f:
            f.write("z = 3\n")
        await seen.until((tmp_path / "old.py", CHANGED))
        (tmp_path / "old.py").unlink()
        await seen.until((tmp_path / "old.py", DELETED))


async def test_a_new_folder_is_watched_and_its_first_files_reported(tmp_path: Path) -> None:
    async with watching(tmp_path) as seen:
        # Written before the watcher can have watched the folder: found by its walk.
        (tmp_path / "pkg" / "sub").mkdir(parents=True)
        (tmp_path / "pkg" / "sub" / "a.py").write_text("a = 1\n")
        await seen.until((tmp_path / "pkg" / "sub" / "a.py", CREATED))
        (tmp_path / "pkg" / "sub" / "b.py").write_text("b = 1\n")  # through its own watch
        await seen.until((tmp_path / "pkg" / "sub" / "b.py", CREATED))
        # Moved: the old paths go, the new folder is watched under its new name.
        (tmp_path / "pkg").rename(tmp_path / "lib")
        await seen.until((tmp_path / "pkg", DELETED))
        await seen.until((tmp_path / "lib", CREATED))
        (tmp_path / "lib" / "sub" / "c.py").write_text("c = 1\n")
        await seen.until((tmp_path / "lib" / "sub" / "c.py", CREATED))
    assert (tmp_path / "pkg" / "sub" / "c.py", CREATED) not in seen.changes


async def test_ignored_folders_are_never_watched(tmp_path: Path) -> None:
    (tmp_path / "node_modules" / "dep").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    async with watching(tmp_path) as seen:
        (tmp_path / "node_modules" / "dep" / "x.js").write_text("1")
        (tmp_path / ".git").mkdir()  # appears later: not watched either
        (tmp_path / ".git" / "index").write_text("i")
        (tmp_path / "src" / "build").write_text("a file named like an ignored folder")
        (tmp_path / "src" / "a.py").write_text("a = 1\n")
        await seen.until((tmp_path / "src" / "a.py", CREATED))
        (tmp_path / ".git" / "HEAD").write_text("h")
        (tmp_path / "src" / "b.py").write_text("b = 1\n")
        await seen.until((tmp_path / "src" / "b.py", CREATED))
    shown = {path.relative_to(tmp_path).as_posix() for path, _ in seen.changes}
    assert shown == {"src/a.py", "src/b.py"}


async def test_cancel_stops_at_once_and_closes_inotify(tmp_path: Path) -> None:
    before = inotify_fds()
    with trio.fail_after(5):
        async with watching(tmp_path) as seen:
            assert inotify_fds() == before + 1
            (tmp_path / "a.py").write_text("a = 1\n")
            await seen.until((tmp_path / "a.py", CREATED))
    assert inotify_fds() == before
    # Cancelled with events queued, or while it gathers a batch.
    with trio.fail_after(5):
        async with watching(tmp_path):
            (tmp_path / "b.py").write_text("b = 1\n")
            await trio.lowlevel.checkpoint()
    assert inotify_fds() == before


async def test_without_an_inotify_instance_it_watches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse() -> inotify.Inotify:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(inotify, "Inotify", refuse)
    async with watching(tmp_path) as seen:  # started all the same: the session goes on
        (tmp_path / "a.py").write_text("a = 1\n")
        await trio.lowlevel.checkpoint()
    assert seen.batches == []


class Lossy(inotify.Inotify):
    """inotify as the kernel behaves when its queue overflows (`max_queued_events`): after
    `lose()` the events are dropped; after `overflow()` the next read begins with
    IN_Q_OVERFLOW (wd -1), as the kernel's does once its reader catches up."""

    made: ClassVar[list[Lossy]] = []

    def __init__(self) -> None:
        super().__init__()
        self.losing = False
        self._overflowed = False
        Lossy.made.append(self)

    def lose(self) -> None:
        self.losing = True

    def overflow(self) -> None:
        """The changes since `lose()` are lost (the events queued meanwhile are dropped);
        the watcher hears of it with its next event."""
        while super().read():
            pass
        self.losing, self._overflowed = False, True

    def read(self) -> list[inotify.Event]:
        events = super().read()
        if self.losing:
            return []
        if self._overflowed:
            self._overflowed = False
            return [inotify.Event(-1, inotify.Q_OVERFLOW, ""), *events]
        return events


@pytest.fixture
def lossy(monkeypatch: pytest.MonkeyPatch) -> list[Lossy]:
    """Every watcher's inotify is a `Lossy` one (the last made: the last root watched)."""
    monkeypatch.setattr(inotify, "Inotify", Lossy)
    Lossy.made = []
    return Lossy.made


async def past_the_clock_tick(*paths: Path) -> None:
    """Until the kernel's coarse clock (where file times come from) is past these files'
    times: a change the watcher sees from now on is later than theirs."""
    newest = max(os.lstat(path).st_ctime_ns for path in paths)
    with trio.fail_after(5):
        while coarse_now() <= newest:
            await trio.sleep(0.001)  # the clock's next tick (4 ms here)


def tree(root: Path, spec: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in spec.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths.append(path)
    return paths


async def test_an_overflow_rescans_the_root_and_reports_what_changed(
    tmp_path: Path, lossy: list[Lossy]
) -> None:
    root = tmp_path
    made = tree(root, {"b.py": "b\n", "c.py": "c\n", "d.py": "d\n", "gone/f.py": "f\n",
                       "gone/deep/g.py": "g\n", "kept/e.py": "e\n", "moved/m.py": "m\n",
                       "node_modules/x.js": "x\n"})  # fmt: skip
    await past_the_clock_tick(*made)
    async with watching(root) as seen:
        (notify,) = lossy
        notify.lose()  # what follows is lost, as in a burst that overflowed the queue
        tree(root, {"a.py": "a\n", "b.py": "b = 2\n", "new/sub/n.py": "n\n", "kept/e2.py": "e\n",
                    "node_modules/y.js": "y\n"})  # fmt: skip
        (root / "c.py").unlink()
        shutil.rmtree(root / "gone")
        (root / "moved").rename(root / "renamed")
        notify.overflow()
        (root / "trigger.py").write_text("t\n")
        await seen.until((root / "trigger.py", CREATED))
        # The rescan watched the folders it found: their events come as before.
        (root / "new" / "sub" / "n2.py").write_text("n\n")
        await seen.until((root / "new" / "sub" / "n2.py", CREATED))
        (root / "renamed" / "m2.py").write_text("m\n")
        await seen.until((root / "renamed" / "m2.py", CREATED))
    shown = {(path.relative_to(root).as_posix(), kind) for path, kind in seen.changes}
    assert shown == {
        ("a.py", CREATED), ("b.py", CHANGED), ("c.py", DELETED),
        ("gone", DELETED), ("gone/f.py", DELETED), ("gone/deep", DELETED),
        ("gone/deep/g.py", DELETED),
        ("new", CREATED), ("new/sub", CREATED), ("new/sub/n.py", CREATED),
        ("moved", DELETED), ("moved/m.py", DELETED), ("renamed", CREATED),
        ("renamed/m.py", CREATED), ("kept/e2.py", CREATED),
        # (written after the rescan began: seen by their events, created then written)
        ("trigger.py", CREATED), ("new/sub/n2.py", CREATED), ("renamed/m2.py", CREATED),
        ("trigger.py", CHANGED), ("new/sub/n2.py", CHANGED), ("renamed/m2.py", CHANGED),
    }  # fmt: skip


async def test_walks_and_rescans_checkpoint_after_bounded_work(
    tmp_path: Path, lossy: list[Lossy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of 3000 files: the first walk and the rescan each pause every `STEP` entries,
    and the rescan reports nothing that did not change."""
    for folder in range(60):
        (tmp_path / f"f{folder}").mkdir()
        for name in range(50):
            (tmp_path / f"f{folder}" / f"{name}.txt").write_text("x")
    await past_the_clock_tick(tmp_path / "f59" / "49.txt")
    steps: list[int] = []
    pause = WatchedTree.pause

    async def counted(self: WatchedTree) -> None:
        steps.append(self._work)
        await pause(self)

    monkeypatch.setattr(WatchedTree, "pause", counted)
    async with watching(tmp_path) as seen:
        walked = len(steps)
        assert walked >= 3060 // STEP
        (notify,) = lossy
        notify.lose()
        (tmp_path / "f7" / "new.txt").write_text("y")
        notify.overflow()
        (tmp_path / "f9" / "0.txt").write_text("y")
        await seen.until((tmp_path / "f7" / "new.txt", CREATED))
        assert len(steps) - walked >= 3060 // STEP
    assert all(work == STEP for work in steps)
    assert set(seen.changes) == {(tmp_path / "f7" / "new.txt", CREATED),
                                 (tmp_path / "f9" / "0.txt", CHANGED)}  # fmt: skip


@needs("basedpyright")
async def test_an_overflow_costs_a_rescan_in_the_background_not_a_stall(
    open_client: OpenClient, tmp_path: Path, lossy: list[Lossy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Session A's root overflowed: its rescan runs in A's own watcher task, step by step;
    held at one of its checkpoints, another session's request and A's own answer; once it
    goes on, A's language server is told what changed, and nothing else."""
    a = Path(os.path.realpath(tmp_path / "a"))
    data = {f"data/{i}/{j}.txt": "x" for i in range(40) for j in range(50)}
    made = tree(a, {"b.py": "B = 1\n", "c.py": "C = 1\n", "d.py": "import b\n", **data})
    b = make_repo(tmp_path / "b")
    await past_the_clock_tick(*made)
    told: list[tuple[str, int]] = []
    arrived = trio.Event()
    tell = LanguageServer.watched_files_changed

    def spy(self: LanguageServer, changes: list[dict[str, Any]]) -> None:
        nonlocal arrived
        if self.name == "basedpyright":
            told.extend((change["uri"], change["type"]) for change in changes)
            arrived.set()
        tell(self, changes)

    held, release = trio.Event(), trio.Event()
    pause = WatchedTree.pause

    async def hold(self: WatchedTree) -> None:
        if self.rescanning and self.root == a and not held.is_set():
            held.set()
            await release.wait()
        await pause(self)

    monkeypatch.setattr(LanguageServer, "watched_files_changed", spy)
    monkeypatch.setattr(WatchedTree, "pause", hold)
    client_a = await open_client(a)
    (notify,) = lossy
    await client_a.tool("get_diagnostics", path="d.py")  # basedpyright runs, d.py is open
    notify.lose()
    tree(a, {"a.py": "A = 1\n", "b.py": "B = 2\n"})
    (a / "c.py").unlink()
    notify.overflow()
    (a / "trigger.txt").write_text("t")
    with trio.fail_after(10):
        await held.wait()
    client_b = await open_client(b)
    with trio.fail_after(10):
        status = await client_b.tool("git_command", subcommand="status")
        await client_a.tool("get_diagnostics", path="d.py")
    assert status["exit_code"] == 0
    assert not release.is_set()  # answered while the rescan was held at its checkpoint
    release.set()
    changed = [("a.py", CREATED), ("b.py", CHANGED), ("c.py", DELETED)]
    expected = {(a.joinpath(name).as_uri(), kind) for name, kind in changed}
    with trio.fail_after(30):
        while not expected <= set(told):
            await arrived.wait()
            arrived = trio.Event()
    assert {change for change in told if change[0].endswith(".py")} == expected
