"""Watching a session root for changes: inotify read by trio, one watch per folder, ignored
folders never watched (`watched_tree`), a rescan when the kernel lost events; and LSP glob
patterns for `didChangeWatchedFiles` registrations."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.lsp import inotify
from codeward.daemon.lsp.uris import uri_to_path
from codeward.daemon.lsp.watched_tree import STEP, Change, WatchedTree

log = logging.getLogger("codeward.lsp")

OnChanges = Callable[[list[Change]], None]


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
    When the kernel's queue overflowed, the batch ends with a rescan of the root, in this
    task (the session's), with a checkpoint after each bounded step: other requests and
    sessions are served meanwhile; a batch reaches `on_changes` in slices of `STEP`.

    `started` is signalled once every folder is watched.
    """
    notify = _open(root)
    if notify is None:  # changes on disk then reach the servers only through codeward's own
        task_status.started()
        await trio.sleep_forever()
    with notify:
        tree = WatchedTree(root, notify)
        await tree.add(root, collect=False)  # in steps; ignored folders are not walked
        task_status.started()
        debounce, step = debounce_ms / 1000, step_ms / 1000
        while True:
            await notify.wait()
            changes = await tree.read()
            deadline = trio.current_time() + debounce
            while (left := deadline - trio.current_time()) > 0 and not tree.overflowed:
                with trio.move_on_after(min(step, left)) as quiet:
                    await notify.wait()
                if quiet.cancelled_caught:
                    break
                changes += await tree.read()
            if tree.overflowed:
                changes += await tree.rescan()
            unique = list(dict.fromkeys(changes))
            for at in range(0, len(unique), STEP):
                if at:
                    await trio.lowlevel.checkpoint()
                on_changes(unique[at : at + STEP])


def _open(root: Path) -> inotify.Inotify | None:
    if not inotify.AVAILABLE:
        log.warning("no inotify here: changes on disk below %s are not seen", root)
        return None
    try:
        return inotify.Inotify()
    except OSError as exc:  # EMFILE: fs.inotify.max_user_instances
        log.warning("cannot watch %s (%s): changes on disk are not seen", root, exc.strerror)
        return None


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
