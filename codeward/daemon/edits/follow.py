"""Editors' buffers and the edit loop: an edit never writes over a person's unsaved work,
and an editor holding a file the edit wrote gets the same edit, so its buffer follows.

`plan.prepare` refuses with `stale_edit` naming the editor (`data.holder`) an edit of a
file a buffer of which is not the disk's content (`plan.unsaved`). After the write,
`follow(changes, buffers)` sends each holder one `WorkspaceEdit` of the files it holds
(`document_changes`, one `TextDocumentEdit` per file under the buffer's version, ranges of
the text before the edit in UTF-16, as LSP counts by default) and says what became of it:
the disk was written either way; a holder that refused, failed or did not answer within
`FOLLOW_TIMEOUT` keeps its old text (now unsaved against the disk: the next agent edit of
that file is refused until the person reloads or saves). A file the edit moved or deleted
cannot follow in the buffer: said so. The outcomes are collected for the tool's result
(`collect`, a context variable the tool context sets: the call's `editors`; a server's
edits during a command are recorded into its caller's, `recorded_into`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.edits.plan import Buffers, FileChange
from codeward.daemon.lsp.overlay import Buffer, EditorHolder

FOLLOW_TIMEOUT = 10.0  # seconds an editor has to apply an agent's edit
# waits until the files are held with these texts (`service.editor_settled`): whether they were
Settled = Callable[[Mapping[Path, bytes], float], Awaitable[bool]]
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # lines as LSP ends them

_FOLLOWED: ContextVar[list[dict[str, Any]] | None] = ContextVar("editors_followed", default=None)


def collect(followed: list[dict[str, Any]]) -> None:
    """Record into `followed` what became of the edits the current task sends to editors."""
    _FOLLOWED.set(followed)


def collecting() -> list[dict[str, Any]]:
    """Where the current task records them (a new list when it records nowhere)."""
    followed = _FOLLOWED.get()
    return followed if followed is not None else []


@contextmanager
def recorded_into(followed: list[dict[str, Any]]) -> Iterator[None]:
    """Within the block, record into `followed` (another task's call: a server's edit
    during a command runs in the server's task)."""
    token = _FOLLOWED.set(followed)
    try:
        yield
    finally:
        _FOLLOWED.reset(token)


async def follow(
    changes: Sequence[FileChange], buffers: Buffers, settled: Settled | None = None
) -> list[dict[str, Any]]:
    """Send each editor holding a changed file the edit of its files; what became of each
    (`holder`, `files`, `applied`, and `reason` when not applied). With `settled`, wait
    (within `FOLLOW_TIMEOUT`) until the buffers of the editors that applied it hold the new
    text: their didChange may reach the service after their answer, and what is asked
    next (the write's `diagnostics_after`) is about the new text."""
    held: dict[int, tuple[EditorHolder, list[tuple[FileChange, Buffer]]]] = {}
    for change in changes:
        for buffer in buffers.get(change.path, ()):
            held.setdefault(id(buffer.holder), (buffer.holder, []))[1].append((change, buffer))
    outcomes: list[dict[str, Any]] = []
    expected: dict[Path, bytes] = {}
    for holder, items in held.values():
        outcomes.append(outcome := await _follow_one(holder, items))
        if outcome["applied"]:
            expected.update((c.path, c.after) for c, _ in items if c.after is not None)
    if settled is not None and expected:
        await settled(expected, FOLLOW_TIMEOUT)
    followed = _FOLLOWED.get()
    if followed is not None:
        followed.extend(outcomes)
    return outcomes


async def _follow_one(
    holder: EditorHolder, items: list[tuple[FileChange, Buffer]]
) -> dict[str, Any]:
    files = [change.shown for change, _ in items]
    gone = [change.shown for change, _ in items if change.after is None or change.before is None]
    documents = [
        lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                uri=buffer.path.as_uri(), version=buffer.version
            ),
            edits=list(text_edits(change.before.decode("utf-8"), change.after.decode("utf-8"))),
        )
        for change, buffer in items
        if change.before is not None and change.after is not None
    ]
    reason = ""
    applied = False
    if documents:
        label = "codeward: an agent's edit of " + ", ".join(files)
        try:
            with trio.move_on_after(FOLLOW_TIMEOUT) as waited:
                applied = await holder.apply_edit(
                    lsp.WorkspaceEdit(document_changes=documents), label
                )
            if waited.cancelled_caught:
                reason = f"the editor did not answer within {FOLLOW_TIMEOUT:g} s"
            elif not applied:
                reason = "the editor did not apply it"
        except Exception as exc:  # the editor's connection broke: the disk stays written
            reason = f"the edit could not be sent to the editor ({type(exc).__name__})"
    if gone:
        applied = False
        moved = ", ".join(gone)
        reason = f"{moved} moved or deleted on disk; the editor's buffer still names the old file"
    outcome: dict[str, Any] = {"holder": holder.name, "files": files, "applied": applied}
    if not applied:
        outcome["reason"] = reason + "; the disk was written, the editor's buffer did not follow"
    return outcome


def text_edits(before: str, after: str) -> list[lsp.TextEdit]:
    """Line edits turning `before` into `after`: ranges of `before`, positions in UTF-16."""
    old, new = _LINES.findall(before), _LINES.findall(after)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        lsp.TextEdit(
            range=lsp.Range(start=_position(old, i1), end=_position(old, i2)),
            new_text="".join(new[j1:j2]),
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _position(lines: list[str], index: int) -> lsp.Position:
    """The start of line `index` of `lines`, or the end of the text past the last one."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return lsp.Position(line=index, character=0)
    last = lines[-1]
    return lsp.Position(line=index - 1, character=len(last.encode("utf-16-le")) // 2)
