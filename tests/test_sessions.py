"""Sessions: one per canonical root, attach by root or id, list, close, idle timeout,
policy narrowing, client/confirm and $/progress plumbing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.lsp import LanguageService
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.rpc import RpcClient, RpcFailure


async def test_open_attach_by_root_and_by_id(open_client: OpenClient, project: Path) -> None:
    a = await open_client()
    first = await a.call("session/open", {"root": str(project)})
    assert first["created"] is True and first["root"] == str(project)
    assert isinstance(first["languages"], list)
    b = await open_client()
    (project / "sub").mkdir()
    again = await b.call("session/open", {"root": str(project / "sub" / "..")})
    assert again == {**first, "created": False}
    c = await open_client()
    by_id = await c.call("session/open", {"session_id": first["session_id"]})
    assert by_id["session_id"] == first["session_id"] and by_id["created"] is False
    sessions = (await c.call("session/list"))["sessions"]
    assert [(s["id"], s["clients"]) for s in sessions] == [(first["session_id"], 3)]


async def test_symlinked_root_is_the_same_session(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    a = await open_client()
    one = await a.call("session/open", {"root": str(project)})
    two = await a.call("session/open", {"root": str(link)})
    assert one["session_id"] == two["session_id"]


async def test_bad_roots(open_client: OpenClient, tmp_path: Path) -> None:
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": str(tmp_path / "missing")})
    assert info.value.kind == "file_not_found"
    assert str(tmp_path) not in info.value.message
    (tmp_path / "file").write_text("x")
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": str(tmp_path / "file")})
    assert info.value.kind == "invalid_arguments"
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {})
    assert info.value.code == -32602
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": 5})
    assert info.value.code == -32602
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"session_id": "nope"})
    assert info.value.kind == "session_not_found"
    with pytest.raises(RpcFailure) as info:
        await client.call("session/close")
    assert info.value.kind == "no_session"


async def test_broken_project_config_is_refused(open_client: OpenClient, project: Path) -> None:
    (project / ".codeward.toml").write_text("[servers.python]\ncommand = ['evil']\n")
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": str(project)})
    assert info.value.kind == "invalid_arguments" and ".codeward.toml" in info.value.message


async def test_close_and_terminate(open_client: OpenClient, project: Path, daemon: Daemon) -> None:
    client = await open_client(project)
    assert await client.call("session/close") == {}
    sessions = (await client.call("session/list"))["sessions"]
    assert sessions[0]["clients"] == 0
    opened = await client.call("session/open", {"root": str(project)})
    assert opened["created"] is False
    assert await client.call("session/close", {"terminate": True}) == {}
    assert (await client.call("session/list"))["sessions"] == []
    assert (await client.call("session/open", {"root": str(project)}))["created"] is True


async def test_disconnect_detaches(open_client: OpenClient, project: Path, daemon: Daemon) -> None:
    client = await open_client(project)
    (conn,) = daemon.connections.values()
    await client.aclose()
    with trio.fail_after(5):
        await conn.done.wait()
    (session,) = daemon.sessions.sessions.values()
    assert session.clients == set()


class TestIdle:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(daemon=DaemonConfig(idle_timeout=30.0))

    async def test_idle_session_stops_after_the_timeout(
        self, open_client: OpenClient, project: Path, daemon: Daemon, autojump_clock: Any
    ) -> None:
        client = await open_client(project)
        (session,) = daemon.sessions.sessions.values()
        await trio.sleep(100)  # attached: the session lives however long
        assert not session.stopped.is_set()
        await client.call("session/close")
        await trio.sleep(20)
        assert not session.stopped.is_set()
        assert (await client.call("session/list"))["sessions"][0]["idle_seconds"] >= 19
        await trio.sleep(11)
        assert session.stopped.is_set()
        assert (await client.call("session/list"))["sessions"] == []


async def test_policy_may_only_narrow(
    open_client: OpenClient, project: Path, daemon: Daemon
) -> None:
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": str(project), "policy": {"git_write": "maybe"}})
    assert info.value.code == -32602
    await client.call("session/open", {"root": str(project), "policy": {"git_write": "allow"}})
    (conn,) = daemon.connections.values()
    assert conn.policy is not None and conn.policy.git_write == "confirm"  # cannot widen
    await client.call("session/open", {"root": str(project), "policy": {"git_destructive": "deny"}})
    assert conn.policy.git_destructive == "deny" and conn.policy.git_write == "confirm"


async def test_confirm_round_trip(open_client: OpenClient, project: Path, daemon: Daemon) -> None:
    asked: list[Any] = []

    async def answer(method: str, params: Any) -> Any:
        asked.append((method, params))
        return {"approved": params["summary"] == "yes please"}

    await open_client(project, on_request=answer, capabilities={"confirm": True})
    (conn,) = daemon.connections.values()
    assert conn.can_confirm
    assert await conn.confirm("sid", "git_command", "yes please", ["git", "commit"]) is True
    assert await conn.confirm("sid", "git_command", "no", ["git", "push"]) is False
    assert asked[0] == (
        "client/confirm",
        {
            "session_id": "sid",
            "tool": "git_command",
            "summary": "yes please",
            "argv": ["git", "commit"],
        },
    )


async def test_confirm_without_capability_or_answer(
    open_client: OpenClient, project: Path, daemon: Daemon, autojump_clock: Any
) -> None:
    await open_client(project)
    (conn,) = daemon.connections.values()
    assert not conn.can_confirm
    assert await conn.confirm("sid", "t", "s", []) is False

    never = trio.Event()

    async def silent(method: str, params: Any) -> Any:
        await never.wait()

    await open_client(project, on_request=silent, capabilities={"confirm": True})
    conn = list(daemon.connections.values())[-1]
    assert await conn.confirm("sid", "t", "s", []) is False  # no answer in time means no


async def test_progress_reaches_clients_that_declared_it(
    open_client: OpenClient, project: Path, daemon: Daemon
) -> None:
    quiet = await open_client(project)
    loud = await open_client(project, capabilities={"progress": True})
    (session,) = daemon.sessions.sessions.values()
    session.publish_progress({"server": "basedpyright", "token": 1, "kind": "begin", "title": "x"})
    with trio.fail_after(5):
        while not loud.notifications:
            await loud.notified.wait()
    assert loud.notifications[0] == {
        "jsonrpc": "2.0",
        "method": "$/progress",
        "params": {
            "session_id": session.id,
            "server": "basedpyright",
            "token": 1,
            "kind": "begin",
            "title": "x",
        },
    }
    await quiet.call("daemon/status")  # a round trip after the publish
    assert quiet.notifications == []


async def test_shutdown_method_stops_the_daemon(socket_dir: Path, project: Path) -> None:
    from tests.rpc import connect

    daemon = Daemon(Config(), socket_dir / "codeward.sock")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.run)
            client = await connect(nursery, daemon.socket_path)
            await client.call("session/open", {"root": str(project)})
            assert await client.call("daemon/shutdown") == {}
    assert not daemon.socket_path.exists()
    assert os.path.isdir(socket_dir)


async def test_open_reports_the_languages_found(open_client: OpenClient, project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "a.py").write_text("x = 1\n")
    (project / "main.go").write_text("package main\n")
    (project / "node_modules").mkdir()
    (project / "node_modules" / "x.ts").write_text("export {}\n")  # skipped folder
    (project / "README").write_text("no language\n")
    client = await open_client()
    opened = await client.call("session/open", {"root": str(project)})
    assert opened["languages"] == ["go", "python"]


async def test_project_may_choose_among_configured_servers(
    open_client: OpenClient, project: Path, daemon: Daemon
) -> None:
    (project / ".codeward.toml").write_text(
        "[policy]\ngit_write = 'deny'\n[servers]\npython = ['ruff']\n"
    )
    client = await open_client()
    await client.call("session/open", {"root": str(project)})
    (session,) = daemon.sessions.sessions.values()
    assert session.policy.git_write == "deny"
    assert session.lsp.languages.servers("python") == ["ruff"]
    assert session.lsp.languages.servers("go") == ["gopls"]


class TestIdleHandover:
    """session/open at the moment a session stops for being idle: the client gets a live
    session (the old one if it had not decided to stop, else a new one), never the dying one."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(daemon=DaemonConfig(idle_timeout=30.0))

    @pytest.fixture
    def slow_stop(self, monkeypatch: pytest.MonkeyPatch) -> trio.Event:
        """Sessions whose language servers take until the event is set (or 10 min) to stop."""
        release = trio.Event()
        real_run = LanguageService.run

        async def run(self: LanguageService, *args: Any, **kwargs: Any) -> None:
            try:
                await real_run(self, *args, **kwargs)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(600):
                    await release.wait()

        monkeypatch.setattr(LanguageService, "run", run)
        return release

    async def test_open_while_the_idle_session_stops(
        self,
        open_client: OpenClient,
        project: Path,
        daemon: Daemon,
        autojump_clock: Any,
        slow_stop: trio.Event,
    ) -> None:
        first = await open_client()
        old_id = (await first.call("session/open", {"root": str(project)}))["session_id"]
        old = daemon.sessions.sessions[old_id]
        await first.call("session/close")
        await old.closing.wait()  # the idle timeout ran out: it is stopping its servers
        assert not old.stopped.is_set()
        b, c = await open_client(), await open_client()
        opened: list[dict[str, Any]] = []

        async def open_(client: RpcClient) -> None:
            opened.append(await client.call("session/open", {"root": str(project)}))

        async with trio.open_nursery() as nursery:  # two clients at once: one new session
            nursery.start_soon(open_, b)
            nursery.start_soon(open_, c)
        assert {o["session_id"] for o in opened} == {opened[0]["session_id"]} != {old_id}
        assert sorted(o["created"] for o in opened) == [False, True]
        new = daemon.sessions.sessions[opened[0]["session_id"]]
        assert new.alive and len(new.clients) == 2 and not old.stopped.is_set()
        assert (await b.call("lua/eval", {"source": "return 7"}))["result"] == 7
        with pytest.raises(RpcFailure) as info:  # the dying one cannot be attached by id
            await first.call("session/open", {"session_id": old_id})
        assert info.value.kind == "session_not_found"
        slow_stop.set()
        await old.stopped.wait()
        listed = (await b.call("session/list"))["sessions"]
        assert [s["id"] for s in listed] == [new.id]
        await trio.sleep(100)  # attached: the new one lives on, and answers
        assert (await c.call("lua/eval", {"source": "return 8"}))["result"] == 8
        again = await first.call("session/open", {"root": str(project)})
        assert again["session_id"] == new.id and again["created"] is False

    @pytest.mark.parametrize("offset", [-1.0, -0.001, 0.0, 0.001, 1.0])
    async def test_open_around_the_idle_deadline(
        self,
        open_client: OpenClient,
        project: Path,
        daemon: Daemon,
        autojump_clock: Any,
        slow_stop: trio.Event,
        offset: float,
    ) -> None:
        first = await open_client()
        old_id = (await first.call("session/open", {"root": str(project)}))["session_id"]
        await first.call("session/close")
        await trio.sleep(30.0 + offset)
        second = await open_client()
        got = await second.call("session/open", {"root": str(project)})
        session = daemon.sessions.sessions[got["session_id"]]
        assert session.alive and len(session.clients) == 1
        assert got["created"] is (got["session_id"] != old_id)
        if offset < 0:
            assert got["session_id"] == old_id
        if offset > 0:
            assert got["session_id"] != old_id
        slow_stop.set()
        await trio.sleep(100)
        assert session.alive
        assert (await second.call("lua/eval", {"source": "return 1"}))["result"] == 1
        listed = (await second.call("session/list"))["sessions"]
        assert [s["id"] for s in listed] == [session.id]


async def test_file_writes_under_edits_confirm(
    open_client: OpenClient, project: Path, daemon: Daemon
) -> None:
    """A client narrows `edits` to "confirm": its writes are asked `client/confirm` (the tool
    and the files in the summary), a no writes nothing, a client that cannot confirm is told
    the ways on; a preview is never asked."""
    (project / "notes.txt").write_text("one\n")
    asked: list[Any] = []

    async def answer(method: str, params: Any) -> Any:
        asked.append(params)
        return {"approved": len(asked) == 1}

    edit = {"path": "notes.txt", "content": "two\n"}
    client = await open_client(project, on_request=answer, capabilities={"confirm": True},
                               policy={"edits": "confirm"})  # fmt: skip
    await client.tool("edit_file", **edit, mode="preview")
    assert asked == []
    written = await client.tool("edit_file", **edit)
    assert written["written"] and (project / "notes.txt").read_text() == "two\n"
    assert asked[0]["tool"] == "edit_file" and asked[0]["argv"] == []
    assert asked[0]["summary"] == "writing 1 file (notes.txt)"
    with pytest.raises(RpcFailure) as declined:
        await client.tool("edit_file", path="notes.txt", content="three\n")
    assert declined.value.kind == "confirmation_denied"
    assert (project / "notes.txt").read_text() == "two\n"
    mute = await open_client(project, policy={"edits": "confirm"})
    with pytest.raises(RpcFailure) as required:
        await mute.tool("edit_file", path="notes.txt", content="four\n")
    assert required.value.kind == "confirmation_required"
    assert 'policy.edits = "allow"' in required.value.message
    assert required.value.data["files"] == ["notes.txt"]
    assert (project / "notes.txt").read_text() == "two\n"
    allowed = await open_client(project)  # the default: allow
    assert (await allowed.tool("edit_file", path="notes.txt", content="five\n"))["written"]
