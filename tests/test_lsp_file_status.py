"""A text sent again unchanged, to a server with a file status (clangd): what it published
for that text stands once it is idle and quiet, a rebuild's publish wins, and a server with
no file status is waited for as before. Driven on the freshness part with a mock clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing
from lsprotocol import types as lsp

from codeward.daemon.lsp.documents import DocumentStore
from codeward.daemon.lsp.freshness import FILE_STATUS, QUIET, Freshness
from tests.freshness_support import NEW, OLD, SETTLE, asking, diagnostics, push_only

PATH = Path("/project/one.c")
URI = PATH.as_uri()
TEXT = b"int twice(int x) { return 2 * x; }\n"


def freshness() -> Freshness:
    return push_only("clangd")


def publish(fresh: Freshness, version: int, items: list[lsp.Diagnostic]) -> None:
    fresh.on_publish(lsp.PublishDiagnosticsParams(uri=URI, diagnostics=items), version)


def status(fresh: Freshness, state: str, uri: str = URI) -> None:
    fresh.observe(FILE_STATUS, {"uri": uri, "state": state})


def resent(store: DocumentStore) -> Any:
    """Version 1 opened, then the same text sent again as version 2."""
    store.sync(PATH, URI, "c", TEXT, 0)
    doc, notices = store.sync(PATH, URI, "c", TEXT, 1, force=True)
    assert doc.version == 2 and doc.same_since == 1
    assert [m for m, _ in notices] == ["textDocument/didChange"]
    return doc


def test_only_a_resend_of_the_same_text_is_marked() -> None:
    store = DocumentStore(10)
    first, _ = store.sync(PATH, URI, "c", TEXT, 0)
    assert first.same_since == 0
    again, _ = store.sync(PATH, URI, "c", TEXT, 1, force=True)
    thrice, _ = store.sync(PATH, URI, "c", TEXT, 2, force=True)
    assert (again.same_since, thrice.same_since) == (1, 1)  # the first version with it
    changed, _ = store.sync(PATH, URI, "c", TEXT + b"\n", 3, force=True)
    assert changed.same_since == 0


async def test_idle_and_quiet_after_the_resend_keeps_what_was_published(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fresh, store = freshness(), DocumentStore(10)
    status(fresh, "idle")  # before the resend: says nothing about it
    publish(fresh, 1, OLD)
    doc = resent(store)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(diagnostics, fresh, doc)
        await trio.sleep(1)
        assert nursery.child_tasks  # a status from before the resend is not taken for it
        status(fresh, "file is queued")
        status(fresh, "idle")
    assert trio.current_time() - start < 1 + 2 * QUIET
    result = await diagnostics(fresh, doc)  # asked again: idle, quiet
    assert [d.message for d in result or []] == ["old"]


async def test_a_rebuild_after_idle_is_waited_for(autojump_clock: trio.testing.MockClock) -> None:
    fresh, store = freshness(), DocumentStore(10)
    status(fresh, "idle")
    publish(fresh, 1, OLD)
    doc = resent(store)
    async with asking(fresh, doc) as answers:
        await trio.sleep(0.5)
        status(fresh, "idle")  # the update taken, what it includes not yet checked
        await trio.sleep(QUIET / 3)
        status(fresh, "parsing includes")  # a header changed: it rebuilds
        await trio.sleep(2)
        assert not answers
        publish(fresh, 2, NEW)
    assert [d.message for d in answers[0]] == ["new"]


async def test_without_file_status_the_publish_is_awaited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fresh, store = freshness(), DocumentStore(10)
    publish(fresh, 1, OLD)
    doc = resent(store)
    start = trio.current_time()
    assert await diagnostics(fresh, doc) is None  # partial, as before
    assert trio.current_time() - start >= SETTLE


async def test_another_documents_status_does_not_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fresh, store = freshness(), DocumentStore(10)
    publish(fresh, 1, OLD)
    doc = resent(store)
    other = Path("/project/two.c").as_uri()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(diagnostics, fresh, doc)
        await trio.sleep(0)
        status(fresh, "idle", uri=other)
        await trio.sleep(3)
        assert nursery.child_tasks
        publish(fresh, 2, NEW)
    fresh.forget(URI)
    assert URI not in fresh.status and other in fresh.status


async def test_no_publish_for_the_text_means_no_shortcut(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fresh, store = freshness(), DocumentStore(10)
    status(fresh, "idle")
    doc = resent(store)  # version 1 was never published
    async with trio.open_nursery() as nursery:
        nursery.start_soon(diagnostics, fresh, doc)
        await trio.sleep(0)
        status(fresh, "idle")
        await trio.sleep(3)
        assert nursery.child_tasks
        publish(fresh, 2, NEW)
    fresh.reset()
    assert not fresh.status
