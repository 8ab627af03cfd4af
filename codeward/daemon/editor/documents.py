"""The editor's document notifications told to the servers, in the order they came.

The dialect applies each `didOpen`/`didChange`/`didSave`/`didClose` to its buffers at once
(so the positions of the next request are read on the right text) and queues the buffer's
whole text here; one task hands the queue to the root's `LanguageService` overlay
(`editor_open`, `editor_change`, `editor_save`, `editor_close`), a run of changes of one
file as its last text only. A request about a document waits until what came before it
was handed over (`settled`), so it is answered on the text the editor had when it asked.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from codeward.daemon.editor.workspace import Root, Workspace

if TYPE_CHECKING:
    from codeward.daemon.lsp.overlay import EditorHolder

log = logging.getLogger(__name__)
Kind = Literal["open", "change", "save", "close", "work"]


@dataclass
class Op:
    kind: Kind
    uri: str
    root: Root | None
    path: Path
    text: str = ""
    version: int = 0
    number: int = 0
    work: Callable[[], Awaitable[None]] | None = None  # kind "work": run in its turn


class Documents:
    """The queue of one editor's document changes and the task that hands them over."""

    def __init__(
        self, workspace: Workspace, holder: EditorHolder, done: Callable[[str], None]
    ) -> None:
        self.workspace = workspace
        self.holder = holder
        self.done = done  # a URI's change reached the servers (its diagnostics are due)
        self._queue: deque[Op] = deque()
        self._queued = 0  # numbers given so far
        self._handed = 0  # the number of the last op handed over
        self._changed = trio.Event()  # an op queued or handed over
        self._stopped = False  # the task ended: nothing more is handed over

    def put(self, kind: Kind, uri: str, root: Root, path: Path, text: str = "",
            version: int = 0) -> None:  # fmt: skip
        self._queued += 1
        self._queue.append(Op(kind, uri, root, path, text, version, self._queued))
        self._wake()

    def put_work(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work` in its turn among the changes (the editor's folders changing)."""
        self._queued += 1
        self._queue.append(Op("work", "", None, Path(), number=self._queued, work=work))
        self._wake()

    @property
    def is_settled(self) -> bool:
        """Whether every op queued so far was handed over (`settled` would not wait)."""
        return self._handed >= self._queued or self._stopped

    async def settled(self) -> None:
        """Wait until every op queued so far was handed over."""
        wanted = self._queued
        while self._handed < wanted and not self._stopped:
            await self._wait()

    async def run(self) -> None:
        """Hand the queue over, in order, until cancelled (its owner: the dialect's
        background scope)."""
        try:
            while True:
                while not self._queue:
                    await self._wait()
                op = self._queue.popleft()
                while op.kind == "change" and self._queue and _same_change(op, self._queue[0]):
                    op = self._queue.popleft()  # only the last text of a run of changes counts
                try:
                    await self._hand(op)
                except Exception:  # (its session failed to reopen, a bug: the next goes on)
                    log.exception("an editor's %s of %s", op.kind, op.uri)
                self._handed = op.number
                self._wake()
                if op.kind not in ("close", "work"):
                    self.done(op.uri)
        finally:
            self._stopped = True
            self._wake()

    async def _hand(self, op: Op) -> None:
        if op.root is None:  # (work)
            if op.work is not None:
                await op.work()
            return
        service = (await self.workspace.session(op.root)).lsp
        if op.kind == "open":
            await service.editor_open(self.holder, op.path, op.text, op.version)
        elif op.kind == "change":
            await service.editor_change(self.holder, op.path, op.text, op.version)
        elif op.kind == "save":
            await service.editor_save(self.holder, op.path)
        else:
            await service.editor_close(self.holder, op.path)

    async def release(self) -> None:
        """The editor is gone: every session forgets its buffers (shielded by the caller)."""
        self._queue.clear()
        for root in self.workspace.roots:
            await root.session.lsp.editor_release(self.holder)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _wait(self) -> None:
        await self._changed.wait()


def _same_change(op: Op, following: Op) -> bool:
    return following.kind == "change" and following.uri == op.uri
