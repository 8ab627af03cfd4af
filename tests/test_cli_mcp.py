"""`codeward mcp` as a process: its lean start-up, no daemon, and a daemon autostarted by
the first bridge. (test_mcp.py drives it with the MCP SDK; test_cli_e2e.py with raw lines.)
"""

from __future__ import annotations

import contextlib
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
import time
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


def test_the_bridge_that_starts_the_daemon_answers_initialize_as_the_daemon_would(
    tmp_path: Path,
) -> None:
    """A bridge that had to start the daemon answers the host's `initialize` itself, with
    the daemon's own answer (a second bridge, which finds the daemon, gets the daemon's),
    and the daemon does not answer it again: the next line is the answer to the next
    request."""
    from tests.test_cli_e2e import kill_group, wait_gone  # that module imports this one

    base = Path(tempfile.mkdtemp(prefix="cwm-", dir="/tmp"))  # AF_UNIX paths are short
    sock = base / "run" / "codeward.sock"
    env = os.environ | {"XDG_STATE_HOME": str(base / "state"),
                        "XDG_CONFIG_HOME": str(base / "config")}  # fmt: skip
    argv = launch_argv("--socket", str(sock), "--root", str(tmp_path), "mcp")
    init = {"protocolVersion": "2024-11-05", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
    pid = None
    first, second = McpProcess(argv, env=env), None

    def replies(bridge: McpProcess) -> Iterator[dict[str, Any]]:
        """The bridge's answers (a tools/list_changed notification may come between)."""
        while line := bridge.lines.get(timeout=READ_TIMEOUT):
            if "id" in (message := json.loads(line)):
                yield message

    try:
        first.send({"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": init})
        answered = json.loads(first.lines.get(timeout=READ_TIMEOUT))
        first.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = next(replies(first))
        assert listed["id"] == 2 and listed["result"]["tools"]  # (initialized: no error)
        with Connection(connect_socket(sock)) as conn:
            conn.initialize("test")
            pid = conn.request("daemon/status", {})["pid"]
        second = McpProcess(argv, env=env)
        second.send({"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": init})
        assert next(replies(second)) == answered
        assert answered["result"]["protocolVersion"] == "2024-11-05"
        assert answered["result"]["instructions"].count(tmp_path.name) == 1
        log = (base / "state" / "codeward" / "daemon.log").read_text()
        assert log.count("codeward autostart:") == 1  # the first bridge started it
        assert first.close() == 0 and second.close() == 0
        assert list(replies(first)) == []  # nothing more came
        with Connection(connect_socket(sock)) as conn:
            conn.initialize("test")
            conn.request("daemon/shutdown", {})
        assert wait_gone(pid)
    finally:
        for bridge in (first, second):
            if bridge is not None and bridge.proc.poll() is None:
                bridge.close()
        if pid is None:  # a failure before it was asked: stop the daemon all the same
            with contextlib.suppress(OSError), Connection(connect_socket(sock)) as conn:
                conn.initialize("test")
                pid = conn.request("daemon/status", {})["pid"]
        if pid is not None:
            kill_group(pid)
        shutil.rmtree(base, ignore_errors=True)


class _Starting:
    """A daemon starting, as `pump.greet` sees it: a pipe that turns readable when it
    listens, and a deadline."""

    def __init__(self) -> None:
        self.ready_fd, self.ready_write = os.pipe()
        self.deadline = time.monotonic() + READ_TIMEOUT


def test_greet_answers_initialize_and_keeps_what_it_read(tmp_path: Path) -> None:
    """`pump.greet` reads the host's first line while the daemon starts: an `initialize`
    is answered (the bytes read and its id in JSON are returned for the handoff); anything
    else is only kept; it reads nothing once the daemon listens."""
    from codeward.client import pump

    starting = _Starting()
    cases = [
        (b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":' + json.dumps(
            {"protocolVersion": "1999-01-01", "clientInfo": {"name": "h"}}).encode() + b"}\n{",
         "7"),
        (b'{"jsonrpc":"2.0","id":"x\\"y","method":"initialize","params":{"protocolVersion":'
         b'"2025-06-18","clientInfo":{}}}\n', '"x\\"y"'),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', ""),
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
         b'"clientInfo":{}}}\n', ""),  # the daemon says what is wrong
        (b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":'
         b'"2025-06-18","clientInfo":{}}}\n', ""),
        (b"not json\n", ""),
    ]  # fmt: skip
    try:
        for sent, answered in cases:
            host_in, stdin = os.pipe()
            stdout, host_out = os.pipe()
            os.write(stdin, sent)
            got = pump.greet(starting, tmp_path, host_in, host_out)  # type: ignore[arg-type]
            assert got == (sent, answered), sent
            os.close(host_out)
            reply = os.read(stdout, 65536)
            if answered:
                message = json.loads(reply)
                assert json.dumps(message["id"]) == answered
                assert message["result"]["protocolVersion"] in ("2025-11-25", "2025-06-18")
                assert tmp_path.name in message["result"]["instructions"]
            else:
                assert reply == b""
            for fd in (host_in, stdin, stdout):
                os.close(fd)
        host_in, stdin = os.pipe()
        os.write(starting.ready_write, b"1")  # the daemon listens: it answers
        assert pump.greet(starting, tmp_path, host_in, stdin) == (b"", "")
        os.close(stdin)  # the host ended before saying anything
        assert pump.greet(_Starting(), tmp_path, host_in, stdin) == (b"", "")
        os.close(host_in)
    finally:
        os.close(starting.ready_fd)
        os.close(starting.ready_write)
