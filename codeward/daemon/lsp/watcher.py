"""Watching a session root for changes: inotify read by trio, one watch per folder, ignored
folders never watched; and LSP glob patterns for `didChangeWatchedFiles` registrations."""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.lsp import inotify
from codeward.daemon.lsp.ignored import ignored_name
from codeward.daemon.lsp.uris import uri_to_path

log = logging.getLogger("codeward.lsp")

# FileChangeType of LSP
CREATED, CHANGED, DELETED = 1, 2, 3

OnChanges = Callable[[list[tuple[Path, int]]], None]


async def watch_root(
    root: Path,
    on_changes: OnChanges,
    *,
    debounce_ms: int = 50,
    step_ms: int = 10,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Report batches of (path, LSP change type) under `root` until cancelled: a batch is
    what came until `step_ms` passed without an event, or `debounce_ms` after its first.

    `started` is signalled once every folder is watched.
    """
    notify = _open(root)
    if notify is None:  # changes on disk then reach the servers only through codeward's own
        task_status.started()
        await trio.sleep_forever()
    with notify:
        tree = _Tree(notify)
        tree.add(root, collect=False)  # here, not in a thread: ignored folders are not walked
        task_status.started()
        debounce, step = debounce_ms / 1000, step_ms / 1000
        while True:
            await notify.wait()
            changes = tree.changes(notify.read())
            deadline = trio.current_time() + debounce
            while (left := deadline - trio.current_time()) > 0:
                with trio.move_on_after(min(step, left)) as quiet:
                    await notify.wait()
                if quiet.cancelled_caught:
                    break
                changes += tree.changes(notify.read())
            if changes:
                on_changes(list(dict.fromkeys(changes)))


def _open(root: Path) -> inotify.Inotify | None:
    if not inotify.AVAILABLE:
        log.warning("no inotify here: changes on disk below %s are not seen", root)
        return None
    try:
        return inotify.Inotify()
    except OSError as exc:  # EMFILE: fs.inotify.max_user_instances
        log.warning("cannot watch %s (%s): changes on disk are not seen", root, exc.strerror)
        return None


class _Tree:
    """The watched folders of one root: watch descriptor -> folder."""

    def __init__(self, notify: inotify.Inotify) -> None:
        self.notify = notify
        self.folders: dict[int, Path] = {}
        self._full = False

    def add(self, top: Path, *, collect: bool = True) -> list[Path]:
        """Watch `top` and every folder below it but the ignored ones; with `collect`, the
        files found (in a folder that just appeared, written before its watch was in place)."""
        found: list[Path] = []
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                self.folders[self.notify.add_folder(str(folder))] = folder
                entries = list(os.scandir(folder))
            except OSError as exc:
                if exc.errno == errno.ENOSPC and not self._full:
                    self._full = True
                    log.warning(
                        "inotify's watch limit is reached (fs.inotify.max_user_watches): "
                        "changes on disk below %s are not seen",
                        folder,
                    )
                continue
            for entry in entries:
                path = folder / entry.name
                if not entry.is_dir(follow_symlinks=False):
                    if collect:
                        found.append(path)
                elif not ignored_name(entry.name):
                    stack.append(path)
        return found

    def changes(self, events: list[inotify.Event]) -> list[tuple[Path, int]]:
        """(path, LSP change type) of `events`; folders that appear are watched, folders
        that go are forgotten."""
        changes: list[tuple[Path, int]] = []
        for event in events:
            if event.mask & inotify.Q_OVERFLOW:
                log.warning("inotify's queue overflowed: some changes on disk were missed")
                continue
            if event.mask & inotify.IGNORED:  # the folder is gone, or its watch removed
                self.folders.pop(event.wd, None)
                continue
            folder = self.folders.get(event.wd)
            if folder is None or not event.name or ignored_name(event.name):
                continue
            path = folder / event.name
            if event.mask & (inotify.CREATE | inotify.MOVED_TO):
                changes.append((path, CREATED))
                if event.mask & inotify.ISDIR:
                    changes += [(found, CREATED) for found in self.add(path)]
            elif event.mask & (inotify.DELETE | inotify.MOVED_FROM):
                changes.append((path, DELETED))
                if event.mask & inotify.ISDIR:
                    self._forget(path)
            elif not event.mask & inotify.ISDIR:
                changes.append((path, CHANGED))
        return changes

    def _forget(self, top: Path) -> None:
        """Stop watching `top` and the folders below it (moved away: their paths changed)."""
        for wd, folder in list(self.folders.items()):
            if folder == top or top in folder.parents:
                self.notify.remove(wd)
                del self.folders[wd]


@functools.lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """An LSP glob (`*`, `**`, `?`, `{a,b}`, `[...]`) as a regex over `/`-separated paths."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def glob_matches(pattern: Any, path: Path) -> bool:
    """Whether a `GlobPattern` (string, or RelativePattern) matches `path`."""
    if isinstance(pattern, dict):
        base = pattern.get("baseUri")
        base_uri = base.get("uri") if isinstance(base, dict) else base
        if not isinstance(base_uri, str) or not base_uri.startswith("file://"):
            return False
        base_path = uri_to_path(base_uri)
        if base_path is None:
            return False
        try:
            rel = path.relative_to(base_path).as_posix()
        except ValueError:
            return False
        return bool(_glob_regex(str(pattern.get("pattern", ""))).match(rel))
    if not isinstance(pattern, str):
        return False
    target = path.as_posix()
    regex = _glob_regex(pattern)
    if pattern.startswith("/"):
        return bool(regex.match(target))
    # A relative glob matches at any depth boundary, as editors apply it to workspace paths.
    parts = target.lstrip("/").split("/")
    return any(regex.match("/".join(parts[i:])) for i in range(len(parts)))
