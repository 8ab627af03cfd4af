"""MCP end to end: the official SDK client over stdio, through `codeward mcp` (the pump), to
an in-process daemon that speaks MCP itself, with real basedpyright and git, and the fake
server where a fault or a slow call must be injected."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
import trio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, LspConfig, ServerConfig
from codeward.daemon.server import Daemon
from codeward.daemon.tools.registry import REGISTRY, Tool, ToolContext
from codeward.protocol import mcp as mcp_protocol
from codeward.protocol.render.notes import RESTRICTED
from tests.lsp_support import FAKE, logged, needs
from tests.rpc import connect

REPO = Path(__file__).resolve().parents[1]
LAUNCH = "import sys; from codeward.client.entry import main; sys.exit(main())"
ENV = {"PYTHONPATH": str(REPO)}
APP = '''\
import abc


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> int: ...


class Impl(Base):
    def run(self) -> int:
        return compute(1)


def compute(value: int) -> int:
    """Double the value."""
    return value * 2


def caller() -> int:
    return compute(3)+compute(4)


LIMIT: int = "ten"
'''


class EchoArgs(msgspec.Struct, forbid_unknown_fields=True):
    pass


def pump_argv(sock: Path, root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", LAUNCH, "--socket", str(sock), "--root", str(root), *extra,
            "mcp"]  # fmt: skip


@pytest.fixture
def daemon_config(tmp_path: Path) -> Config:
    """The default servers, plus the fake one: `*.fake` streams workspace diagnostics with
    progress; `*.hold` stalls its first workspace pull until a byte comes through a FIFO."""
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    fake = [sys.executable, FAKE]
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        lsp=LspConfig(initialize_timeout=10.0, settle_timeout=10.0),
        servers={
            "fake": ServerConfig(
                command=[*fake, "workspace-stream", str(tmp_path / "fake.log")], untrusted="run"
            ),
            "hold": ServerConfig(
                command=[*fake, "workspace-hold", str(tmp_path / "hold.log"), str(fifo)],
                untrusted="run",
            ),
        },
        languages={
            "fake": LanguageConfig(patterns=["*.fake"], servers=["fake"], language_id="fake"),
            "hold": LanguageConfig(patterns=["*.hold"], servers=["hold"], language_id="hold"),
        },
    )


@asynccontextmanager
async def agent(
    daemon: Daemon, root: Path, **kwargs: Any
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    """An SDK client of a `codeward mcp` process for `root`, initialized."""
    params = StdioServerParameters(
        command=sys.executable, args=pump_argv(daemon.socket_path, root)[1:], env=ENV
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, **kwargs) as session,
        ):
            with trio.fail_after(30):
                init = await session.initialize()
            yield session, init


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=30)


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    (project / "app.py").write_text(APP)
    git(project, "add", "app.py")
    git(project, "commit", "-qm", "first")
    return project


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


# -- every tool, through the SDK ----------------------------------------------------------


@needs("basedpyright", "ruff")
async def test_every_tool_through_the_sdk(daemon: Daemon, repo: Path) -> None:
    async with agent(daemon, repo) as (session, init):
        assert init.server_info.name == "codeward"
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed
        assert init.instructions and "project" in init.instructions
        assert str(repo) not in init.instructions  # no absolute path in what a model reads
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "git_command" in tools and "find_references" in tools
        at = {"path": "app.py", "line": 14, "character": 5}  # `compute`
        calls: dict[str, dict[str, Any]] = {
            "git_command": {"subcommand": "status"},
            "get_diagnostics": {"path": "app.py"},
            "get_hover_info": at,
            "go_to_definition": {"path": "app.py", "line": 11, "character": 16},
            "get_type_definition": {"path": "app.py", "line": 23, "character": 1},
            "find_implementations": {"path": "app.py", "line": 6, "character": 9},
            "find_references": at,
            "get_symbols": {"path": "app.py"},
            "call_hierarchy": at,
            "type_hierarchy": {"path": "app.py", "line": 9, "character": 7},  # class Impl
            "signature_help": {"path": "app.py", "line": 11, "character": 24},  # compute(|1)
            "format_code": {"path": "app.py", "apply": False},
            "get_code_actions": {"path": "app.py", "line": 24},
            "rename_symbol": {**at, "new_name": "double", "apply": False},
            "edit_file": {"path": "app.py", "mode": "preview", "edits": [
                {"line": 1, "character": 1, "end_line": 1, "end_character": 1,
                 "new_text": "BROKEN: int = 'a'\n"}]},
            "run_lua": {"source": "codeward.log('counted')\n"
                                  "return codeward.call('get_symbols', {path = 'app.py'}).count"},
            "review_changes": {"since": "HEAD"},
            "edit_symbol": {"path": "app.py", "symbol": "Impl.run", "action": "replace_body",
                            "text": "return compute(2)", "mode": "preview"},
            "move_file": {"path": "app.py", "new_path": "moved/app.py", "mode": "preview"},
        }  # fmt: skip
        assert set(calls) == set(tools), "a tool was added: call it here too"
        texts: dict[str, str] = {}
        for name, arguments in calls.items():
            with trio.fail_after(60):
                result = await session.call_tool(name, arguments)  # the SDK validates too
            if name == "type_hierarchy":  # basedpyright has none: said so, not an empty answer
                assert result.is_error and "[unsupported_by_server]" in text_of(result)
                texts[name] = text_of(result)
                continue
            assert not result.is_error, (name, text_of(result))
            assert tools[name].output_schema is not None
            jsonschema.validate(result.structured_content, tools[name].output_schema)
            texts[name] = text_of(result)
            assert not texts[name].startswith("{"), f"{name}: JSON is no answer for a model"
            digest = (result.structured_content or {}).get("content_hash")
            assert digest is None or f"(content_hash: {digest})" in texts[name], name
        # A model that reads only the text can pass the file's hash back as `since`.
        (digest,) = re.findall(r"\(content_hash: (\S+)\)", texts["get_diagnostics"])
        with trio.fail_after(60):
            delta = await session.call_tool("get_diagnostics", {"path": "app.py", "since": digest})
        assert not delta.is_error, text_of(delta)
        assert text_of(delta).startswith(f"since {digest[:19]}: 0 introduced, 0 resolved")
    assert "On branch main" in texts["git_command"]
    assert "app.py:23:14: error:" in texts["get_diagnostics"]
    # The first answer of the root's restricted servers says so; later ones do not repeat it.
    assert texts["get_diagnostics"].endswith(f"({RESTRICTED})\n(2 diagnostics)")
    assert "def compute(value: int) -> int" in texts["get_hover_info"]
    assert texts["go_to_definition"] == "app.py:14:5: def compute(value: int) -> int:"
    assert not any(RESTRICTED in texts[name] for name in calls if name != "get_diagnostics")
    assert texts["signature_help"].splitlines()[0] == "(value: int) -> int"
    assert texts["find_references"].splitlines()[:4] == [
        "3 references",
        "app.py:11:16: return compute(1)",
        "app.py:20:12: return compute(3)+compute(4)",
        "app.py:20:23: return compute(3)+compute(4)",
    ]
    assert texts["get_symbols"].splitlines() == [
        "class@7 Base:4",
        " fn@9 run:6",
        "class@7 Impl:9",
        " fn@9 run:10",
        "fn@5 compute:14 caller:19",
        "const@1 LIMIT:23",
    ]
    assert "app.py:10:9: def run(self) -> int:" in texts["find_implementations"]
    assert texts["call_hierarchy"].splitlines()[:2] == [
        "3 calls to compute",
        "app.py:11:16: run: return compute(1)",
    ]
    assert "app.py:20:12: caller: return compute(3)+compute(4)" in texts["call_hierarchy"]
    assert "+    return compute(3) + compute(4)" in texts["format_code"]
    assert "-def compute(value: int) -> int:" in texts["rename_symbol"]
    assert "+BROKEN: int = 'a'" in texts["edit_file"]
    assert "(preview: nothing written)" in texts["edit_file"]
    assert "app.py: 1 introduced" in texts["edit_file"]
    assert "+ app.py:1:" in texts["edit_file"]
    assert "(content_hash: sha256:" in texts["edit_file"]
    assert texts["run_lua"] == "7\nlog: counted"
    assert texts["review_changes"].startswith("review since HEAD (")
    assert "+        return compute(2)" in texts["edit_symbol"]
    assert "(preview: nothing written)" in texts["edit_symbol"]
    assert "(preview: nothing moved (app.py -> moved/app.py; " in texts["move_file"]


async def test_errors_as_results_and_as_protocol_errors(daemon: Daemon, repo: Path) -> None:
    async with agent(daemon, repo) as (session, _):
        with trio.fail_after(30):
            refused = await session.call_tool("git_command", {"subcommand": "config"})
            missing = await session.call_tool(
                "get_hover_info", {"path": "/etc/passwd", "line": 1, "character": 1}
            )
            bad = await session.call_tool("git_command", {"subcommand": 3})
            failed = await session.call_tool(
                "git_command", {"subcommand": "show", "args": ["nope"]}
            )
        assert refused.is_error and text_of(refused).endswith("[subcommand_not_allowed]")
        assert missing.is_error and "[path_outside_project]" in text_of(missing)
        assert "/etc/passwd" not in text_of(missing)
        assert bad.is_error and "[invalid_arguments]" in text_of(bad)
        assert failed.is_error and "[git_failed]" in text_of(failed)
        assert "nope" in text_of(failed)  # git's own words follow
        assert refused.structured_content is None
        with trio.fail_after(30), pytest.raises(Exception, match="Unknown tool: 'no_such_tool'"):
            await session.call_tool("no_such_tool", {})
        with trio.fail_after(30):
            await session.send_ping()


# -- sessions, cancellation, progress --------------------------------------------------------


async def test_two_agents_on_one_root_share_one_session(daemon: Daemon, repo: Path) -> None:
    async with agent(daemon, repo) as (first, _), agent(daemon, repo) as (second, _):
        with trio.fail_after(30):
            one = await first.call_tool("git_command", {"subcommand": "log", "args": ["-1"]})
            two = await second.call_tool("git_command", {"subcommand": "log", "args": ["-1"]})
        assert "first" in text_of(one) and text_of(one) == text_of(two)
        (session,) = daemon.sessions.sessions.values()
        assert session.root == repo and len(session.clients) == 2


def hold_server(daemon: Daemon) -> Any:
    (session,) = daemon.sessions.sessions.values()
    return session.lsp.pool.servers["hold"]


async def until(predicate: Any) -> None:
    """Wait (bounded) for a state another process's traffic brings about."""
    with trio.fail_after(30):
        while not predicate():
            await trio.sleep(0.01)


async def test_cancelling_a_slow_call_reaches_the_language_server(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    (project / "a.hold").write_text("bad\n")
    async with agent(daemon, project) as (session, _):
        async with trio.open_nursery() as nursery:
            outcome: list[Any] = []

            async def slow() -> None:
                outcome.append(await session.call_tool("get_diagnostics", {}))

            nursery.start_soon(slow)
            await until(lambda: daemon.sessions.sessions and "hold" in
                        next(iter(daemon.sessions.sessions.values())).lsp.pool.servers)  # fmt: skip
            server = hold_server(daemon)
            await until(lambda: bool(server._freshness.announced))  # the pull is in
            nursery.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        assert outcome == []
        await until(lambda: not server._freshness.partial)  # the daemon gave the pull up
        with (tmp_path / "hold.fifo").open("wb") as fifo:  # let the server read again
            fifo.write(b"x")
        await until(lambda: any(m.get("method") == "$/cancelRequest"
                                for m in logged(tmp_path / "hold.log")))  # fmt: skip
    messages = logged(tmp_path / "hold.log")
    pull = next(m["id"] for m in messages if m.get("method") == "workspace/diagnostic")
    cancels = [m["params"]["id"] for m in messages if m.get("method") == "$/cancelRequest"]
    assert cancels == [pull]


def progress_into(into: list[types.ProgressNotificationParams]) -> Any:
    """An SDK message handler that keeps every progress notification the server sent."""

    async def handle(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            into.append(message.params)

    return handle


async def test_progress_only_for_a_call_with_a_token(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    (project / "a.fake").write_text("bad\n")
    (project / "b.fake").write_text("bad\n")  # a second file: the server reports in two rounds
    seen: list[tuple[float, str | None]] = []
    sent: list[types.ProgressNotificationParams] = []  # every one, as the SDK received it

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with agent(daemon, project, message_handler=progress_into(sent)) as (session, _):
        with trio.fail_after(30):
            result = await session.call_tool("get_diagnostics", {}, progress_callback=on_progress)
        assert "a.fake:1:1: error: bad line 1 [E1]" in text_of(result)
        await until(lambda: len(sent) >= 2)
    assert seen[:2] == [(1.0, "fake: begin"), (2.0, "fake: done")]
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)  # increasing, as MCP requires
    assert len({params.progress_token for params in sent}) == 1  # the call's own token

    # The same call without a token, on a fresh server that reports progress again: none.
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.fake").write_text("bad\n")
    (other / "b.fake").write_text("ok\nbad\n")
    quiet: list[types.ProgressNotificationParams] = []
    async with agent(daemon, other, message_handler=progress_into(quiet)) as (session, _):
        with trio.fail_after(30):
            result = await session.call_tool("get_diagnostics", {})
            await session.send_ping()  # a round trip after the answer, and what came before it
        assert "b.fake:2:1: error: bad line 2 [E1]" in text_of(result)
    assert quiet == []
    # Both servers created a progress token and had it acknowledged: both reported progress.
    acks = [m for m in logged(tmp_path / "fake.log") if m.get("id") == 1001 and "method" not in m]
    assert len(acks) == 2


async def test_calls_without_a_binding_line_say_what_is_missing(daemon: Daemon) -> None:
    async with trio.open_nursery() as nursery:
        client = await connect(nursery, daemon.socket_path)
        init = {"protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "direct", "version": "1"}}  # fmt: skip
        assert (await client.request("initialize", init))["result"]["protocolVersion"] == (
            "2025-03-26"
        )
        status = {"name": "git_command", "arguments": {"subcommand": "status"}}
        reply = await client.request("tools/call", status)
        assert reply["result"]["isError"] is True
        assert "[no_session]" in reply["result"]["content"][0]["text"]
        listed = await client.request("tools/list", {})
        schemas = {t["name"]: t.get("outputSchema") for t in listed["result"]["tools"]}
        assert all(schemas.values())
        await client.aclose()
        nursery.cancel_scope.cancel()


# -- the pump's life --------------------------------------------------------------------------


async def test_the_pump_exits_when_the_host_closes_stdin(daemon: Daemon, repo: Path) -> None:
    proc = await trio.lowlevel.open_process(
        pump_argv(daemon.socket_path, repo), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env=os.environ | ENV,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    line = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    await proc.stdin.send_all(json.dumps(line).encode() + b"\n")
    with trio.fail_after(30):
        reply = await proc.stdout.receive_some()
        assert json.loads(reply)["result"]["serverInfo"]["name"] == "codeward"
        await proc.stdin.aclose()
        assert await proc.wait() == 0
        assert await proc.stdout.receive_some() == b""
    await proc.stdout.aclose()


@pytest.mark.parametrize("handed_off", [True, False], ids=["handoff", "copy"])
async def test_the_pump_exits_when_the_daemon_stops(
    nursery: trio.Nursery, socket_dir: Path, repo: Path, handed_off: bool
) -> None:
    """Whether the daemon serves the host's pipes itself (stdout a pipe: the handoff) or the
    pump copies (stdout not a pipe), a stopping daemon ends the pump, and the host's stdout."""
    own = Daemon(Config(), socket_dir / "codeward.sock")
    await nursery.start(own.run)
    proc = await trio.lowlevel.open_process(
        pump_argv(own.socket_path, repo), stdin=subprocess.PIPE, stderr=subprocess.PIPE,
        stdout=subprocess.PIPE if handed_off else subprocess.DEVNULL, env=os.environ | ENV,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stderr is not None
    await until(lambda: own.sessions.sessions)  # bound: the pump is connected
    threads = 1 if handed_off else 2  # copying takes a thread for stdin
    await until(lambda: len(os.listdir(f"/proc/{proc.pid}/task")) == threads)
    own.request_stop()
    with trio.fail_after(30):
        assert await proc.wait() == 3
        err = await proc.stderr.receive_some()
        if proc.stdout is not None:  # the daemon closed its copy of the host's stdout too
            assert await proc.stdout.receive_some() == b""
    assert b"the daemon closed the connection" in err
    await proc.stdin.aclose()
    await proc.stderr.aclose()
    if proc.stdout is not None:
        await proc.stdout.aclose()


async def test_without_root_the_pump_binds_the_git_top_level(daemon: Daemon, repo: Path) -> None:
    deep = repo / "pkg" / "sub"
    deep.mkdir(parents=True)
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", LAUNCH, "--socket", str(daemon.socket_path), "mcp"],
        cwd=deep, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ | ENV,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    await until(lambda: daemon.sessions.sessions)
    (session,) = daemon.sessions.sessions.values()
    assert session.root == repo
    await proc.stdin.aclose()
    with trio.fail_after(30):
        assert await proc.wait() == 0
    await proc.stdout.aclose()


async def raw_mcp(nursery: trio.Nursery, daemon: Daemon, root: Path) -> Any:
    """A client speaking MCP on the socket itself: the binding line, then initialize."""
    client = await connect(nursery, daemon.socket_path)
    bind = {"jsonrpc": "2.0", "method": mcp_protocol.BIND_METHOD, "params": {"root": str(root)}}
    await client.send_raw(json.dumps(bind).encode() + b"\n")
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    assert (await client.request("initialize", init))["result"]["serverInfo"]
    return client


async def test_a_changed_tool_set_is_announced(daemon: Daemon, repo: Path) -> None:
    async def echo(ctx: ToolContext, args: Any) -> dict[str, Any]:
        return {"ok": True}

    async with trio.open_nursery() as nursery:
        client = await raw_mcp(nursery, daemon, repo)
        REGISTRY.register(Tool("echo_for_test", "Echo.", EchoArgs, echo))
        try:
            listed = await client.request("tools/list", {})
            assert "echo_for_test" in {t["name"] for t in listed["result"]["tools"]}
            reply = await client.request("tools/call", {"name": "echo_for_test"})
            assert reply["result"]["content"][0]["text"] == '{"ok":true}'  # compact JSON
        finally:
            REGISTRY.unregister("echo_for_test")
        await client.request("ping", {})  # a round trip after both changes
        changed = [n for n in client.notifications
                   if n.get("method") == "notifications/tools/list_changed"]  # fmt: skip
        assert len(changed) == 2
        await client.aclose()
        nursery.cancel_scope.cancel()


async def test_a_closed_session_is_opened_again(daemon: Daemon, repo: Path) -> None:
    async with trio.open_nursery() as nursery:
        client = await raw_mcp(nursery, daemon, repo)
        status = {"name": "git_command", "arguments": {"subcommand": "status"}}
        first = await client.request("tools/call", status)
        (session,) = daemon.sessions.sessions.values()
        session.stop()  # `codeward sessions close` does this
        await session.stopped.wait()
        again = await client.request("tools/call", status)
        assert first["result"]["isError"] is False and again["result"]["isError"] is False
        live = [s for s in daemon.sessions.sessions.values() if not s.stopped.is_set()]
        assert len(live) == 1 and live[0] is not session and live[0].root == repo
        await client.aclose()
        nursery.cancel_scope.cancel()


async def test_a_bad_root_fails_calls_with_its_reason(daemon: Daemon, tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        client = await raw_mcp(nursery, daemon, tmp_path / "missing")
        status = {"name": "git_command", "arguments": {"subcommand": "status"}}
        reply = await client.request("tools/call", status)
        assert reply["result"]["isError"] is True
        assert "[file_not_found]" in reply["result"]["content"][0]["text"]
        assert str(tmp_path) not in reply["result"]["content"][0]["text"]
        await client.aclose()
        nursery.cancel_scope.cancel()
