"""A server that reports its diagnosis of each change as a work-done progress (gopls with
`verboseWorkDoneProgress`): a document's pushed diagnostics are what it published last once
every progress of the changes sent before has ended, a new version of it published or not.
A server that never began such a progress is waited for as before. Driven on the freshness
part with a mock clock, as the actor drives it once its barrier is answered (every change
sent before then has its progress begun: the real gopls test holds that order)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import trio
import trio.testing
from lsprotocol import types as lsp

from codeward.daemon.lsp.documents import Document, DocumentStore
from codeward.daemon.lsp.freshness import Freshness
from tests.freshness_support import NEW, OLD, SETTLE, asking, diagnostics, push_only
from tests.lsp_support import fake_config, fake_server, running

PATH = Path("/project/main.go")
URI = PATH.as_uri()
TEXT = b"package main\n\nfunc main() {}\n"


def freshness(title: str = "diagnosing") -> Freshness:
    return push_only("gopls", diagnosis=lambda: title)


def publish(fresh: Freshness, version: int | None, items: list[lsp.Diagnostic]) -> None:
    fresh.on_publish(lsp.PublishDiagnosticsParams(uri=URI, diagnostics=items), version)


def begin(fresh: Freshness, token: str, title: str = "diagnosing changed files") -> None:
    fresh.on_created(token)
    fresh.on_progress(lsp.ProgressParams(token=token, value={"kind": "begin", "title": title}))


def end(fresh: Freshness, token: str) -> None:
    fresh.on_progress(lsp.ProgressParams(token=token, value={"kind": "end"}))


def diagnosed(progress: str, diagnosis: str = "diagnosing") -> tuple[Freshness, Document, Document]:
    """A server (whose diagnosis progresses are titled `diagnosis`) that ran one progress
    titled `progress`, begun and ended, and published OLD for version 1; and version 2 of
    the document, sent since."""
    first, again = versions()
    fresh = freshness(diagnosis)
    begin(fresh, "done", title=progress)
    end(fresh, "done")
    publish(fresh, first.version, OLD)
    return fresh, first, again


def versions() -> tuple[Document, Document]:
    """Version 1 opened, then the same text sent again as version 2."""
    store = DocumentStore(10)
    first, _ = store.sync(PATH, URI, "go", TEXT, 0)
    again, _ = store.sync(PATH, URI, "go", TEXT, 1, force=True)
    return first, again


async def test_the_last_publish_stands_once_every_diagnosis_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A resend gopls does not publish again: its own progress ends, what it published for
    version 1 is the answer for version 2, at once, not after the settle time."""
    first, again = versions()
    fresh = freshness()
    publish(fresh, first.version, OLD)
    assert fresh.needs_barrier(again)
    begin(fresh, "resend")  # begun while it took the change: before the barrier's answer
    start = trio.current_time()
    async with asking(fresh, again) as answers:
        await trio.sleep(1)
        assert not answers  # its diagnosis is still going on
        end(fresh, "resend")
    assert [d.message for d in answers[0]] == ["old"]
    assert trio.current_time() - start < SETTLE
    assert fresh.analysed[URI] == again.version and fresh.ready_for(again)
    # asked again: found done, no barrier needed, answered at once
    assert not fresh.needs_barrier(again)
    begin(fresh, "another file")
    assert [d.message for d in await diagnostics(fresh, again) or []] == ["old"]


async def test_a_later_change_carries_the_diagnosis_of_an_earlier_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The progress of the change asked about ends early (a later change took over, its
    progress begun first): the answer is the later pass's publish, not the earlier one."""
    first, again = versions()
    fresh = freshness()
    publish(fresh, first.version, OLD)
    begin(fresh, "mine")
    async with asking(fresh, again) as answers:
        await trio.sleep(0.5)
        begin(fresh, "later")  # another file's change, sent after the barrier
        end(fresh, "mine")  # cut short by it
        await trio.sleep(0.5)
        assert not answers
        publish(fresh, None, NEW)  # its last pass: every open file, any version
        end(fresh, "later")
    assert [d.message for d in answers[0]] == ["new"]


async def test_an_announced_progress_is_waited_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A progress created and not begun yet may be a diagnosis: it is waited for."""
    fresh, _, again = diagnosed("diagnosing opened files")
    fresh.on_created("next")
    async with asking(fresh, again) as answers:
        await trio.sleep(1)
        assert not answers
        begin(fresh, "next")
        publish(fresh, again.version, NEW)
        end(fresh, "next")
    assert [d.message for d in answers[0]] == ["new"]


async def test_a_server_that_never_began_a_diagnosis_is_waited_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No progress of that title (gopls without its option): the publish of the version is
    awaited, and none coming means no answer (partial), as for any server."""
    fresh, _, again = diagnosed("Setting up workspace")
    start = trio.current_time()
    assert await diagnostics(fresh, again) is None
    assert trio.current_time() - start >= SETTLE
    assert not fresh.diagnoses and URI not in fresh.analysed


async def test_a_server_without_the_title_needs_no_barrier(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fresh, first, again = diagnosed("diagnosing changed files", diagnosis="")
    assert not fresh.diagnoses and not fresh.needs_barrier(again)
    assert [d.message for d in await diagnostics(fresh, first) or []] == ["old"]
    assert await diagnostics(fresh, again) is None  # its own publish is awaited


async def test_a_file_it_never_published_waits_for_its_publish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first, _ = versions()
    fresh = freshness()
    begin(fresh, "open", title="diagnosing opened files")
    async with asking(fresh, first) as answers:
        await trio.sleep(1)
        end(fresh, "open")
        await trio.sleep(2)
        assert not answers  # done, yet nothing for this file: its publish is awaited
        publish(fresh, first.version, NEW)
    assert [d.message for d in answers[0]] == ["new"]


async def test_an_older_version_found_done_does_not_undo_a_newer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first, again = versions()
    fresh = freshness()
    begin(fresh, "open")
    end(fresh, "open")
    publish(fresh, again.version, NEW)
    assert [d.message for d in await diagnostics(fresh, again) or []] == ["new"]
    assert [d.message for d in await diagnostics(fresh, first) or []] == ["new"]
    assert fresh.analysed[URI] == again.version


async def test_a_progress_of_another_kind_is_not_waited_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """gopls keeps a progress open while its workspace fails to load: not its diagnosis."""
    first, again = versions()
    fresh = freshness()
    begin(fresh, "failure", title="Error loading workspace")
    publish(fresh, first.version, OLD)
    begin(fresh, "resend")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(diagnostics, fresh, again)
        await trio.sleep(1)
        assert nursery.child_tasks
        end(fresh, "resend")
    assert fresh.analysed[URI] == again.version and "failure" in fresh.progress


def test_a_new_process_must_show_its_diagnosis_again() -> None:
    fresh = freshness()
    begin(fresh, "open", title="diagnosing opened files")
    assert fresh.diagnoses
    fresh.reset()
    assert not fresh.diagnoses


async def test_through_the_actor_a_change_and_a_resend_are_answered_whole(
    tmp_path: Path,
) -> None:
    """The scripted server writes a change's whole diagnosis before it reads the next
    message: the actor's barrier, sent after the change, is what makes it wait for that
    diagnosis (it would take the file's earlier publish at once), and the other file, sent
    again unchanged and not published again, is answered well within the settle time."""
    server = msgspec.structs.replace(fake_server("diagnosing"), diagnosis_progress="diagnosing")
    config = fake_config({"fake": server}, settle_timeout=60.0)
    edited, other = tmp_path / "a.fake", tmp_path / "b.fake"
    edited.write_text("good\n")
    other.write_text("good\nbad\n")
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(20):
            assert (await manager.diagnostics(edited)).diagnostics == []
            assert len((await manager.diagnostics(other)).diagnostics) == 1
            fake = manager.pool.servers["fake"]
            # the change sent, then its diagnostics asked at once (a preview's text)
            doc, items = await fake.fresh_diagnostics(edited, "fake", b"good\nbad\n", 60.0)
            again = await manager.diagnostics(other)
        assert doc.version == 2 and [d.message for d in items or []] == ["bad line 2"]
        assert [d.message for d in again.diagnostics] == ["bad line 2"] and not again.partial
        assert fake.document(other.as_uri()).same_since  # it was sent again unchanged
