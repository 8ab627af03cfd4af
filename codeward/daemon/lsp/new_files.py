"""Files created or deleted, and the servers that take them in only after a quiet moment.

basedpyright adds the files created since its start to its program (and drops the deleted
ones) only once it has heard nothing it counts as the user typing for 250 ms (a change, an
outline, a definition asked): a question about the whole project asked before that, as a
review asks the references of a renamed function right after its outlines, misses the
callers in the new files. For a server whose entry sets `quiet_after_new_files`, such a
question (`CROSS_FILE`) waits, after files were created or deleted, until the server has
been sent nothing for that long, at most `LIMIT` seconds after the change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import trio

from codeward.daemon.lsp.watched_tree import CREATED, DELETED

CROSS_FILE = frozenset(
    {
        "textDocument/references",
        "textDocument/implementation",
        "textDocument/rename",
        "textDocument/prepareRename",
        "workspace/symbol",
        "callHierarchy/incomingCalls",
        "typeHierarchy/subtypes",
        "workspace/willRenameFiles",
    }
)
LIMIT = 1.0  # seconds after the change a question waits at most


class NewFiles:
    """One server's files created or deleted and not yet taken in (see the module doc)."""

    __slots__ = ("_changed", "_heard", "_quiet")

    def __init__(self, quiet: Callable[[], float]) -> None:
        self._quiet = quiet  # the entry's quiet_after_new_files (0: answers at once)
        self._changed: float | None = None  # when files came or went (not taken in yet)
        self._heard = -math.inf  # when the server was last sent something

    def heard(self) -> None:
        """Something was sent to the server (a change, a request)."""
        self._heard = trio.current_time()

    def changed(self, changes: Sequence[dict[str, Any]]) -> None:
        """didChangeWatchedFiles was sent with `changes` (FileEvent dicts)."""
        if self._quiet() and any(c.get("type") in (CREATED, DELETED) for c in changes):
            self._changed = trio.current_time()

    def waits(self, method: str) -> bool:
        """Whether `method` must wait for `settled` before it is sent."""
        return self._changed is not None and method in CROSS_FILE

    async def settled(self) -> None:
        """Until the server took the new files in (see the module doc)."""
        if self._changed is None:
            return
        limit = self._changed + LIMIT
        while (due := min(self._heard + self._quiet(), limit)) > trio.current_time():
            await trio.sleep_until(due)
        self._changed = None
