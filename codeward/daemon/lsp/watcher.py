"""Watching a session root for changes (inotify through watchfiles' Rust notifier), skipping
ignored folders; and LSP glob patterns for `didChangeWatchedFiles` registrations."""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from codeward.daemon.lsp.ignored import is_ignored
from codeward.daemon.lsp.uris import uri_to_path

# FileChangeType of LSP
CREATED, CHANGED, DELETED = 1, 2, 3
_KINDS = {Change.added: CREATED, Change.modified: CHANGED, Change.deleted: DELETED}

OnChanges = Callable[[list[tuple[Path, int]]], None]


async def watch_root(
    root: Path,
    on_changes: OnChanges,
    *,
    debounce_ms: int = 50,
    step_ms: int = 10,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Report batches of (path, LSP change type) under `root` until cancelled.

    `started` is signalled once the inotify watches are in place.
    """
    notify = _Notifier(RustNotify([str(root)], False, False, 300, True, True))
    try:
        task_status.started()
        while True:
            batch = await _next_batch(notify, debounce_ms, step_ms)
            changes = [
                (Path(raw), _KINDS.get(Change(kind), CHANGED))
                for kind, raw in batch
                if not is_ignored(Path(raw), root)
            ]
            if changes:
                on_changes(changes)
    finally:
        notify.close_unless_busy()


class _Notifier:
    """The Rust notifier, closed exactly once: by the watching task, or by a thread that was
    still inside `watch` when the task was cancelled."""

    def __init__(self, rust: RustNotify) -> None:
        self.rust = rust
        self.busy = False
        self._closed = False
        self._lock = threading.Lock()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self.rust.close()

    def finished(self, *, close: bool) -> None:
        with self._lock:
            self.busy = False
            if close:
                self._close()

    def close_unless_busy(self) -> None:
        with self._lock:
            if not self.busy:
                self._close()


async def _next_batch(notify: _Notifier, debounce_ms: int, step_ms: int) -> set[tuple[int, str]]:
    """One batch from the notifier's blocking `watch`, run in a thread.

    Cancellation returns at once (virtual clocks included) and sets the stop event: the
    thread then ends within `step_ms` and closes the notifier itself.
    """
    token = trio.lowlevel.current_trio_token()
    while True:
        stop = threading.Event()
        done = trio.Event()
        box: list[Any] = []

        def work(stop: threading.Event = stop) -> Any:
            try:
                return notify.rust.watch(debounce_ms, step_ms, 1000, stop)
            finally:
                notify.finished(close=stop.is_set())

        def deliver(outcome: Any, box: list[Any] = box, done: trio.Event = done) -> None:
            box.append(outcome)
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        notify.busy = True
        trio.lowlevel.start_thread_soon(work, deliver)
        try:
            await done.wait()
        finally:
            if not done.is_set():
                stop.set()
        result = box[0].unwrap()
        if isinstance(result, set):
            return result


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
