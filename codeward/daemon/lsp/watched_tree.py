"""The folders a root's watcher watches and the files it has seen in them: kept up to date by
inotify's events, and rescanned when the kernel's queue overflowed and events were lost.

Every walk and every batch of events checkpoints after a bounded amount of work (`STEP`
folder entries or events), so a huge tree, a burst of churn or a rescan never holds the
event loop: the root's session and every other session go on answering meanwhile.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path

import trio

from codeward.daemon.lsp import inotify
from codeward.daemon.lsp.ignored import ignored_name

log = logging.getLogger("codeward.lsp")

# FileChangeType of LSP
CREATED, CHANGED, DELETED = 1, 2, 3
Change = tuple[Path, int]
STEP = 512  # folder entries or events handled between two checkpoints
# File times come from the kernel's coarse clock (or a finer one, never behind it): a file
# changed after a reading of this clock has a ctime at or after it.
_COARSE_CLOCK = getattr(time, "CLOCK_REALTIME_COARSE", 5)  # (5: Linux's, where inotify is)


def coarse_now() -> int:
    return time.clock_gettime_ns(_COARSE_CLOCK)


class _Folder:
    """A watched folder: its watch descriptor, and the names of its files and of its folders
    (ignored names left out)."""

    __slots__ = ("dirs", "files", "wd")

    def __init__(self, wd: int, files: set[str], dirs: set[str]) -> None:
        self.wd = wd
        self.files = files
        self.dirs = dirs


class WatchedTree:
    """The watched folders of one root (ignored folders never watched) and their listings."""

    def __init__(self, root: Path, notify: inotify.Inotify) -> None:
        self.root = root
        self.notify = notify
        self.folders: dict[Path, _Folder] = {}
        self.paths: dict[int, Path] = {}  # watch descriptor -> folder
        self.overflowed = False  # events were lost: `rescan` before trusting the listings
        self.rescanning = False
        self.synced = coarse_now()  # every change before this time was seen (or rescanned)
        self._full = False  # the watch limit was reached (said once)
        self._work = 0  # entries or events handled since the last checkpoint

    async def pause(self) -> None:
        """A checkpoint between two bounded steps of work."""
        await trio.lowlevel.checkpoint()

    async def _did(self) -> None:
        """One entry or event handled: a checkpoint every `STEP` of them."""
        self._work += 1
        if self._work >= STEP:
            await self.pause()
            self._work = 0

    # -- walking -------------------------------------------------------------------------

    async def add(self, top: Path, *, collect: bool = True) -> list[Path]:
        """Watch `top` and every folder below it but the ignored ones; with `collect`, the
        files found (in a folder that just appeared, written before its watch was in place)."""
        found: list[Path] = []
        stack = [top]
        while stack:
            folder = stack.pop()
            watched = await self._watch(folder)
            if watched is None:
                continue
            listed = watched[0]
            if collect:
                found += [folder / name for name in listed.files]
            stack += [folder / name for name in listed.dirs]
        return found

    async def _watch(
        self, folder: Path, since: int | None = None
    ) -> tuple[_Folder, set[str]] | None:
        """Watch `folder` and list it (None when it cannot be watched), in steps however
        many entries it has; with `since`, the names of its files changed at or after that
        time too."""
        try:
            wd = self.notify.add_folder(str(folder))
            entries = os.scandir(folder)
        except OSError as exc:
            if exc.errno == errno.ENOSPC and not self._full:
                self._full = True
                log.warning(
                    "inotify's watch limit is reached (fs.inotify.max_user_watches): "
                    "changes on disk below %s are not seen",
                    folder,
                )
            return None
        files: set[str] = set()
        dirs: set[str] = set()
        recent: set[str] = set()
        with entries:
            await self._did()
            for entry in entries:
                await self._did()
                if ignored_name(entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    dirs.add(entry.name)
                    continue
                files.add(entry.name)
                if since is not None:
                    try:
                        if entry.stat(follow_symlinks=False).st_ctime_ns >= since:
                            recent.add(entry.name)
                    except OSError:
                        files.discard(entry.name)  # gone already
        moved = self.paths.get(wd)  # (the same folder, under a new name)
        if moved is not None and moved != folder:
            self.folders.pop(moved, None)
        listed = self.folders[folder] = _Folder(wd, files, dirs)
        self.paths[wd] = folder
        return listed, recent

    def _forget(self, top: Path) -> None:
        """Stop watching `top` and the folders below it (gone, or moved: their paths changed)."""
        stack = [top]
        while stack:
            path = stack.pop()
            folder = self.folders.pop(path, None)
            if folder is not None:
                self.notify.remove(folder.wd)
                self.paths.pop(folder.wd, None)
                stack += [path / name for name in folder.dirs]

    # -- events --------------------------------------------------------------------------

    async def read(self) -> list[Change]:
        """The changes of the events queued now; folders that appear are watched, folders
        that go are forgotten, and an overflow leaves `overflowed` set."""
        now = coarse_now()  # every change before it is in the queue, or was lost
        changes = await self.changes(self.notify.read())
        if not self.overflowed:
            self.synced = now
        return changes

    async def changes(self, events: list[inotify.Event]) -> list[Change]:
        """(path, LSP change type) of `events`, keeping the listings up to date."""
        changes: list[Change] = []
        for event in events:
            await self._did()
            if event.mask & inotify.Q_OVERFLOW:
                if not self.overflowed:
                    log.warning("inotify's queue overflowed: rescanning %s", self.root)
                self.overflowed = True
                continue
            if event.mask & inotify.IGNORED:  # the folder is gone, or its watch removed
                gone = self.paths.pop(event.wd, None)
                folder = None if gone is None else self.folders.get(gone)
                if gone is not None and folder is not None and folder.wd == event.wd:
                    del self.folders[gone]  # (not a folder made again under its name)
                continue
            parent = self.paths.get(event.wd)
            if parent is None or not event.name or ignored_name(event.name):
                continue
            listed = self.folders.get(parent)
            if listed is None:
                continue
            name, path = event.name, parent / event.name
            is_dir = bool(event.mask & inotify.ISDIR)
            if event.mask & (inotify.CREATE | inotify.MOVED_TO):
                changes.append((path, CREATED))
                if is_dir:
                    listed.dirs.add(name)
                    changes += [(found, CREATED) for found in await self.add(path)]
                else:
                    listed.files.add(name)
            elif event.mask & (inotify.DELETE | inotify.MOVED_FROM):
                changes.append((path, DELETED))
                if is_dir:
                    listed.dirs.discard(name)
                    self._forget(path)
                else:
                    listed.files.discard(name)
            elif not is_dir:
                listed.files.add(name)
                changes.append((path, CHANGED))
        return changes

    # -- after lost events ---------------------------------------------------------------

    async def rescan(self) -> list[Change]:
        """Walk the root again, as events were lost: every folder watched again, and what
        changed since the last time nothing was lost (by the listings, and for a file still
        there by its ctime) reported; checkpoints as any walk."""
        started, since = coarse_now(), self.synced
        self.overflowed, self.rescanning = False, True
        try:
            gone, found = await self._rescan(since)
        finally:
            self.rescanning = False
        if not self.overflowed:
            self.synced = started
        log.info("rescanned %s: %d changes", self.root, len(gone) + len(found))
        return gone + found  # first: a folder replaced by a file of its name ends created

    async def _rescan(self, since: int) -> tuple[list[Change], list[Change]]:
        """What went (folders and their files), and what came or changed."""
        before, self.folders, self.paths = self.folders, {}, {}
        found: list[Change] = []
        stack = [self.root]
        while stack:
            folder = stack.pop()
            watched = await self._watch(folder, since)
            if watched is None:
                continue
            listed, recent = watched
            old = before.get(folder)
            if old is None:
                if folder != self.root:
                    found.append((folder, CREATED))
                found += [(folder / name, CREATED) for name in listed.files]
            else:
                found += [(folder / name, DELETED) for name in old.files - listed.files]
                found += [(folder / name, CREATED) for name in listed.files - old.files]
                found += [(folder / name, CHANGED) for name in recent & old.files]
            stack += [folder / name for name in listed.dirs]
        gone: list[Change] = []
        for folder, old in before.items():
            if folder not in self.folders:
                if old.wd not in self.paths:
                    self.notify.remove(old.wd)  # (moved under an ignored name, or out)
                gone.append((folder, DELETED))
                gone += [(folder / name, DELETED) for name in old.files]
        return gone, found
