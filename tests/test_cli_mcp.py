"""`codeward mcp` as a process: its lean start-up, no daemon, and a daemon autostarted by
the first bridge. (test_mcp.py drives it with the MCP SDK; test_cli_e2e.py with raw lines.)
"""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from codeward.client.cli import main
from codeward.client.connection import Connection, connect_socket
from codeward.protocol.mcp import BIND_METHOD
from tests.test_cli_imports import forbidden, imported_modules
from tests.test_client_connection import private_socket


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


READ_TIMEOUT = 30.0
LAUNCH = "import sys; from codeward.client.entry import main; sys.exit(main())"


class McpProcess:
    """A `codeward mcp` child; lines are read by a thread so every read is bounded."""

    def __init__(
        self, argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self._ids = iter(range(1, 1000))
        self.err = ""  # stderr, once closed

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
        """Close stdin (the MCP way to end a stdio server) and wait for the exit code; what
        it wrote to stderr is kept in `err`."""
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
            self.err = self.stderr()
            if self.proc.stderr:
                self.proc.stderr.close()


def launch_argv(*args: str) -> list[str]:
    """What the console script runs (`codeward.client.entry:main`), with `args`."""
    return [sys.executable, "-c", LAUNCH, *args]


def test_the_pump_loads_nothing_heavy_and_binds_first(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        listener.settimeout(READ_TIMEOUT)
        proc = subprocess.Popen(
            launch_argv("--socket", str(path), "--root", str(tmp_path), "mcp"),
            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=os.environ | {"PYTHONPROFILEIMPORTTIME": "1"},
        )  # fmt: skip
        conn, _ = listener.accept()
        with conn:
            first = conn.makefile("rb").read()  # up to the end the pump sends once stdin ends
        _, stderr = proc.communicate(timeout=READ_TIMEOUT)
    assert proc.returncode == 0  # stdin was empty: the host ended the session
    assert json.loads(first) == {"jsonrpc": "2.0", "method": BIND_METHOD,
                                 "params": {"root": str(tmp_path)}}  # fmt: skip
    names = imported_modules(stderr.decode())
    assert "codeward.client.pump" in names
    assert forbidden(names) == set()
    heavy = {"codeward.client.cli", "codeward.client.cli_parser", "codeward.client.invocation",
             "codeward.client.connection", "argparse", "json", "subprocess"}  # fmt: skip
    assert names & heavy == set()


def test_mcp_with_no_daemon_exits_3(tmp_path: Path) -> None:
    err = io.StringIO()
    sock = str(tmp_path / "none.sock")
    code = main(["--no-autostart", "--socket", sock, "mcp"], stdin=io.StringIO(),
                stdout=io.StringIO(), stderr=err)  # fmt: skip
    assert code == 3
    assert "codeward daemon" in err.getvalue()
    proc = subprocess.run(launch_argv("--no-autostart", "--socket", sock, "mcp"),
                          capture_output=True, text=True, timeout=READ_TIMEOUT)  # fmt: skip
    assert proc.returncode == 3 and "codeward daemon" in proc.stderr
    assert proc.stdout == ""


def test_the_first_bridge_autostarts_the_daemon(tmp_path: Path) -> None:
    from tests.test_cli_e2e import kill_group, wait_gone  # that module imports this one

    base = Path(tempfile.mkdtemp(prefix="cwm-", dir="/tmp"))  # AF_UNIX paths are short
    sock = base / "run" / "codeward.sock"
    env = os.environ | {"XDG_STATE_HOME": str(base / "state"),
                        "XDG_CONFIG_HOME": str(base / "config")}  # fmt: skip
    pid = None
    argv = launch_argv("--socket", str(sock), "--root", str(tmp_path), "mcp")
    bridge = McpProcess([argv[0], "-X", "importtime", *argv[1:]], env=env)
    try:
        init = bridge.handshake()["result"]
        assert init["serverInfo"]["name"] == "codeward"
        listed = bridge.request("tools/list")["result"]["tools"]
        assert "git_command" in {t["name"] for t in listed}
        assert bridge.close() == 0
        assert "codeward autostart:" in (base / "state" / "codeward" / "daemon.log").read_text()
        # The bridge that started the daemon and handed it stdin and stdout stayed lean.
        names = imported_modules(bridge.err)
        assert {"codeward.client.pump", "codeward.client.autostart"} <= names
        assert forbidden(names) == set()
        with Connection(connect_socket(sock)) as conn:
            conn.initialize("test")
            pid = conn.request("daemon/status", {})["pid"]
            assert pid != bridge.proc.pid
            conn.request("daemon/shutdown", {})
        assert wait_gone(pid)
    finally:
        if pid is not None:
            kill_group(pid)
        shutil.rmtree(base, ignore_errors=True)
