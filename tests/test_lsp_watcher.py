"""The root watcher on real inotify: what it reports, what it never watches, how it stops."""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from codeward.daemon.lsp import inotify
from codeward.daemon.lsp.watcher import CHANGED, CREATED, DELETED, watch_root

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
