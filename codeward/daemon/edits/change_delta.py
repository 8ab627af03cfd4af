"""The diagnostics a whole change introduced and resolved: the working tree against a
revision (`get_diagnostics since: "HEAD"`, `review_changes`).

The servers are asked twice: about the working tree as it is (the "after"), then, inside a
preview (`lsp.preview`: nothing is written, no other request sees it), about the revision's
text of every changed file shown in memory at once (the "before"); the delta of each file
is the one `diagnostics_after` reports (`Aftermath`), with the other open files of the same
languages checked for breaks. An added file has no "before" (all its diagnostics are
introduced); a deleted file no "after" (all its diagnostics are resolved), its "before"
shown from memory at its old path. At most `lsp.folder_diagnostics_files` changed files are
checked; the rest are `unchecked_files`. The "before" of a file is remembered while the
revision's state stands (`_Before`): a review repeated as the work goes on asks the
servers about the working tree only.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.edits.aftermath import Aftermath, Report, partial_servers, snapshot_of
from codeward.daemon.edits.history import Snapshot
from codeward.daemon.git import revision
from codeward.daemon.lsp.service import FileDiagnostics
from codeward.daemon.lsp.types import SEVERITY_RANKS
from codeward.daemon.paths import is_inside
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session


@dataclass
class ChangeDelta:
    changes: revision.Changes
    checked: list[revision.FileChange]  # those the servers were asked about
    unchecked: list[str]  # changed files with a language, past the limit
    report: Report


async def change_delta(session: Session, since: str, under: Path | None = None) -> ChangeDelta:
    """The delta of the diagnostics of the working tree's change against `since` (only of
    the files below `under`, if given)."""
    return await delta_of(session, await changes_below(session.root, since, under))


async def changes_below(root: Path, since: str, under: Path | None) -> revision.Changes:
    """The working tree's change against `since`, only below `under` if given."""
    changes = await revision.changes(root, since)
    if under is None or under == root:
        return changes
    kept = [c for c in changes.files if is_inside(root / c.path, under)]
    return revision.Changes(changes.since, changes.commit, kept)


def split_checked(
    session: Session, changes: revision.Changes
) -> tuple[list[revision.FileChange], list[str]]:
    """The changed files the servers are asked about (those with a language, up to
    `lsp.folder_diagnostics_files`), and the paths of the others with a language."""
    root, limit = session.root, session.config.lsp.folder_diagnostics_files
    with_language = [c for c in changes.files if session.lsp.language_or_none(root / c.path)]
    return with_language[:limit], [c.path for c in with_language[limit:]]


InPreview = Callable[[dict[Path, bytes]], Awaitable[None]]


async def delta_of(
    session: Session,
    changes: revision.Changes,
    old: dict[str, bytes | None] | None = None,
    in_preview: InPreview | None = None,
) -> ChangeDelta:
    """The diagnostics delta of `changes` (see the module doc). `old`: the revision's blobs
    already read, by object id; `in_preview`, given the texts shown, runs inside the preview
    after the "before" was asked (to ask the servers more about the revision's text)."""
    root, manager = session.root, session.lsp
    checked, unchecked = split_checked(session, changes)
    paths = [root / c.path for c in checked]
    deleted = {root / c.path for c in checked if c.status == "deleted"}
    check = Aftermath.plan(session, paths)
    present = [p for p in check.changing if p not in deleted]
    blobs = _Blobs(session, checked, old)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(blobs.read)  # while the servers check the working tree
        after = await manager.files_diagnostics(present + check.others, present)
    old = blobs.result()
    shown = {
        root / c.path: data
        for c in checked
        if c.old_blob is not None and (data := old.get(c.old_blob)) is not None
    }
    known = _remembered(session, changes, shown)
    wanted = [p for p in check.changing if p in shown] + check.others
    missing = [p for p in wanted if p not in known.snapshots]
    before: dict[Path, FileDiagnostics | ToolError] = {}
    if missing or in_preview is not None:
        async with manager.previewing() as previewer, AsyncExitStack() as stack:
            for path, data in shown.items():
                await stack.enter_async_context(previewer.show(path, data))
            before = await manager.files_diagnostics(missing, check.changing)
            if in_preview is not None:
                await in_preview(shown)
    check.took(before)
    for path in wanted:
        snapshot = known.snapshots.get(path)
        if snapshot is not None and path not in before:
            into = check.before_changed if path in check.changing else check.before_others
            into[path] = snapshot
    known.keep(before)
    report = check.report(check.changing, deleted, after)
    return ChangeDelta(changes, checked, unchecked, report)


class _Blobs:
    """The revision's blobs of the checked files (`given`: read already), read in a task."""

    def __init__(
        self,
        session: Session,
        checked: list[revision.FileChange],
        given: dict[str, bytes | None] | None,
    ) -> None:
        self.session, self.checked = session, checked
        self.found = given
        self.error: ToolError | None = None

    async def read(self) -> None:
        if self.found is not None:
            return
        wanted = [c.old_blob for c in self.checked if c.old_blob is not None]
        limit = self.session.config.lsp.max_file_bytes
        try:
            self.found = await revision.blobs(self.session.root, wanted, limit)
        except ToolError as exc:  # raised by `result`, not as a nursery's group
            self.error = exc

    def result(self) -> dict[str, bytes | None]:
        if self.error is not None:
            raise self.error
        assert self.found is not None
        return self.found


@dataclass
class _Before:
    """The diagnostics of the revision's state, remembered per file: that state (the
    revision's text of the files shown, the other files on disk as the revision has them,
    the added files) stands while the revision, the files shown, the added files' stats
    and the servers' trust do, so a later review of the same change asks the servers only
    about the working tree."""

    key: tuple[Any, ...]
    snapshots: dict[Path, Snapshot] = field(default_factory=dict)

    def keep(self, answers: dict[Path, FileDiagnostics | ToolError]) -> None:
        for path, answer in answers.items():
            if isinstance(answer, FileDiagnostics) and not partial_servers(answer):
                self.snapshots[path] = snapshot_of(answer)


_BEFORE: weakref.WeakKeyDictionary[Session, _Before] = weakref.WeakKeyDictionary()


def _remembered(session: Session, changes: revision.Changes, shown: dict[Path, bytes]) -> _Before:
    """The remembered "before" of this revision's state (empty when it changed)."""
    added = []
    for change in changes.files:
        if change.status == "added":
            try:
                st = os.lstat(session.root / change.path)
            except OSError:
                continue
            added.append((change.path, st.st_size, st.st_mtime_ns, st.st_ino))
    key = (changes.commit, frozenset(shown), frozenset(added), session.trusted)
    known = _BEFORE.get(session)
    if known is None or known.key != key:
        known = _BEFORE[session] = _Before(key)
    return known


def shaped(found: ChangeDelta, severity: str | None) -> dict[str, Any]:
    """The tool's result: the delta of each file (`diagnostics_after`'s entries), those of
    `severity` or worse."""
    rank = SEVERITY_RANKS[severity] if severity else 4
    files = []
    for report in found.report.public():
        report["introduced"] = [d for d in report["introduced"] if _rank(d) <= rank]
        kept = [d for d in report["resolved"]["diagnostics"] if _rank(d) <= rank]
        report["resolved"] = {"count": len(kept), "diagnostics": kept}
        files.append(report)
    result: dict[str, Any] = {
        "since": found.changes.since,
        "commit": found.changes.commit,
        "files": files,
        "introduced_count": sum(len(f["introduced"]) for f in files),
        "resolved_count": sum(f["resolved"]["count"] for f in files),
    }
    if any(f.get("partial") for f in files) or found.unchecked:
        result["partial"] = True
    if found.unchecked:
        result["unchecked_files"] = len(found.unchecked)
    return result


def _rank(d: dict[str, Any]) -> int:
    return SEVERITY_RANKS.get(d["severity"], 1)
