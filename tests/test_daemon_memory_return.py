"""The daemon's own memory comes back once its sessions close: a real daemon process,
started as a user starts it by hand (its environment names no allocator), serves a
session whose project diagnostics hold tens of thousands of diagnostics, and its resident
size returns to within 20% of its size at start after the session closes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.main import on_c_allocator
from codeward.protocol.socket_path import ALLOCATOR_ENV, DAEMON_ALLOCATOR
from tests.test_daemon_lifecycle import wait_for_socket

MODULES = 300
UNUSED = 60  # unused imports per module: as many ruff diagnostics (F401)
GOAL = 1.2  # the daemon's memory after the close against its start


class Client:
    """A blocking NDJSON client of the daemon's socket."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(120)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")
        self.ids = 0

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        reply = json.loads(self.reader.readline())
        assert "error" not in reply, reply
        return reply["result"]

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        entries = [e.decode() for e in f.read().split(b"\0") if b"=" in e]
    return dict(e.split("=", 1) for e in entries)


@pytest.fixture
def noisy_project(tmp_path: Path) -> Path:
    """Modules that each import `UNUSED` names they never use."""
    root = tmp_path / "project"
    for i in range(MODULES):
        package = root / f"pkg{i // 50}"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
        lines = [f"from os.path import join as j{k}" for k in range(UNUSED)]
        (package / f"m{i}.py").write_text("\n".join(lines) + f"\n\nSIZE = {i}\n")
    return root


@pytest.fixture
def daemon(
    socket_dir: Path, private_config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[subprocess.Popen[bytes]]:
    """A daemon run by hand: `python -m codeward.daemon.main`, no allocator named; Python
    files are ruff's alone."""
    (private_config_home / "codeward").mkdir(exist_ok=True)
    (private_config_home / "codeward" / "config.toml").write_text(
        '[languages.python]\npatterns = ["*.py"]\nservers = ["ruff"]\n'
    )
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    argv = [sys.executable, "-m", "codeward.daemon.main", "--socket", str(socket_dir / "s")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for_socket(proc, socket_dir / "s")
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.mark.servers("ruff")
def test_memory_comes_back_after_the_sessions_close(
    daemon: subprocess.Popen[bytes], socket_dir: Path, noisy_project: Path
) -> None:
    # it executed itself again with the C allocator (same process), which the server's
    # environment does not inherit
    assert environ(daemon.pid).get("PYTHONMALLOC") == "malloc"
    client = Client(socket_dir / "s")
    try:
        client.call("tools/list", {})  # answered once the daemon has loaded its modules
        start = rss(daemon.pid)
        client.call("trust/set", {"root": str(noisy_project)})
        client.call("session/open", {"root": str(noisy_project)})
        arguments = {"limit": 1_000_000}
        answer = client.call("tools/call", {"name": "get_diagnostics", "arguments": arguments})
        found = answer["diagnostics"]
        assert len(found) >= MODULES * UNUSED, len(found)
        [session] = client.call("session/list", {})["sessions"]
        [ruff] = [s["pid"] for s in session["servers"] if s["name"] == "ruff"]
        assert "PYTHONMALLOC" not in environ(ruff)
        held = rss(daemon.pid)
        assert held > start * GOAL  # the session's diagnostics weighed on it
        assert client.call("session/close", {"terminate": True}) == {}
        deadline = time.monotonic() + 30  # the trims after the session and its server
        while rss(daemon.pid) > start * GOAL and time.monotonic() < deadline:
            time.sleep(0.1)
        after = rss(daemon.pid)
        assert after <= start * GOAL, (start >> 20, held >> 20, after >> 20)
    finally:
        client.close()


def test_the_daemon_executes_itself_on_the_c_allocator_unless_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executed: list[tuple[str, list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execve", lambda *call: executed.append(call))
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv(ALLOCATOR_ENV, raising=False)
    on_c_allocator()  # started by hand: once more, the same command, with the allocator
    [(program, argv, env)] = executed
    assert [program, *argv[1:]] == [sys.executable, *sys.orig_argv[1:]]
    assert env == {**os.environ, **DAEMON_ALLOCATOR}
    executed.clear()
    monkeypatch.setenv("PYTHONMALLOC", "debug")  # the user's own stands
    on_c_allocator()
    assert executed == [] and os.environ["PYTHONMALLOC"] == "debug"
    monkeypatch.setattr(os, "environ", {**os.environ, **DAEMON_ALLOCATOR})
    on_c_allocator()  # started with it: it leaves the environment the servers get
    assert executed == []
    assert "PYTHONMALLOC" not in os.environ and ALLOCATOR_ENV not in os.environ
