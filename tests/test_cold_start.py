"""Cold start: the daemon answers `initialize` before it has loaded its sessions and
language servers, an MCP root's main server starts while they load, and a request starts
only the servers it needs."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio
import trio.testing

from codeward.client.connection import Connection, connect_socket
from codeward.daemon import dialects, server
from codeward.daemon.config import Config
from codeward.daemon.lsp import early, early_process
from codeward.daemon.lsp.defaults import effective_languages
from codeward.daemon.server import Daemon
from codeward.protocol import lsp, mcp
from codeward.protocol.framing import Framing
from codeward.protocol.socket_path import EARLY_ROOT_ENV
from tests.lsp_support import needs
from tests.rpc import connect

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cold", "version": "1"}}  # fmt: skip


async def test_initialize_is_answered_before_the_daemon_has_loaded_its_servers(
    socket_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the language-server and tool modules still load (held here), `initialize` and
    `daemon/status` answer on both dialects; a session waits for the load, then opens."""
    gate = threading.Event()
    monkeypatch.setattr(server, "_import_services", lambda names: gate.wait(30))
    daemon = Daemon(Config(), socket_dir / "codeward.sock")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(daemon.run)
            try:
                await daemon.listening.wait()
                native = await connect(nursery, daemon.socket_path)
                assert (await native.call("initialize", {}))["pid"] == os.getpid()
                assert (await native.call("daemon/status"))["sessions"] == 0
                raw = await connect(nursery, daemon.socket_path)
                bind = {"jsonrpc": "2.0", "method": mcp.BIND_METHOD,
                        "params": {"root": str(project)}}  # fmt: skip
                await raw.send_raw(json.dumps(bind).encode() + b"\n")
                answer = await raw.request("initialize", INIT)
                assert answer["result"]["serverInfo"]["name"] == "codeward"
                assert not daemon.loaded.is_set()  # no session manager: no server can run
                assert not hasattr(daemon, "sessions")
                opened: dict[str, Any] = {}
                listed: dict[str, Any] = {}

                async def open_session() -> None:
                    opened.update(await native.call("session/open", {"root": str(project)}))

                async def list_tools() -> None:
                    listed.update(await raw.request("tools/list", {}))

                async with trio.open_nursery() as waiting:
                    waiting.start_soon(open_session)
                    waiting.start_soon(list_tools)
                    await trio.testing.wait_all_tasks_blocked()
                    assert not opened and not listed  # they wait for the load
                    gate.set()
                assert opened["root"] == str(project)
                assert "get_hover_info" in {t["name"] for t in listed["result"]["tools"]}
            finally:
                gate.set()
            await native.aclose()
            await raw.aclose()
            daemon.request_stop()


async def test_an_editor_waits_for_the_sessions_modules_while_the_daemon_answers(
    socket_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor connecting while the sessions' modules still load (held here) gets its
    dialect once they are there, imported in a worker thread (lsprotocol never loads on the
    event loop); meanwhile the daemon keeps answering other clients."""
    gate = threading.Event()
    monkeypatch.setattr(server, "_import_services", lambda names: gate.wait(30))
    importers: list[threading.Thread] = []
    real_import = importlib.import_module

    def import_module(name: str, package: str | None = None) -> ModuleType:
        if name == dialects.EDITOR_DIALECT:
            importers.append(threading.current_thread())
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    daemon = Daemon(Config(), socket_dir / "codeward.sock")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(daemon.run)
            try:
                await daemon.listening.wait()
                editor = await connect(nursery, daemon.socket_path, Framing.CONTENT_LENGTH)
                await editor.send({"jsonrpc": "2.0", "method": lsp.BIND_METHOD})  # `codeward lsp`
                answered: dict[str, Any] = {}
                done = trio.Event()

                async def initialize() -> None:
                    params = {"processId": os.getpid(), "rootUri": project.as_uri(),
                              "capabilities": {}}  # fmt: skip
                    answered.update(await editor.request("initialize", params))
                    done.set()

                nursery.start_soon(initialize)
                native = await connect(nursery, daemon.socket_path)
                await trio.testing.wait_all_tasks_blocked()
                assert (await native.call("daemon/status"))["sessions"] == 0
                assert not answered  # the editor's dialect waits for the sessions' modules
                gate.set()
                await done.wait()
                assert "capabilities" in answered["result"]
                assert importers and threading.main_thread() not in importers
                await native.aclose()
            finally:
                gate.set()
            await editor.aclose()
            daemon.request_stop()


@needs("basedpyright")
async def test_a_python_hover_starts_no_toml_json_or_yaml_server(
    open_client: Any, project: Path
) -> None:
    """A Python project with a pyproject.toml, a JSON and a YAML file: the first hover and
    diagnostics of a Python file start Python's servers only."""
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0.1"\n')
    (project / "data.json").write_text('{"a": [1, 2]}\n')
    (project / "ci.yaml").write_text("on: push\n")
    (project / "main.py").write_text("import os\n\nprint(os.getcwd())\n")
    client = await open_client(project)
    with trio.fail_after(120):
        hover = await client.tool("get_hover_info", path="main.py", line=3, character=10)
        assert "getcwd" in json.dumps(hover)
        await client.tool("get_diagnostics", path="main.py")
    languages = effective_languages(Config())
    others = {s for name in ("toml", "json", "yaml") for s in languages[name].servers}
    sessions = (await client.call("session/list"))["sessions"]
    started = {s["name"] for session in sessions for s in session["servers"]}
    assert started and started <= set(languages["python"].servers)
    assert not started & others
    await client.aclose()


# What the daemon must not import before it listens: lsprotocol and its converter, the
# sessions and the language-server stack, the tools, git's commands and parsers.
HEAVY = ("lsprotocol", "cattrs", "codeward.daemon.session", "codeward.daemon.lsp.service",
         "codeward.daemon.lsp.server", "codeward.daemon.tools.all",
         "codeward.daemon.git.command", "codeward.protocol.render")  # fmt: skip


def test_the_daemon_listens_without_its_sessions_servers_and_tools_modules() -> None:
    """Everything `codeward.daemon.main` runs up to listening and answering `initialize`
    (the server, connections, MCP's dialect, the handlers, early server starts) imports
    none of the modules the daemon loads in the background."""
    probe = (
        "import sys\n"
        "import codeward.daemon.main, codeward.daemon.server, codeward.daemon.lsp.early_process\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_the_early_start_loads_neither_trio_nor_lsprotocol() -> None:
    """What `codeward.daemon.main` runs before trio (`lsp.early`, which builds and sends
    the early servers' `initialize` with `lsp.early_initialize`) imports neither trio nor
    lsprotocol and its converter."""
    probe = (
        "import sys\n"
        "import codeward.daemon.main, codeward.daemon.lsp.early\n"
        "import codeward.daemon.lsp.early_initialize\n"
        "print([m for m in ('trio', 'lsprotocol', 'cattrs', 'attrs') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_loading_the_sessions_modules_starts_no_process() -> None:
    """The daemon's own modules, loaded while it starts, run no program (`ldconfig -p`,
    which `ctypes.util.find_library` runs, once cost a process start on that path; trio's
    import still runs one, before)."""
    probe = (
        "import ctypes.util, subprocess, trio\n"
        "started = []\n"
        "popen = subprocess.Popen.__init__\n"
        "def spy(self, *args, **kwargs):\n"
        "    started.append(args[0] if args else kwargs.get('args'))\n"
        "    popen(self, *args, **kwargs)\n"
        "subprocess.Popen.__init__ = spy\n"
        "import codeward.daemon.session, codeward.daemon.tools.all, codeward.protocol.render\n"
        "from codeward.daemon import caches\n"
        "caches.trim()\n"
        "print(started)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)  # fmt: skip
    assert out.stdout.strip() == "[]"


def python_project(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0.1"\n')
    (root / "data.json").write_text('{"a": [1, 2]}\n')
    (root / "main.py").write_text("import os\n\nprint(os.getcwd())\n")
    return root


def test_an_early_start_plans_the_main_languages_first_server_only(project: Path) -> None:
    """Python's first installed server for a Python project with TOML and JSON files; its
    restricted form in an untrusted root; nothing for a project of configuration files."""
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0.1"\n')
    (project / "data.json").write_text("{}\n")
    assert early.plan(project, Config(), trusted=True) == []  # configuration files only
    python_project(project)
    python = effective_languages(Config())["python"].servers
    trusted = early.plan(project, Config(), trusted=True)
    untrusted = early.plan(project, Config(), trusted=False)
    assert [one.name for one in trusted] == [one.name for one in untrusted]
    assert len(trusted) == 1 and trusted[0].name in python
    assert os.path.isabs(untrusted[0].command[0])  # restricted: started by absolute path
    assert str(project) not in untrusted[0].env["PATH"]  # and nothing of the root on PATH


@needs("basedpyright")
async def test_an_early_process_nobody_takes_is_stopped(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python_project(project)
    started: list[int] = []

    def noted(root: Path, config: Config) -> list[early.Spawned]:
        spawned = early.spawn(root, config)
        started.extend(one.popen.pid for one in spawned)
        return spawned

    monkeypatch.setattr(early_process, "spawn", noted)
    with trio.fail_after(60):
        await early_process.start_servers(project, Config(), keep_for=0.0)
    assert len(started) == 1
    assert not early_process._waiting  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(ProcessLookupError):
        os.kill(started[0], 0)  # stopped and reaped


@needs("basedpyright")
async def test_an_mcp_root_starts_its_main_server_while_the_sessions_load(
    socket_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The binding line's root gets its Python server's process while the sessions'
    modules still load (held here); the session's server then takes that process (the
    same pid answers the hover), and no TOML or JSON server starts."""
    python_project(project)
    gate = threading.Event()
    real_import = server._import_services  # pyright: ignore[reportPrivateUsage]

    def held(names: tuple[str, ...]) -> None:
        gate.wait(30)
        real_import(names)

    monkeypatch.setattr(server, "_import_services", held)
    spawned = trio.Event()
    pids: list[int] = []
    token = trio.lowlevel.current_trio_token()

    def noted(root: Path, config: Config) -> list[early.Spawned]:
        started = early.spawn(root, config)
        pids.extend(one.popen.pid for one in started)
        trio.from_thread.run_sync(spawned.set, trio_token=token)
        return started

    monkeypatch.setattr(early_process, "spawn", noted)
    daemon = Daemon(Config(), socket_dir / "codeward.sock")
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(daemon.run)
            try:
                await daemon.listening.wait()
                raw = await connect(nursery, daemon.socket_path)
                bind = {"jsonrpc": "2.0", "method": mcp.BIND_METHOD,
                        "params": {"root": str(project)}}  # fmt: skip
                await raw.send_raw(json.dumps(bind).encode() + b"\n")
                assert (await raw.request("initialize", INIT))["result"]
                await spawned.wait()
                assert not daemon.sessions_loaded.is_set()  # started before the sessions
            finally:
                gate.set()
            hover = {"name": "get_hover_info",
                     "arguments": {"path": "main.py", "line": 3, "character": 10}}  # fmt: skip
            answer = await raw.request("tools/call", hover)
            assert "getcwd" in json.dumps(answer["result"])
            [session] = daemon.sessions.sessions.values()
            servers = {s["name"]: s["pid"] for s in session.info()["servers"]}
            assert list(servers.values()) == pids  # the one early process, taken
            languages = effective_languages(Config())
            assert set(servers) <= set(languages["python"].servers)
            await raw.aclose()
            daemon.request_stop()


@needs("basedpyright")
def test_an_autostarting_bridge_has_its_roots_server_started_first(project: Path) -> None:
    """`codeward mcp` with no daemon names its root to the daemon it starts, which starts
    the root's Python server before it listens; that process answers the first hover."""
    from tests.test_cli_e2e import kill_group, wait_gone
    from tests.test_cli_mcp import McpProcess, launch_argv

    python_project(project)
    base = Path(tempfile.mkdtemp(prefix="cwe-", dir="/tmp"))  # AF_UNIX paths are short
    sock = base / "run" / "codeward.sock"
    env = os.environ | {"XDG_STATE_HOME": str(base / "state"),
                        "XDG_CONFIG_HOME": str(base / "config")}  # fmt: skip
    pid = None
    bridge = McpProcess(launch_argv("--socket", str(sock), "--root", str(project), "mcp"),
                        env=env)  # fmt: skip
    try:
        bridge.handshake()
        hover = {"path": "main.py", "line": 3, "character": 10}
        answer = bridge.request("tools/call", {"name": "get_hover_info", "arguments": hover})
        assert "getcwd" in json.dumps(answer["result"])
        with Connection(connect_socket(sock)) as conn:
            conn.initialize("test")
            pid = conn.request("daemon/status", {})["pid"]
            [session] = conn.request("session/list", {})["sessions"]
            servers = {s["name"]: s["pid"] for s in session["servers"]}
            conn.request("daemon/shutdown", {})
        assert bridge.close() in (0, 3)
        assert wait_gone(pid)
        log = (base / "state" / "codeward" / "daemon.log").read_text()
        [name] = servers
        started = log.index(f"{name} started early for {project} (pid {servers[name]})")
        assert started < log.index(" listening on ")  # before the daemon listened
        assert f"{EARLY_ROOT_ENV}" not in bridge.err
    finally:
        if pid is not None:
            kill_group(pid)
        shutil.rmtree(base, ignore_errors=True)


@needs("basedpyright")
def test_an_autostarting_cli_names_its_root_only_for_a_session(project: Path) -> None:
    """A CLI command on a session (`codeward hover`) that starts the daemon names its root:
    the root's Python server starts before the daemon listens and answers the hover;
    `codeward status` (no session) names none, so nothing starts early."""
    from tests.test_cli_e2e import Env, kill_group, wait_gone

    python_project(project)
    env = Env(Path(tempfile.mkdtemp(prefix="cwe-", dir="/tmp")))  # AF_UNIX paths are short
    pid = None
    try:
        status = env.run("--json", "status", cwd=project)
        assert status.returncode == 0, status.stderr
        pid = json.loads(status.stdout)["pid"]
        assert " started early " not in env.log.read_text()
        assert env.run("stop").returncode == 0
        assert wait_gone(pid)
        hover = env.run("--json", "--root", str(project), "hover", "main.py:3:10")
        assert hover.returncode == 0, hover.stderr
        assert "getcwd" in hover.stdout
        with Connection(connect_socket(env.socket)) as conn:
            conn.initialize("test")
            pid = conn.request("daemon/status", {})["pid"]
            [session] = conn.request("session/list", {})["sessions"]
            [(name, server_pid)] = [(s["name"], s["pid"]) for s in session["servers"]]
        log = env.log.read_text()
        last_start = log.rindex("codeward autostart:")
        started = log.index(f"{name} started early for {project} (pid {server_pid})")
        assert last_start < started < log.index(" listening on ", last_start)
        assert env.run("stop").returncode == 0
        assert wait_gone(pid)
    finally:
        if pid is not None:
            kill_group(pid)
        shutil.rmtree(env.base, ignore_errors=True)
