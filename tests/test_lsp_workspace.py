"""Streamed workspace diagnostic pulls (as basedpyright streams them), with the fake server:
when a pull is over does not depend on how fast the messages come."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from codeward.daemon.config import LanguageConfig, ServerConfig
from codeward.daemon.lsp import freshness
from codeward.daemon.lsp.freshness import BARRIER
from codeward.daemon.lsp.service import Found, LanguageService
from codeward.daemon.lsp.watched_tree import CHANGED, DELETED
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import FAKE, fake_config, fake_server, logged, methods, running


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    (root / "sub").mkdir(parents=True)
    (root / "a.fake").write_text("bad\n")
    (root / "clean.fake").write_text("good\n")
    (root / "sub" / "b.fake").write_text("good\nbad\n")
    return root


def lines(found: list[Found]) -> set[tuple[str, int]]:
    return {(f.file, f.line) for f in found}


async def pull(manager: LanguageService) -> set[tuple[str, int]]:
    with trio.fail_after(10):
        answer = await manager.workspace_diagnostics()
    assert answer.errors == []
    return lines(answer.diagnostics)


async def test_a_pull_in_two_rounds_waits_for_the_second(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No quiet moment at all: a rule that waits for one would stop at the first report.
    monkeypatch.setattr(freshness, "QUIET", 0)
    log = tmp_path / "log"
    config = fake_config({"fake": fake_server("workspace-stream", log)})
    async with running(root, config) as (manager, _):
        # The first round reports sub/b.fake as clean (not checked yet); the second, after
        # the progress token was acknowledged, has its error.
        assert await pull(manager) == {("a.fake", 1), ("sub/b.fake", 2)}
        # Nothing changed: the complete pull stands, and no other is sent.
        assert await pull(manager) == {("a.fake", 1), ("sub/b.fake", 2)}
        # Later pulls come in one round, without progress: every file is reported at once.
        (root / "clean.fake").write_text("bad\n")
        manager.files_changed([Path("clean.fake")])
        assert await pull(manager) == {("a.fake", 1), ("sub/b.fake", 2), ("clean.fake", 1)}
        assert manager.pool.servers["fake"]._freshness.announced == set()
    assert methods(log).count("workspace/diagnostic") == 2


async def test_no_quiet_moment_before_the_second_round_ends_the_pull(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server stalls after the first round, however long: the pull waits for the second.
    monkeypatch.setattr(freshness, "QUIET", 0)
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    command = [sys.executable, FAKE, "workspace-hold", "", str(fifo)]
    config = fake_config({"fake": ServerConfig(command=command)})
    async with running(root, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        answers: list[set[tuple[str, int]]] = []

        async def one() -> None:
            answers.append(await pull(manager))

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one)
                # The progress token comes in one piece with the first round's reports.
                await server.wait_for(lambda: bool(server._freshness.announced), 10)
                await trio.testing.wait_all_tasks_blocked()
                assert answers == []  # still waiting, although nothing came for a while
                await trio.to_thread.run_sync(release, fifo, abandon_on_cancel=True)
        assert answers == [{("a.fake", 1), ("sub/b.fake", 2)}]


async def test_reports_of_a_round_under_progress_are_not_final(root: Path, tmp_path: Path) -> None:
    """A pull cut short after the first round: its reports are in the results, but none is
    final (reported under the progress, as basedpyright reports files not checked yet)."""
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    command = [sys.executable, FAKE, "workspace-hold", "", str(fifo)]
    config = fake_config({"fake": ServerConfig(command=command)})
    async with running(root, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        final: set[str] = set()
        expected = [root / "a.fake", root / "sub" / "b.fake"]
        with trio.fail_after(10):
            results, complete = await server.workspace_diagnostics(1.0, expected, final)
        assert not complete and (root / "sub" / "b.fake").as_uri() in results
        assert final == set()


def release(fifo: Path) -> None:
    with fifo.open("wb") as f:
        f.write(b"x")


async def test_a_file_it_never_reports_ends_the_pull_after_a_round_trip(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freshness, "QUIET", 0)
    (root / "skip.fake").write_text("bad\n")  # the fake server never reports skip* files
    log = tmp_path / "log"
    config = fake_config({"fake": fake_server("workspace-stream", log)})
    async with running(root, config) as (manager, _):
        assert await pull(manager) == {("a.fake", 1), ("sub/b.fake", 2)}
        server = manager.pool.servers["fake"]
        with trio.fail_after(10):
            results, complete = await server.workspace_diagnostics(5.0, [root / "skip.fake"])
        assert complete and len(results) == 3
    barriers = [m for m in logged(log) if m.get("method") == BARRIER]
    assert len(barriers) >= 2 and all("id" in m for m in barriers)


async def test_a_progress_token_it_never_begins_is_forgotten(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freshness, "QUIET", 0)
    config = fake_config({"fake": fake_server("workspace-stale-token")})
    async with running(root, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        with trio.fail_after(10):
            await server.wait_for(lambda: bool(server._freshness.announced), 10)
        assert await pull(manager) == {("a.fake", 1), ("sub/b.fake", 2)}
        assert server._freshness.announced == set() and server._freshness.progress == {}


async def test_pulls_take_turns(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake server, like basedpyright, answers a pull in flight with no items when the
    # next one comes: two at once would lose the first one's results.
    monkeypatch.setattr(freshness, "QUIET", 0)
    config = fake_config({"fake": fake_server("workspace-stream")})
    async with running(root, config) as (manager, _):
        answers: list[set[tuple[str, int]]] = []

        async def one() -> None:
            answers.append(await pull(manager))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
    assert answers == [{("a.fake", 1), ("sub/b.fake", 2)}] * 3


async def test_the_overall_timeout_still_bounds_a_pull(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file that is never reported, and no quiet moment within the timeout.
    monkeypatch.setattr(freshness, "QUIET", 60)
    (root / "skip.fake").write_text("bad\n")
    config = fake_config({"fake": fake_server("workspace-stream")})
    async with running(root, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        expected = [root / "a.fake", root / "skip.fake"]
        with trio.fail_after(10):
            results, complete = await server.workspace_diagnostics(0.5, expected)
        assert not complete and (root / "a.fake").as_uri() in results


def test_project_files_skip_ignored_folders_and_say_when_cut_short(root: Path) -> None:
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.fake").write_text("bad\n")
    (root / "notes.txt").write_text("not a source file\n")
    manager = LanguageService(root, fake_config({"fake": fake_server("ok")}), lambda _: None)
    files, whole = manager.project_files()
    assert whole and sorted(files["fake"]) == sorted(
        [root / "a.fake", root / "clean.fake", root / "sub" / "b.fake"]
    )
    _, whole = manager.project_files(limit=1)
    assert not whole


async def test_the_project_walk_serves_until_a_file_comes_or_goes(root: Path) -> None:
    """While the watcher runs, a tool asking for the project's files does not walk it
    again until a file is created or deleted (a change of content keeps the listing)."""
    config = fake_config({"fake": fake_server("ok")})
    async with running(root, config, watch=True) as (manager, _):
        first = manager.project_files()
        assert manager.project_files() is first
        manager.events.on_watch([(root / "a.fake", CHANGED)])
        assert manager.project_files() is first
        (root / "new.fake").write_text("good\n")
        manager.files_changed([root / "new.fake"])
        files, whole = manager.project_files()
        assert whole and root / "new.fake" in files["fake"]
        (root / "new.fake").unlink()
        manager.events.on_watch([(root / "new.fake", DELETED)])
        assert root / "new.fake" not in manager.project_files()[0]["fake"]
    async with running(root, config) as (manager, _):  # no watcher: every ask walks
        assert manager.project_files() is not manager.project_files()


async def test_a_listing_the_last_walk_serves_takes_no_thread(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`listing()` (an editor's `initialize` waits on it) walks in a worker thread; while
    the last walk serves, it answers with no hop to a thread."""
    config = fake_config({"fake": fake_server("ok")})
    async with running(root, config, watch=True) as (manager, _):
        walks: list[object] = []
        in_thread = trio.to_thread.run_sync

        async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if fn == manager.project_files:
                walks.append(fn)
            return await in_thread(fn, *args, **kwargs)

        monkeypatch.setattr(trio.to_thread, "run_sync", counted)
        first = await manager.listing()
        walks.clear()
        assert await manager.listing() is first
        assert walks == []
        (root / "new.fake").write_text("good\n")
        manager.files_changed([root / "new.fake"])
        files, whole = await manager.listing()
        assert whole and root / "new.fake" in files["fake"]
        assert len(walks) == 1  # the walk, off the event loop


async def test_codewards_own_config_is_no_toml_source(root: Path, tmp_path: Path) -> None:
    """With TOML configured, the project's `.codeward.toml` is codeward's, not a TOML source:
    no language routes it, walks skip it, and a workspace query does not start TOML's server."""
    (root / ".codeward.toml").write_text('[policy]\ngit_write = "deny"\n')
    (root / "sub" / ".codeward.toml").write_text("")
    log = tmp_path / "toml.log"
    base = fake_config({"fake": fake_server("ok"), "toml": fake_server("ok", log)})
    toml = LanguageConfig(patterns=["*.toml"], servers=["toml"], language_id="toml")
    fake = LanguageConfig(patterns=["*.fake"], servers=["fake"], language_id="fake")
    config = msgspec.structs.replace(base, languages={"toml": toml, "fake": fake})
    async with running(root, config) as (manager, _):
        assert manager.language_or_none(root / ".codeward.toml") is None
        assert manager.language_or_none(root / "pyproject.toml") == "toml"
        files, _ = manager.project_files()
        assert sorted(files) == ["fake"] and manager.project_languages() == ["fake"]
        with trio.fail_after(10):
            await manager.workspace_diagnostics()
        with pytest.raises(ToolError) as info:
            await manager.request(root / ".codeward.toml", "textDocument/hover", lambda d: {})
        assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE
        manager.files_changed([root / ".codeward.toml"])
        await manager.flush()
        assert list(manager.pool.servers) == ["fake"] and not log.exists()


async def test_a_server_of_open_files_is_asked_about_each_within_a_budget(
    root: Path, tmp_path: Path
) -> None:
    """The `ok` fake publishes only for documents it has open, and offers no pull."""
    (root / "sub" / "c.fake").write_text("bad\nbad\n")
    log = tmp_path / "log"
    config = fake_config({"fake": fake_server("ok", log)}, folder_diagnostics_files=2)
    async with running(root, config) as (manager, _):
        with trio.fail_after(20):
            folder = await manager.workspace_diagnostics(folder=root / "sub")
        assert lines(folder.diagnostics) == {
            ("sub/b.fake", 2),
            ("sub/c.fake", 1),
            ("sub/c.fake", 2),
        }
        assert not folder.partial and folder.unchecked == 0
        assert [(s.files_checked, s.files_total, s.complete) for s in folder.servers] == [
            (2, 2, True)
        ]
        with trio.fail_after(20):
            whole = await manager.workspace_diagnostics()  # four files, a budget of two
        # the folder's two files stand (nothing changed since): the other two are asked
        assert not whole.partial and whole.unchecked == 0
        assert [(s.name, s.files_checked, s.files_total) for s in whole.servers] == [("fake", 4, 4)]
        assert lines(whole.diagnostics) == {
            ("a.fake", 1), ("sub/b.fake", 2), ("sub/c.fake", 1), ("sub/c.fake", 2)
        }  # fmt: skip
    opened = [m["params"]["textDocument"]["uri"] for m in logged(log)
              if m.get("method") == "textDocument/didOpen"]  # fmt: skip
    names = sorted(uri.rsplit("/", 1)[1] for uri in opened)
    assert names == ["a.fake", "b.fake", "c.fake", "clean.fake"]


async def test_a_server_failing_during_a_batch_leaves_the_others_answer(root: Path) -> None:
    """`failing-pull` fails every file's pull: its batch ends with its error, the folder's
    answer keeps the other server's diagnostics (before: the batch's several failures
    failed the whole call)."""
    config = fake_config({"ok": fake_server("ok"), "failing": fake_server("failing-pull")})
    async with running(root, config) as (manager, _):
        with trio.fail_after(20):
            answer = await manager.workspace_diagnostics()
        assert lines(answer.diagnostics) == {("a.fake", 1), ("sub/b.fake", 2)}
        assert [e.details.get("server") for e in answer.errors] == ["failing"]
        assert "analysis crashed" in answer.errors[0].message and answer.partial
        shown = {s.name: (s.files_checked, s.files_total, s.complete, s.stopped)
                 for s in answer.servers}  # fmt: skip
        assert shown == {"ok": (3, 3, True, None), "failing": (0, 3, False, "failed")}
        assert manager.pool.servers["failing"].open_documents() == ()


async def test_a_server_reporting_progress_is_not_restarted_for_cancelled_pulls(
    root: Path, tmp_path: Path
) -> None:
    """`workspace-busy` is still analysing (its progress begun, never ended) and answers no
    file's pull: the folder's batch gives up on them at the call's deadline (cancelled,
    unanswered), and the server is left to its work past `lsp.cancel_grace` (basedpyright
    on sympy was restarted for it, losing its analysis); the answer says those files were
    not checked. (The workspace pull's settle timeout counts against the call's 1.5 s: the
    batch has the rest.)"""
    log = tmp_path / "log"
    config = fake_config(
        {"fake": fake_server("workspace-busy", log)},
        settle_timeout=0.5, cancel_grace=0.2, check_interval=0.05,
        folder_diagnostics_seconds=1.5,
    )  # fmt: skip
    async with running(root, config) as (manager, _):
        await manager.pool.started("fake")
        with trio.fail_after(20):
            answer = await manager.workspace_diagnostics()
        [fake] = answer.servers
        assert (fake.files_checked, fake.files_total, fake.complete) == (1, 3, False)
        assert answer.partial and lines(answer.diagnostics) == {("a.fake", 1)}
        server = manager.pool.servers["fake"]
        await trio.sleep(1.0)  # a window five times `cancel_grace`, not a wait for an event
        assert server.restarts == 0 and server.pid is not None and answer.errors == []
        assert server.open_documents() == ()
    cancelled = [m for m in logged(log) if m.get("method") == "$/cancelRequest"]
    assert cancelled  # its pulls were given up on, and left unanswered


async def test_a_preview_goes_before_the_batch_under_way_which_goes_on_after(
    root: Path, tmp_path: Path
) -> None:
    """A folder's batch waits for `mute.fake` (the `ok` fake never publishes a text that
    begins with "mute") until the call's deadline, 30 s away; a preview (a safe edit's)
    meanwhile stops the batch and has the servers at once (the file under way has
    `settle_timeout` more, then is cancelled), and the batch takes up after it the file it
    had no answer for, now answerable on disk: the call ends complete, with the disk's
    diagnostics, not the preview's."""
    (root / "mute.fake").write_text("mute\n")
    log = tmp_path / "log"
    config = fake_config(
        {"fake": fake_server("ok", log)}, settle_timeout=1.0, folder_diagnostics_seconds=30.0
    )
    async with running(root, config) as (manager, _), trio.open_nursery() as nursery:
        answers = []
        ended = trio.Event()

        async def whole() -> None:
            answers.append(await manager.workspace_diagnostics())
            ended.set()

        nursery.start_soon(whole)
        server = await manager.pool.started("fake")
        answered = [(root / name).as_uri() for name in ("a.fake", "clean.fake", "sub/b.fake")]
        mute = (root / "mute.fake").as_uri()

        def under_way() -> bool:  # every file answered but the mute one, which is open
            return all(u in server.published for u in answered) and bool(server.document(mute))

        with trio.fail_after(10):
            assert await server.wait_for(under_way, 10)
            async with manager.previewing() as previewer:
                async with previewer.show(root / "a.fake", b"bad\nbad\n"):
                    shown = await manager.diagnostics(root / "a.fake")
                (root / "mute.fake").write_text("bad\n")  # answerable when asked again
        assert [d.line for d in shown.diagnostics] == [1, 2] and not shown.partial
        assert not ended.is_set()  # the preview went before the call's end
        with trio.fail_after(20):
            await ended.wait()  # once the batch asked mute.fake again
    [answer] = answers
    assert not answer.partial and answer.errors == []
    assert [(s.files_checked, s.files_total, s.complete) for s in answer.servers] == [(4, 4, True)]
    assert lines(answer.diagnostics) == {("a.fake", 1), ("mute.fake", 1), ("sub/b.fake", 2)}
    opened = [m["params"]["textDocument"]["uri"] for m in logged(log)
              if m.get("method") == "textDocument/didOpen"]  # fmt: skip
    assert opened.count(mute) == 2  # asked, left for the preview, asked again


async def test_the_file_under_way_at_the_deadline_is_answered_the_others_cancelled(
    root: Path, tmp_path: Path
) -> None:
    """`slow-pull` checks one file at a time, 1.5 s each. The call's first batch runs
    until one settle timeout (2 s): the first file pulled is answered at 1.5 s, the second
    is under way at the cut and has a settle timeout more (answered at 3 s: a type checker
    cancelled in the middle of a file loses what it inferred), the third, waiting its
    turn, is cancelled (it loses nothing) and left for the next call. Each answer is
    reported as progress (a second or more after the last report), not only the batch's
    end."""
    log = tmp_path / "log"
    config = fake_config(
        {"fake": fake_server("slow-pull", log)},
        settle_timeout=2.0, folder_diagnostics_seconds=0.1,
    )  # fmt: skip
    async with running(root, config) as (manager, progress):
        with trio.fail_after(20):
            answer = await manager.workspace_diagnostics()
    [fake] = answer.servers
    assert (fake.files_checked, fake.files_total, fake.stopped) == (2, 3, "time")
    reports = [(p["kind"], p["message"]) for p in progress if p["title"] == "project diagnostics"]
    assert reports[:2] == [("begin", "0 of 3 files"), ("report", "1 of 3 files")]
    assert reports[-1] == ("end", "2 of 3 files")
    pulls = {m["id"]: m["params"]["textDocument"]["uri"] for m in logged(log)
             if m.get("method") == "textDocument/diagnostic"}  # fmt: skip
    first, second, third = [uri.removeprefix(root.as_uri() + "/") for uri in pulls.values()]
    errors = {"a.fake": {("a.fake", 1)}, "clean.fake": set(), "sub/b.fake": {("sub/b.fake", 2)}}
    assert lines(answer.diagnostics) == errors[first] | errors[second] and answer.partial
    cancelled = [pulls[m["params"]["id"]] for m in logged(log)
                 if m.get("method") == "$/cancelRequest"]  # fmt: skip
    assert cancelled == [(root / third).as_uri()]


async def test_a_servers_endless_progress_counts_against_the_calls_time(
    root: Path, tmp_path: Path
) -> None:
    """`slow-pull-busy` began a work-done progress it never ends (basedpyright on sympy held
    a call 20 s past its time so: 40.6 s) and checks one pull at a time, 1.5 s each. With
    `lsp.ready_timeout` at 60 s the wait for its progress still counts against the call's
    time: the first batch runs until one settle timeout (1 s) from the call's start, the
    file under way has one more (answered at 1.5 s), the two waiting their turn are
    cancelled, and the server answers them at once, unchecked: nothing is left for it to
    check after the answer (a pull asked after it is the next file it checks)."""
    log = tmp_path / "log"
    config = fake_config(
        {"fake": fake_server("slow-pull-busy", log)},
        settle_timeout=1.0, folder_diagnostics_seconds=0.5, ready_timeout=60.0,
    )  # fmt: skip
    async with running(root, config) as (manager, _):
        server = await manager.pool.started("fake")
        with trio.fail_after(10):
            assert await server.wait_for(lambda: not server.ready, 10)  # its progress began
        begun = trio.current_time()
        with trio.fail_after(10):
            answer = await manager.workspace_diagnostics()
        took = trio.current_time() - begun
        # its bound: 1 s and a settle timeout more (with a margin for a loaded machine)
        assert took < 2.0 + 2.0
        [fake] = answer.servers
        assert (fake.files_checked, fake.files_total, fake.stopped) == (1, 3, "time")
        assert server.open_documents() == ()
        with trio.fail_after(10):  # a pull taken after what the call left in its queue
            params = {"textDocument": {"uri": (root / "a.fake").as_uri()}}
            await server.request("textDocument/diagnostic", params, timeout=10)
    entries = logged(log)
    pulls = [m["id"] for m in entries if m.get("method") == "textDocument/diagnostic"]
    cancelled = {m["params"]["id"] for m in entries if m.get("method") == "$/cancelRequest"}
    checked = {m["answered"]: m["checked"] for m in entries if "answered" in m}
    assert len(pulls) == 4 and len(cancelled & set(pulls[:3])) == 2
    assert [checked[i] for i in pulls] == [True, False, False, True]


async def test_the_files_asked_first_reach_the_server_before_the_others(
    root: Path, tmp_path: Path
) -> None:
    """An edit's files are asked first: `slow-pull` checks one pull at a time (1.5 s each),
    so the edited file, asked after the others, would wait for them past its settle timeout
    (2 s; on sympy an edited file behind eight open documents it had to check again was
    refused as partial after 20 s). It is pulled first and answered in time; the others
    are pulled one after another (basedpyright checks a pull it had begun even when it is
    cancelled: eight at once left it seconds of work) while they have as long as it took,
    then are silent for themselves."""
    log = tmp_path / "log"
    config = fake_config({"fake": fake_server("slow-pull", log)}, settle_timeout=2.0)
    edited = root / "sub" / "b.fake"
    paths = [root / "a.fake", root / "clean.fake", edited]
    async with running(root, config) as (manager, _):
        with trio.fail_after(20):
            answers = await manager.files_diagnostics(paths, [edited])
    answer = answers[edited]
    assert not isinstance(answer, ToolError) and not answer.partial
    assert [d.line for d in answer.diagnostics] == [2]
    last = answers[root / "clean.fake"]  # third in line: 4.5 s, past the 1.5 s it had
    assert not isinstance(last, ToolError) and last.silent == ["fake"]
    entries = logged(log)
    pulls = [m for m in entries if m.get("method") == "textDocument/diagnostic"]
    assert pulls[0]["params"]["textDocument"]["uri"] == edited.as_uri()
    outstanding: set[int] = set()  # pulls sent, neither answered nor cancelled yet
    for m in entries:
        if m.get("method") == "textDocument/diagnostic":
            assert not outstanding  # one after another
            outstanding.add(m["id"])
        elif m.get("method") == "$/cancelRequest":
            outstanding.discard(m["params"]["id"])
        elif "answered" in m:
            outstanding.discard(m["answered"])
