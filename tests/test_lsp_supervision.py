"""Supervision of language servers, with the scripted fake server: memory caps, requests a
server never answers, hung (SIGSTOPped) servers, crash loops, the daemon-wide caps, and
missing or failed servers that must not hide behind another server's answer."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from codeward.daemon.config import Config, DaemonConfig, ServerConfig
from codeward.daemon.lsp import server_watch, supervisor
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.process import GroupUsage
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.supervisor import ServerState
from codeward.protocol.errors import ErrorKind, ToolError
from tests.conftest import OpenClient
from tests.lsp_support import FAKE, fake_config, fake_server, running


def hover_params(ctx):  # type: ignore[no-untyped-def]
    return {"textDocument": ctx.text_document, "position": ctx.position(1, 1)}


async def hover(manager: LanguageService, path: Path, **kwargs):  # type: ignore[no-untyped-def]
    return await manager.request(
        path, "textDocument/hover", hover_params, wait_ready=False, **kwargs
    )


def fast(servers: dict[str, ServerConfig], order: list[str] | None = None, **lsp: object) -> Config:
    """A fake config whose supervision checks run every 50 ms."""
    return fake_config(servers, order, check_interval=0.05, shutdown_timeout=0.5, **lsp)


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\nbad line\n")
    return path


def roots(tmp_path: Path, count: int) -> list[Path]:
    found = []
    for i in range(count):
        root = tmp_path / f"root{i}"
        root.mkdir()
        (root / "a.fake").write_text("good\n")
        found.append(root)
    return found


async def restarted(server: LanguageServer, count: int = 1) -> None:
    """Wait until `server` has restarted `count` times and runs again."""
    with trio.fail_after(10):
        await server.wait_for(
            lambda: server.restarts >= count and server.state is ServerState.RUNNING, 10
        )


# -- memory ----------------------------------------------------------------------------------


async def test_a_server_over_its_memory_cap_is_restarted_between_requests(
    tmp_path: Path, doc: Path
) -> None:
    servers = {"fake": msgspec.structs.replace(fake_server("grow"), max_rss_mb=48)}
    async with running(tmp_path, fast(servers)) as (manager, _):
        with trio.fail_after(10):
            answer = await hover(manager, doc)  # answered, then 64 MiB bigger
        assert answer.result["contents"]["value"] == "hover"
        server = manager.pool.servers["fake"]
        first = server.pid
        await restarted(server)
        status = manager.status()[0]
        assert status["state"] == "running" and status["pid"] != first
        assert re.fullmatch(
            r"it used \d+ MB, above its max_rss_mb of 48", status["restart_reason"]
        ), status["restart_reason"]
        with trio.fail_after(10):
            answer = await hover(manager, doc)  # the new process answers
        assert answer.result["contents"]["value"] == "hover"


async def test_a_request_in_flight_on_a_server_over_its_cap_gets_a_clear_error(
    tmp_path: Path, doc: Path
) -> None:
    servers = {"fake": msgspec.structs.replace(fake_server("grow-silent"), max_rss_mb=48)}
    config = fast(servers, request_timeout=0.3, method_timeouts={"textDocument/hover": 30.0})
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10), pytest.raises(ToolError) as info:
            await hover(manager, doc)  # grows and never answers: restarted after 0.3 s
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert "max_rss_mb of 48" in info.value.message and "retry" in info.value.message
        await restarted(manager.pool.servers["fake"])


async def test_the_default_caps_come_from_the_server_or_the_lsp_section(tmp_path: Path) -> None:
    config = fast({"fake": fake_server("ok")}, max_rss_mb=4)  # below any python process
    async with running(tmp_path, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        await restarted(server)
        assert "above its max_rss_mb of 4" in server.status()["restart_reason"]


async def test_a_server_near_its_cap_closes_the_documents_opened_for_the_daemon(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rss = {"mb": 10}  # what the server's process group uses, as the supervisor reads it
    monkeypatch.setattr(
        server_watch,
        "group_usage",
        lambda pid, age: GroupUsage(rss["mb"] * 1024 * 1024, 0.0, time.monotonic()),
    )
    own = [tmp_path / f"f{i}.fake" for i in range(3)]
    for path in own:
        path.write_text("bad\n")
    servers = {"fake": msgspec.structs.replace(fake_server("ok"), max_rss_mb=100)}
    async with running(tmp_path, fast(servers)) as (manager, _):
        with trio.fail_after(10):
            await hover(manager, doc)  # a client's request: its document stays
        server = manager.pool.servers["fake"]
        for path in own:  # opened for the daemon's own purposes (as a folder's diagnostics)
            server.sync(path, "fake", path.read_bytes(), own=True)
        server.sync(own[0], "fake", own[0].read_bytes())  # then used by a request: kept
        assert len(server.open_documents()) == 4
        rss["mb"] = 85  # past 80% of its cap, below the cap
        assert await server.wait_for(lambda: len(server.open_documents()) == 2, 10)
        assert {d.path for d in server.open_documents()} == {doc, own[0]}
        assert server.restarts == 0 and server.status()["state"] == "running"
        # over its cap: restarted, with only the documents in use to reopen
        rss["mb"] = 120
        await restarted(server)
        assert {d.path for d in server.open_documents()} == {doc, own[0]}


async def test_the_watches_of_several_servers_share_walks_of_proc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four servers checked every 0.4 s: their watches read their groups from walks of /proc
    at least 0.2 s apart (half the interval), not from a walk each."""
    config = fake_config({"fake": fake_server("ok")}, check_interval=0.4)
    walks: list[float] = []
    checked: list[int] = []
    listdir, usage = os.listdir, server_watch.group_usage

    def walk(path: str) -> list[str]:
        if path == "/proc":
            walks.append(time.monotonic())
        return listdir(path)

    def check(pgid: int, max_age: float) -> GroupUsage:
        checked.append(pgid)
        return usage(pgid, max_age)

    async with contextlib.AsyncExitStack() as stack:
        pids = set()
        for root in roots(tmp_path, 4):
            manager, _ = await stack.enter_async_context(running(root, config))
            server = manager.pool.server_for("fake")
            await server.connection()
            pids.add(server.pid)
        monkeypatch.setattr(os, "listdir", walk)
        monkeypatch.setattr(server_watch, "group_usage", check)
        started = time.monotonic()
        await trio.sleep(2.0)  # a window of five checks of each, not a wait for an event
        took = time.monotonic() - started
        monkeypatch.undo()
    assert all(checked.count(pid) >= 2 for pid in pids)
    # a walk at most every half interval (0.2 s), however many servers: fewer than checks
    assert 0 < len(walks) <= took / 0.2 + 1 and len(walks) < len(checked)


# -- requests never answered, hung servers -----------------------------------------------------


async def test_a_server_that_ignores_cancel_is_restarted(tmp_path: Path, doc: Path) -> None:
    config = fast(
        {"fake": fake_server("silent-hover")},
        method_timeouts={"textDocument/hover": 0.2},
        cancel_grace=1.0,
    )
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.TIMEOUT
        # Told to cancel, it does not answer: unresponsive, then restarted.
        assert manager.status()[0]["state"] == "unresponsive"
        server = manager.pool.servers["fake"]
        await restarted(server)
        assert server.status()["restart_reason"].startswith(
            "it left a cancelled textDocument/hover unanswered for"
        )
        found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
        assert manager.status()[0]["state"] == "running"


async def test_a_server_working_on_a_cancelled_request_is_not_restarted(
    tmp_path: Path, doc: Path
) -> None:
    """`spin-hover` spends 2 s of CPU on a hover it never answers: told to cancel, it owes
    an answer past `lsp.cancel_grace`, but it is working (basedpyright on a large project),
    so it is left to it; once idle and still silent, it is restarted."""
    config = fast(
        {"fake": fake_server("spin-hover")},
        method_timeouts={"textDocument/hover": 0.1},
        cancel_grace=0.2,
    )
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError):
            await hover(manager, doc)
        spinning = trio.current_time()
        server = manager.pool.servers["fake"]
        await trio.sleep(0.8)  # a window four times `cancel_grace`, within its 2 s of CPU
        assert server.restarts == 0 and manager.status()[0]["state"] == "unresponsive"
        await restarted(server)  # idle after its 2 s, still silent: hung, so restarted
        assert trio.current_time() - spinning >= 1.0
        assert server.status()["restart_reason"].startswith(
            "it left a cancelled textDocument/hover unanswered for"
        )


async def test_a_working_server_is_judged_over_windows_not_single_checks(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc counts CPU in ticks: over one short check a server working on a loaded machine
    can show none. Here its CPU reading moves only every `WORK_WINDOW` seconds (0.1 s of CPU
    each time, a fifth of a core): checked every 0.05 s, the silent server that owes a
    cancelled hover is working by every window, so it is not restarted; once the reading
    stops moving it is idle, and restarted."""
    config = fast(
        {"fake": fake_server("silent-hover")},
        method_timeouts={"textDocument/hover": 0.1},
        cancel_grace=0.2,
    )
    usage = server_watch.group_usage
    began = time.monotonic()
    stopped: list[float] = []  # when the scripted work stops

    def scripted(pgid: int, max_age: float) -> GroupUsage:
        real = usage(pgid, max_age)
        until = stopped[0] if stopped else real.taken
        steps = (until - began) // server_watch.WORK_WINDOW
        return GroupUsage(real.rss, 0.1 * steps, real.taken)

    monkeypatch.setattr(server_watch, "group_usage", scripted)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError):
            await hover(manager, doc)
        server = manager.pool.servers["fake"]
        # twenty checks, two windows; well within ten graces (HUNG_AFTER), even under load
        await trio.sleep(1.0)
        assert server.restarts == 0 and manager.status()[0]["state"] == "unresponsive"
        stopped.append(time.monotonic())
        await restarted(server)  # no work any more, still silent: hung, so restarted
        assert server.status()["restart_reason"].startswith(
            "it left a cancelled textDocument/hover unanswered for"
        )


async def test_a_hung_server_does_not_slow_other_sessions(tmp_path: Path) -> None:
    hung_root, other_root = roots(tmp_path, 2)
    config = fast(
        {"fake": fake_server("ok")}, method_timeouts={"textDocument/hover": 2.0}, cancel_grace=1.0
    )
    async with (
        running(hung_root, config) as (hung, _),
        running(other_root, config) as (other, _),
    ):
        await hover(hung, hung_root / "a.fake")
        await hover(other, other_root / "a.fake")
        server = hung.pool.servers["fake"]
        assert server.pid is not None
        os.kill(server.pid, signal.SIGSTOP)
        with trio.fail_after(5):
            while hung.status()[0]["state"] != "unresponsive":
                await trio.sleep(0.01)  # another process's state: polled, with a deadline
        assert other.status()[0]["state"] == "running"
        answered = 0
        failed = trio.Event()

        async def ask_hung() -> None:
            with pytest.raises(ToolError) as info:
                await hover(hung, hung_root / "a.fake")
            assert info.value.kind is ErrorKind.TIMEOUT
            failed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_hung)
            while not failed.is_set():  # the other session answers as usual meanwhile
                with trio.fail_after(1.0):  # well under the hung one's 2 s timeout
                    await hover(other, other_root / "a.fake")
                answered += 1
        assert answered >= 3
        # The hung server is restarted (SIGCONT, then killed) and answers again.
        await restarted(server)
        assert "textDocument/hover unanswered" in server.status()["restart_reason"]
        with trio.fail_after(10):
            answer = await hover(hung, hung_root / "a.fake")
        assert answer.result["contents"]["value"] == "hover"


async def test_a_timeout_reports_the_whole_wait(tmp_path: Path, doc: Path) -> None:
    config = fast(
        {"fake": fake_server("unready-silent")},
        ready_timeout=1.0,
        method_timeouts={"textDocument/hover": 0.3},
    )
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10), pytest.raises(ToolError) as info:
            await manager.request(doc, "textDocument/hover", hover_params, wait_ready=True)
    assert info.value.kind is ErrorKind.TIMEOUT
    pattern = r"within ([\d.]+) s, 1 s of it for the server to be ready"
    found = re.search(pattern, info.value.message)
    assert found is not None, info.value.message
    waited = float(found.group(1))
    assert waited >= 1.3 and waited < 5  # the ready wait (1 s) plus the hover timeout (0.3 s)


# -- crashes ------------------------------------------------------------------------------------


async def test_a_crash_loop_is_marked_failed_and_names_its_stderr(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.01)
    config = fast({"fake": fake_server("crash-at-start")}, crash_limit=3)
    async with running(tmp_path, config) as (manager, _):
        server = manager.pool.server_for("fake")
        with pytest.raises(ToolError):
            await server.connection()
        with trio.fail_after(10):
            await server.wait_for(lambda: server.state is ServerState.FAILED, 10)
        assert server.restarts == 2
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
    message = info.value.message
    assert info.value.kind is ErrorKind.LSP_ERROR and info.value.details["server"] == "fake"
    assert "failed 3 times (it exited with code 3;" in message
    assert "its stderr ended with: fake: cannot start: <path> is missing" in message
    assert "/etc" not in message


# -- missing or failed servers are the answer --------------------------------------------------


async def test_a_missing_first_server_is_the_answer_not_the_next_ones(
    tmp_path: Path, doc: Path
) -> None:
    servers = {
        "primary": ServerConfig(command=["no-such-primary-xyz"], install_hint="pip install p"),
        "fake": fake_server("ok"),
    }
    async with running(tmp_path, fast(servers, ["primary", "fake"])) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)  # the fake one would answer: it must not
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        assert info.value.details["server"] == "primary" and "pip install p" in info.value.message


async def test_a_failed_first_server_is_the_answer_not_the_next_ones(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.01)
    servers = {"primary": fake_server("crash-at-start"), "fake": fake_server("ok")}
    async with running(tmp_path, fast(servers, ["primary", "fake"])) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.details["server"] == "primary"
        assert "could not start" in info.value.message
        primary = manager.pool.servers["primary"]
        with trio.fail_after(10):
            await primary.wait_for(lambda: primary.state is ServerState.FAILED, 10)
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert info.value.details["server"] == "primary" and "failed 5 times" in info.value.message


async def test_a_gone_server_is_skipped_for_what_it_never_offered(
    tmp_path: Path, doc: Path
) -> None:
    program = tmp_path / "bin" / "primary-ls"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} ok\n")
    program.chmod(0o755)
    servers = {
        "primary": ServerConfig(command=[str(program)]),
        "second": fake_server("server-requests"),
    }
    async with running(tmp_path, fast(servers, ["primary", "second"])) as (manager, _):
        assert (await hover(manager, doc)).server == "primary"
        second = manager.pool.server_for("second")
        await second.connection()
        with trio.fail_after(5):
            await second.wait_for(
                lambda: second.capabilities.supports("textDocument/formatting"), 5
            )
        # primary's program goes away; it dies and cannot start again.
        primary = manager.pool.servers["primary"]
        program.unlink()
        assert primary.pid is not None
        os.kill(primary.pid, signal.SIGKILL)
        with trio.fail_after(10):
            await primary.wait_for(lambda: primary.state is ServerState.UNAVAILABLE, 10)
        # Hover, which primary offered: its error. Formatting, which it never offered: second.
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        assert info.value.details["server"] == "primary"
        assert "(servers.primary.command = `primary-ls`): no program" in info.value.message
        assert info.value.message.endswith("; install primary-ls, or fix that entry.")
        assert str(tmp_path) not in info.value.message
        with pytest.raises(ToolError) as info:
            await manager.request(doc, "textDocument/formatting", hover_params, wait_ready=False)
        assert info.value.details["server"] == "second"  # it answered (refusing the method)


async def test_the_install_hint_names_the_program_not_its_path(tmp_path: Path, doc: Path) -> None:
    missing = ServerConfig(command=[str(tmp_path.parent / "bin" / "fake-ls"), "--stdio"])
    async with running(tmp_path, fast({"fake": missing})) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
    assert info.value.message == (
        "The fake language server is not installed where its command in the config says "
        "(servers.fake.command = `fake-ls --stdio`): no program 'fake-ls'; install fake-ls, "
        "or fix that entry."
    )


# -- the daemon-wide caps ----------------------------------------------------------------------


async def test_the_least_recently_used_idle_session_stops_first(tmp_path: Path) -> None:
    a, b, c = roots(tmp_path, 3)
    budget = ServerBudget(DaemonConfig(max_servers=2))
    config = fast({"fake": fake_server("ok")})
    async with (
        running(a, config, budget=budget) as (first, _),
        running(b, config, budget=budget) as (second, _),
        running(c, config, budget=budget) as (third, _),
    ):
        await hover(first, a / "a.fake")
        await hover(second, b / "a.fake")
        assert budget.live() == 2
        await hover(third, c / "a.fake")  # one too many: the oldest idle one stops
        assert budget.live() == 2
        stopping = first.pool.server_for("fake")  # parked at once; its process reaped after
        assert await stopping.wait_for(lambda: stopping.status()["pid"] is None, 10)
        status = first.status()[0]
        assert status["state"] == "idle" and status["pid"] is None
        assert "daemon.max_servers" in status["restart_reason"]
        assert second.status()[0]["state"] == "running"
        # Its next request starts it again, and the next oldest idle one (second) stops.
        with trio.fail_after(10):
            answer = await hover(first, a / "a.fake")
        assert answer.result["contents"]["value"] == "hover"
        assert [m.status()[0]["state"] for m in (first, second, third)] == [
            "running",
            "idle",
            "running",
        ]


async def test_a_server_unused_for_idle_stop_stops_and_starts_on_its_next_need(
    tmp_path: Path, doc: Path
) -> None:
    config = fast({"fake": fake_server("ok")}, idle_stop=0.2)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10):
            await hover(manager, doc)
        server = manager.pool.servers["fake"]
        first = server.pid
        assert first is not None
        assert await server.wait_for(lambda: server.status()["pid"] is None, 10)
        status = manager.status()[0]
        assert status["state"] == "idle" and "lsp.idle_stop" in status["restart_reason"]
        with trio.fail_after(10):  # the session stays: its next request starts it again
            answer = await hover(manager, doc)
        assert answer.result["contents"]["value"] == "hover" and server.pid != first
        assert server.restarts == 0  # stopped on purpose: not a crash


async def test_idle_stop_zero_never_stops(tmp_path: Path, doc: Path) -> None:
    config = fast({"fake": fake_server("ok")}, idle_stop=0)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10):
            await hover(manager, doc)
        server = manager.pool.servers["fake"]
        # many supervision checks later (each every 50 ms) it still runs
        assert not await server.wait_for(lambda: server.status()["pid"] is None, 0.5)
        assert manager.status()[0]["state"] == "running"


async def test_sessions_beyond_max_sessions_stop_their_servers(tmp_path: Path) -> None:
    a, b = roots(tmp_path, 2)
    budget = ServerBudget(DaemonConfig(max_servers=10, max_sessions=1))
    config = fast({"one": fake_server("ok"), "two": fake_server("ok")})
    async with (
        running(a, config, budget=budget) as (first, _),
        running(b, config, budget=budget) as (second, _),
    ):
        await first.request_all(a / "a.fake", "textDocument/hover", hover_params)
        assert budget.live() == 2  # two servers, one session: within both caps
        await hover(second, b / "a.fake")  # a second session with live servers: one too many
        assert [s["state"] for s in first.status()] == ["idle", "idle"]
        assert budget.live() == 1


async def test_a_busy_session_is_not_stopped_for_the_cap(tmp_path: Path) -> None:
    a, b = roots(tmp_path, 2)
    budget = ServerBudget(DaemonConfig(max_servers=10, max_sessions=1))
    config = fast(
        {"fake": fake_server("silent-hover")},
        method_timeouts={"textDocument/hover": 30.0},
        cancel_grace=60.0,
    )
    async with (
        running(a, config, budget=budget) as (first, _),
        running(b, config, budget=budget) as (second, _),
    ):
        await first.pool.server_for("fake").connection()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hover, first, a / "a.fake")  # never answered: busy
            await trio.testing.wait_all_tasks_blocked()
            assert first.busy
            await second.pool.server_for("fake").connection()  # over max_sessions, nobody idle
            assert budget.live() == 2
            assert first.status()[0]["state"] == "running"
            nursery.cancel_scope.cancel()


async def test_a_workspace_pull_left_open_is_not_a_request_ignored(tmp_path: Path) -> None:
    """Servers answer a workspace diagnostics pull only when the next one comes (as
    basedpyright does): that pull left unanswered does not get the server restarted."""
    (tmp_path / "a.fake").write_text("bad\n")
    (tmp_path / "b.fake").write_text("good\n")
    config = fast({"fake": fake_server("workspace-pull")}, cancel_grace=0.1)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10):
            result = await manager.workspace_diagnostics(["fake"])
        assert [(f.file, f.message) for f in result.diagnostics] == [("a.fake", "bad line 1")]
        assert not result.errors
        server = manager.pool.servers["fake"]
        assert not server.busy and manager.status()[0]["state"] == "running"
        with trio.fail_after(10):
            result = await manager.workspace_diagnostics(["fake"])  # answers the first pull
        assert len(result.diagnostics) == 1 and server.restarts == 0 and not server.busy


async def test_restarts_on_purpose_count_towards_failed(tmp_path: Path) -> None:
    """A server over its cap from its start is not restarted in a loop: marked failed."""
    config = fast({"fake": fake_server("ok")}, max_rss_mb=4, crash_limit=3)
    async with running(tmp_path, config) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        with trio.fail_after(10):
            await server.wait_for(lambda: server.state is ServerState.FAILED, 10)
        assert server.restarts == 2
        with pytest.raises(ToolError) as info:
            await server.connection()
    assert "failed 3 times (it used" in info.value.message
    assert "above its max_rss_mb of 4" in info.value.message


class TestThroughTheDaemon:
    """What a client sees in session/list, with an in-process daemon."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        servers = {"fake": msgspec.structs.replace(fake_server("grow"), max_rss_mb=48)}
        config = fast(servers)
        return msgspec.structs.replace(config, daemon=DaemonConfig(max_servers=1))

    async def test_restarts_and_stops_show_in_session_list(
        self, open_client: OpenClient, tmp_path: Path
    ) -> None:
        first, second = roots(tmp_path, 2)
        hover = {"path": "a.fake", "line": 1, "character": 1}
        one = await open_client(first)
        with trio.fail_after(10):
            await one.call("tools/call", {"name": "get_hover_info", "arguments": hover})

        async def servers(root: Path) -> dict[str, object]:
            sessions = (await one.call("session/list"))["sessions"]
            return next(s for s in sessions if s["root"] == str(root))["servers"][0]

        with trio.fail_after(10):  # over its memory cap after the hover: restarted
            while (await servers(first))["restarts"] < 1:
                await trio.sleep(0.02)  # another process's memory: polled, with a deadline
        assert "above its max_rss_mb of 48" in str((await servers(first))["restart_reason"])
        # A second root's server is one too many (max_servers = 1): the first one stops.
        two = await open_client(second)
        with trio.fail_after(10):
            await two.call(
                "tools/call", {"name": "get_diagnostics", "arguments": {"path": "a.fake"}}
            )
        stopped = await servers(first)
        assert stopped["state"] == "idle" and stopped["pid"] is None
        assert "daemon.max_servers" in str(stopped["restart_reason"])
        assert (await servers(second))["state"] == "running"
