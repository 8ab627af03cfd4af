"""Cold start: the daemon answers `initialize` before it has loaded its sessions and
language servers, and a request starts only the servers it needs."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from codeward.daemon import server
from codeward.daemon.config import Config
from codeward.daemon.lsp.defaults import effective_languages
from codeward.daemon.server import Daemon
from codeward.protocol import mcp
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
    monkeypatch.setattr(server, "_import_services", lambda: gate.wait(30))
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
