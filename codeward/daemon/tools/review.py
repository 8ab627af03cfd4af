"""`review_changes`: the working tree's change against a revision, as an agent needs it at
the end of a task: the files and their hunks, the definitions the hunks touch, who uses
the changed and removed ones outside the change, and the diagnostics the change introduced
and resolved (`edits.change_delta`). Nothing is written; git runs read-only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import trio

from codeward.daemon.edits import change_delta
from codeward.daemon.edits.hunks import Hunk, hunks
from codeward.daemon.files import read_file
from codeward.daemon.git import revision
from codeward.daemon.intel import touched
from codeward.daemon.intel.inputs import resolve_inside
from codeward.daemon.paths import resolve_input_path
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

REFERENCED = 30  # symbols whose references are asked, in the order of the change
ASKED_AT_ONCE = 4  # reference requests in flight


class ReviewArgs(msgspec.Struct, forbid_unknown_fields=True):
    since: Annotated[
        str,
        msgspec.Meta(
            description="The git revision the change is against: `HEAD` (the default), a "
            "branch, a tag, a commit, or `merge-base:main` for the branch point."
        ),
    ] = "HEAD"
    path: Annotated[
        str | None,
        msgspec.Meta(description="Only the change below this folder (or of this file)."),
    ] = None


@tool(
    "review_changes",
    "Review the working tree's whole change against a git revision (default HEAD; a branch, "
    "a commit, or merge-base:main for the branch point), as at the end of a task: every "
    "changed file (added, deleted, untracked ones too) with its hunks' line ranges; the "
    "definitions the hunks touch (added, removed, or changed in signature or body); for "
    "each changed or removed one, its references outside the change (the blast radius, by "
    "file with counts); and the diagnostics the change introduced and resolved, the "
    "revision's text shown to the servers in memory. Nothing is written.",
    ReviewArgs,
    title="Review changes",
    servers=True,
)
async def review_changes(ctx: ToolContext, args: ReviewArgs) -> dict[str, Any]:
    session, root = ctx.session, ctx.session.root
    if revision.is_content_hash(args.since):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "review_changes takes a git revision (`HEAD`, a branch, `merge-base:main`), not a "
            "content hash; give get_diagnostics the hash instead.",
        )
    under = None
    if args.path is not None:
        under = resolve_inside(root, args.path)
        if not under.exists():
            under = resolve_input_path(root, args.path, allow_dir=True)
    changes = await change_delta.changes_below(root, args.since, under)
    review = Review(session, changes)
    await review.read_texts()
    checked, _ = change_delta.split_checked(session, changes)
    await review.new_outlines(checked)
    delta = await change_delta.delta_of(session, changes, review.old, review.in_preview)
    await review.references(new_side=True)
    return review.result(delta)


class Review:
    """The parts of one review, gathered step by step (see `review_changes`)."""

    def __init__(self, session: Session, changes: revision.Changes) -> None:
        self.session = session
        self.root = session.root
        self.changes = changes
        self.old: dict[str, bytes | None] = {}
        self.lines: dict[str, tuple[list[str], list[str]]] = {}  # old, new
        self.hunks: dict[str, list[Hunk]] = {}
        self.binary: set[str] = set()
        self.new_outline: dict[str, list[touched.Definition]] = {}
        self.touched: dict[str, list[touched.Touched]] = {}
        self.errors: dict[str, list[str]] = {}
        self.skipped = 0  # symbols whose references were not asked (past REFERENCED)
        self._asked = 0

    async def read_texts(self) -> None:
        """Each changed file's text in the revision and in the working tree, and hunks (the
        reads and the diffs in a thread: a large change would hold the event loop)."""
        limit = self.session.config.lsp.max_file_bytes
        wanted = [c.old_blob for c in self.changes.files if c.old_blob is not None]
        self.old = await revision.blobs(self.root, wanted, limit)
        await trio.to_thread.run_sync(self._diff_all, limit)

    def _diff_all(self, limit: int) -> None:
        for change in self.changes.files:
            old = self.old.get(change.old_blob, b"") if change.old_blob else b""
            new = b""
            if change.status != "deleted":
                try:
                    new, _ = read_file(self.root / change.path, self.root, limit)
                except ToolError:
                    new = None
            if old is None or new is None or b"\x00" in old or b"\x00" in new:
                self.binary.add(change.path)  # too large, unreadable or binary: no hunks
                continue
            old_text, new_text = old.decode("utf-8", "replace"), new.decode("utf-8", "replace")
            self.hunks[change.path] = hunks(old_text, new_text)
            self.lines[change.path] = (old_text.splitlines(), new_text.splitlines())

    async def new_outlines(self, checked: list[revision.FileChange]) -> None:
        """The working tree's outline of each checked file that is still there."""
        async with trio.open_nursery() as nursery:
            for change in checked:
                if change.status != "deleted" and change.path in self.hunks:
                    nursery.start_soon(self._outline, change.path, self.new_outline)

    async def _outline(self, file: str, into: dict[str, list[touched.Definition]]) -> None:
        try:
            into[file] = await touched.outline(self.session.lsp, self.root / file)
        except ToolError as exc:
            if exc.kind is ErrorKind.CANCELLED:
                raise
            self.errors.setdefault(file, []).append(f"outline: {exc.message}")

    async def in_preview(self, shown: dict[Path, bytes]) -> None:
        """Inside the preview of the revision's text: the old outlines, what the hunks
        touched, and who used the removed definitions."""
        old_outline: dict[str, list[touched.Definition]] = {}
        async with trio.open_nursery() as nursery:
            for path in shown:
                file = path.relative_to(self.root).as_posix()
                if file in self.hunks:
                    nursery.start_soon(self._outline, file, old_outline)
        checked = {p.relative_to(self.root).as_posix() for p in shown} | set(self.new_outline)
        for change in self.changes.files:
            file = change.path
            if file not in checked or file not in self.hunks:
                continue
            old_lines, new_lines = self.lines[file]
            old = old_outline.get(file) if change.status != "added" else None
            new = self.new_outline.get(file) if change.status != "deleted" else None
            if (change.status != "added" and old is None) or (
                change.status != "deleted" and new is None
            ):
                continue  # a server failed: its error says so
            self.touched[file] = touched.compare(old, new, self.hunks[file], old_lines, new_lines)
        await self.references(new_side=False)

    async def references(self, *, new_side: bool) -> None:
        """Who uses each changed (`new_side`) or removed definition, outside the change."""
        limiter = trio.CapacityLimiter(ASKED_AT_ONCE)

        async def one(file: str, item: touched.Touched) -> None:
            async with limiter:
                try:
                    item.references = await touched.references(
                        self.session.lsp, self.root / file, item.definition, self.hunks,
                        new_side=new_side,
                    )  # fmt: skip
                except ToolError as exc:
                    if exc.kind is ErrorKind.CANCELLED:
                        raise
                    self.errors.setdefault(file, []).append(
                        f"references of {item.definition.name}: {exc.message}"
                    )

        async with trio.open_nursery() as nursery:
            for file, items in self.touched.items():
                for item in items:
                    if item.change == "added" or item.new != new_side:
                        continue
                    if self._asked >= REFERENCED:
                        self.skipped += 1
                        continue
                    self._asked += 1
                    nursery.start_soon(one, file, item)

    def result(self, delta: change_delta.ChangeDelta) -> dict[str, Any]:
        files = []
        for change in self.changes.files:
            entry: dict[str, Any] = {"file": change.path, "status": change.status}
            if change.path in self.binary:
                entry["binary"] = True
            else:
                entry["hunks"] = [h.public() for h in self.hunks.get(change.path, [])]
            items = self.touched.get(change.path)
            if items is not None:
                entry["symbols"] = [item.public(change.path) for item in items]
            if change.path in self.errors:
                entry["errors"] = self.errors[change.path]
            files.append(entry)
        shaped = change_delta.shaped(delta, None)
        result: dict[str, Any] = {
            "since": self.changes.since,
            "commit": self.changes.commit,
            "files": files,
            "diagnostics": {
                key: shaped[key] for key in ("files", "introduced_count", "resolved_count")
            },
        }
        if self.skipped:
            result["references_skipped"] = self.skipped
        partial = shaped.get("partial") or any(
            (item.references or {}).get("partial") for items in self.touched.values()
            for item in items
        )  # fmt: skip
        if partial:
            result["partial"] = True
        if "unchecked_files" in shaped:
            result["unchecked_files"] = shaped["unchecked_files"]
        return result
