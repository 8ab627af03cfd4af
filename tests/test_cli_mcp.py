"""`codeward mcp`: the MCP stdio bridge, its connection pool, and a missing SDK.

The end-to-end test speaks MCP JSON-RPC to a real `codeward mcp` process, bridged to the
scripted FakeDaemon; test_cli_e2e.py repeats it against the real daemon.
"""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from codeward.client.cli import main
from codeward.client.connection import Connection, ConnectionLost, RemoteError, connect_socket
from codeward.client.mcp_bridge import DaemonPool, call_result, error_text, list_tools
from tests.test_client_connection import (
    FakeDaemon,
    Peer,
    private_socket,
    responder,
)


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


READ_TIMEOUT = 30.0
TOOLS = {
    "tools": [
        {"name": "git_command", "description": "Git.",
         "inputSchema": {"type": "object", "properties": {"subcommand": {"type": "string"}},
                         "required": ["subcommand"]}},
        {"description": "no name"},
    ]
}  # fmt: skip


def echo_or_fail(peer: Peer, req: dict[str, Any]) -> None:
    if req["params"]["name"] == "bad":
        peer.error(req, -32000, "No such tool; call tools/list.", {"kind": "invalid_arguments"})
    else:
        peer.reply(req, {"echo": req["params"]})


class McpProcess:
    """A `codeward mcp` child; lines are read by a thread so every read is bounded."""

    def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self._ids = iter(range(1, 1000))

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            line = self.lines.get(timeout=READ_TIMEOUT)
            assert line, f"codeward mcp exited: {self.stderr()}"
            reply = json.loads(line)
            if reply.get("id") == msg_id:
                return reply

    def handshake(self) -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "test", "version": "1"}},
        )  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def stderr(self) -> str:
        return self.proc.stderr.read().decode() if self.proc.stderr else ""

    def close(self) -> int:
        """Close stdin (the MCP way to end a stdio server) and wait for the exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(READ_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(READ_TIMEOUT)
            if self.proc.stdout:
                self.proc.stdout.close()
            if self.proc.stderr:
                self.proc.stderr.close()


def codeward_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "codeward.client.cli", *args]


def test_mcp_bridge_lists_and_forwards(sock_path: Path, tmp_path: Path) -> None:
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    script = responder({"tools/list": TOOLS, "tools/call": echo_or_fail})
    with FakeDaemon(sock_path, script) as fake:
        mcp = McpProcess(codeward_argv("--socket", str(sock_path), "mcp"), cwd=tmp_path / "proj")
        try:
            init = mcp.handshake()["result"]
            assert init["serverInfo"]["name"] == "codeward"
            assert "tools" in init["capabilities"]
            tools = mcp.request("tools/list")["result"]["tools"]
            assert [t["name"] for t in tools] == ["git_command"]
            assert tools[0]["inputSchema"]["required"] == ["subcommand"]
            ok = mcp.request(
                "tools/call", {"name": "git_command", "arguments": {"subcommand": "status"}}
            )
            assert ok["result"]["isError"] is False
            assert json.loads(ok["result"]["content"][0]["text"]) == {
                "echo": {"name": "git_command", "arguments": {"subcommand": "status"}}
            }
            bad = mcp.request("tools/call", {"name": "bad", "arguments": {}})
            assert bad["result"]["isError"] is True
            assert bad["result"]["content"][0]["text"] == (
                "No such tool; call tools/list. [invalid_arguments]"
            )
        finally:
            assert mcp.close() == 0
    assert fake.requests("tools/list")[0]["params"] == {"format": "mcp"}
    roots = {r["params"]["root"] for r in fake.requests("session/open")}
    assert roots == {str(tmp_path / "proj")}
    assert all(
        r["params"]["capabilities"] == {"confirm": False, "progress": False}
        for r in fake.requests("initialize")
    )


def test_mcp_without_the_sdk_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, sock_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp...` now raises ImportError
    err = io.StringIO()
    code = main(["--socket", str(sock_path), "mcp"], stdin=io.StringIO(), stdout=io.StringIO(),
                stderr=err)  # fmt: skip
    assert code == 1
    assert "pip install 'codeward[mcp]'" in err.getvalue()
    assert not sock_path.exists()


def test_mcp_with_no_daemon_exits_3(sock_path: Path) -> None:
    err = io.StringIO()
    code = main(["--no-autostart", "--socket", str(sock_path), "mcp"], stdin=io.StringIO(),
                stdout=io.StringIO(), stderr=err)  # fmt: skip
    assert code == 3
    assert "codeward daemon" in err.getvalue()


def opener(path: Path) -> Any:
    def open_one() -> Connection:
        conn = Connection(connect_socket(path))
        conn.initialize("test")
        return conn

    return open_one


def test_pool_runs_concurrent_calls_on_separate_connections(sock_path: Path) -> None:
    both_arrived = threading.Barrier(2, timeout=READ_TIMEOUT)

    def slow(peer: Peer, req: dict[str, Any]) -> None:
        if req["params"]["name"] in ("a", "b"):
            both_arrived.wait()  # would break if the pool served one call at a time
        peer.reply(req, {"ok": req["params"]["name"]})

    results: list[Any] = []
    with FakeDaemon(sock_path, responder({"tools/call": slow})) as fake:
        pool = DaemonPool(opener(sock_path), timeout=READ_TIMEOUT)
        threads = [
            threading.Thread(target=lambda n=n: results.append(call_result(pool, n, None)))
            for n in ("a", "b")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(READ_TIMEOUT)
        again = call_result(pool, "c", {"x": 1})  # reuses an idle connection
        pool.close()
    assert sorted(results) == [('{\n  "ok": "a"\n}', False), ('{\n  "ok": "b"\n}', False)]
    assert again == ('{\n  "ok": "c"\n}', False)
    assert fake.connections == 2


def test_pool_replaces_a_lost_connection(sock_path: Path) -> None:
    calls = {"n": 0}

    def flaky(peer: Peer, req: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            peer.close()
        else:
            peer.reply(req, {"tools": [{"name": "t"}, "junk", {"name": 3}]})

    with FakeDaemon(sock_path, responder({"tools/list": flaky})) as fake:
        pool = DaemonPool(opener(sock_path), timeout=READ_TIMEOUT)
        pool.warm()
        with pytest.raises(ConnectionLost):
            list_tools(pool)
        assert list_tools(pool) == [{"name": "t"}]
        pool.close()
    assert fake.connections == 2


def test_error_text() -> None:
    assert error_text(RemoteError(-32000, "Denied.", {"kind": "confirmation_denied"})) == (
        "Denied. [confirmation_denied]"
    )
    assert error_text(RemoteError(-32601, "No method.")) == "No method. [code -32601]"
    assert error_text(ConnectionLost("gone")) == "gone"


def test_mcp_bridge_in_process(sock_path: Path, tmp_path: Path) -> None:
    """The same bridge run by `main` in a thread, over pipes (its code is measured here)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stdin = open(in_r, encoding="utf-8")  # noqa: SIM115
    stdout = open(out_w, "w", encoding="utf-8")  # noqa: SIM115
    requests = open(in_w, "w", encoding="utf-8")  # noqa: SIM115
    replies = open(out_r, encoding="utf-8")  # noqa: SIM115
    codes: list[int] = []

    def serve() -> None:
        try:
            codes.append(main(["--socket", str(sock_path), "--root", str(tmp_path), "mcp"],
                              stdin=stdin, stdout=stdout, stderr=io.StringIO()))  # fmt: skip
        finally:
            stdout.close()

    def send(message: dict[str, Any]) -> None:
        requests.write(json.dumps(message) + "\n")
        requests.flush()

    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in replies], daemon=True)
    script = responder({"tools/list": TOOLS, "tools/call": echo_or_fail})
    with FakeDaemon(sock_path, script):
        server = threading.Thread(target=serve)
        server.start()
        reader.start()
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}})  # fmt: skip
        assert json.loads(lines.get(timeout=READ_TIMEOUT))["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = json.loads(lines.get(timeout=READ_TIMEOUT))
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "bad", "arguments": {}}})  # fmt: skip
        failed = json.loads(lines.get(timeout=READ_TIMEOUT))
        requests.close()
        server.join(READ_TIMEOUT)
        assert not server.is_alive()
    reader.join(READ_TIMEOUT)
    replies.close()
    stdin.close()
    assert codes == [0]
    assert [t["name"] for t in listed["result"]["tools"]] == ["git_command"]
    assert failed["result"]["isError"] is True
