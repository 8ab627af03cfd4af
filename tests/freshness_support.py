"""What the freshness tests share: a push-only server asked for a document's diagnostics
the way the actor asks, in the background while a test plays the server's side."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.freshness import Freshness

SETTLE = 10.0
OLD = [lsp.Diagnostic(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 3)), message="old")]
NEW = [lsp.Diagnostic(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 3)), message="new")]


def push_only(server: str, **options: Any) -> Freshness:
    """The freshness part of `server`, which pushes and never pulls, with one open document;
    `options` are the server's own (`diagnosis=` for gopls)."""
    return Freshness(
        server,
        Changes(),
        pulls=lambda: False,
        on_progress=lambda value: None,
        documents=lambda: 1,
        **options,
    )


async def diagnostics(fresh: Freshness, doc: Document) -> Any:
    """What the actor answers for a server that only pushes (once a barrier sent after
    `doc` is answered, for a server that needs one): its push for `doc`, or None when none
    came within the settle time."""
    with trio.move_on_after(SETTLE):
        return await fresh.pushed(doc)
    return None


@asynccontextmanager
async def asking(fresh: Freshness, doc: Document) -> AsyncIterator[list[Any]]:
    """`diagnostics(fresh, doc)` asked in a task of its own while the block runs; leaving
    the block waits for the answer, which is then the list's one item."""
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await diagnostics(fresh, doc))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        yield answers
