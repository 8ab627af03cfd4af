"""Nothing outlives the daemon, however it dies: a real `codeward daemon` subprocess with
Python, Go and C servers warm and a git command running, killed with SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.client.connection import Connection, connect_socket
from codeward.daemon.config import Config
from codeward.daemon.guardian import record_path
from codeward.daemon.reaper import read_record, start_time
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.leaks import reap_zombies
from tests.lsp_support import fake_config, fake_server, needs
from tests.test_cli_e2e import CODEWARD, Env, kill_group, wait_ready

GONE_WITHIN = 2.0  # seconds after the SIGKILL


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every live (not zombie) descendant of `pid`."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError, IndexError):
            continue
        if fields[0] not in ("Z", "X"):
            parents[int(entry.name)] = int(fields[1])
            commands[int(entry.name)] = command.strip()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def alive(pids: dict[int, int]) -> list[int]:
    """Those of `pids` (pid -> start time) still running: not gone, not a zombie, and not
    a process that took the pid since."""
    reap_zombies()  # this test process is a subreaper: orphans come back to it
    left = []
    for pid, started in pids.items():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and start_time(pid) == started:
            left.append(pid)
    return left


def wait_all_gone(pids: dict[int, int], within: float) -> list[int]:
    """Poll (another process's state, with a deadline) until none of `pids` runs."""
    deadline = time.monotonic() + within
    while (left := alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def env() -> Iterator[Env]:
    base = Path(tempfile.mkdtemp(prefix="cwo-", dir="/tmp"))  # AF_UNIX paths are short
    try:
        yield Env(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def start_daemon(env: Env) -> subprocess.Popen[bytes]:
    env.log.parent.mkdir(parents=True, exist_ok=True)
    with open(env.log, "ab") as log:
        proc = subprocess.Popen(
            [CODEWARD, "daemon", "--socket", str(env.socket)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env.vars,
            start_new_session=True,
        )  # fmt: skip
    wait_ready(env.socket, proc, env.log)
    return proc


def project(base: Path) -> Path:
    root = base / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=30)
    (root / "a.py").write_text("import os\n\nprint(os.sep)\n")
    (root / "go.mod").write_text("module example.com/demo\n\ngo 1.19\n")
    (root / "main.go").write_text(
        'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println()\n}\n'
    )
    (root / "main.c").write_text("int main(void) {\n  return 0;\n}\n")
    return Path(os.path.realpath(root))


def call(conn: Connection, tool: str, **arguments: Any) -> Any:
    return conn.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)


@needs("basedpyright", "ruff", "gopls", "clangd")
def test_sigkill_of_the_daemon_leaves_no_process_behind(env: Env) -> None:
    root = project(env.base)
    daemon = start_daemon(env)
    silent = socket.create_server(("127.0.0.1", 0))  # a git remote that never answers
    try:
        with Connection(connect_socket(env.socket)) as conn:
            conn.open_session(root)
            for path in ("a.py", "main.go", "main.c"):  # warm: every server answers
                assert "diagnostics" in call(conn, "get_diagnostics", path=path)
            port = silent.getsockname()[1]
            hung = connect_socket(env.socket)  # asks, and never reads the answer
            fetch = {"subcommand": "fetch", "args": [f"git://127.0.0.1:{port}/x"]}
            hung.sendall(
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/open",
                            "params": {"root": str(root)}}).encode() + b"\n"
                + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "git_command", "arguments": fetch}}).encode()
                + b"\n"
            )  # fmt: skip
            silent.settimeout(30)
            peer, _ = silent.accept()  # git is connected, and waits for an answer
            servers = [s["name"] for s in conn.request("session/list")["sessions"][0]["servers"]]
            assert sorted(servers) == ["basedpyright", "clangd", "gopls", "ruff"]
        before = descendants(daemon.pid)
        commands = " ".join(before.values())
        for program in ("langserver", "ruff", "gopls", "clangd", "git", "reaper.py"):
            assert program in commands, f"{program} is not running: {before}"
        pids = {pid: start_time(pid) for pid in before}
        # Some stopped, as a hung server would be: SIGKILL reaches them anyway.
        gopls = next(pid for pid, command in before.items() if "gopls" in command)
        os.kill(gopls, signal.SIGSTOP)

        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)
        left = wait_all_gone(pids, GONE_WITHIN)
        assert not left, {pid: before[pid] for pid in left}
        assert not record_of(env).exists()  # the guardian cleaned up after itself
        peer.close()
        hung.close()

        # The next CLI call starts a daemon over the stale socket, and it works.
        assert env.socket.exists()
        status = env.json("status")
        assert status["pid"] != daemon.pid
        assert env.json("git", "status", cwd=root)["exit_code"] == 0
    finally:
        silent.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            env.run("stop")
        if daemon.poll() is None:
            kill_group(daemon.pid)
            daemon.wait(10)


def record_of(env: Env) -> Path:
    return record_path(env.socket)


@needs("ruff")
def test_a_new_daemon_reaps_what_a_killed_daemon_and_guardian_left(env: Env) -> None:
    """Both killed at once (the guardian too): the record lets the next daemon reap."""
    root = project(env.base)
    (root / "main.go").unlink()
    config = env.base / "config" / "codeward"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[languages.python]\npatterns = ["*.py"]\nservers = ["ruff"]\n'
    )
    daemon = start_daemon(env)
    try:
        with Connection(connect_socket(env.socket)) as conn:
            conn.open_session(root)
            call(conn, "get_diagnostics", path="a.py")
        before = descendants(daemon.pid)
        ruff = next(pid for pid, command in before.items() if "ruff" in command)
        guardian = next(pid for pid, command in before.items() if "reaper.py" in command)
        recorded = {ruff: (start_time(ruff),) * 2}  # as the daemon registered it
        wait_for(lambda: read_record(record_of(env)) == recorded, 10, "the record")
        os.kill(ruff, signal.SIGSTOP)  # hung: it would not even notice its stdin closing
        os.kill(guardian, signal.SIGKILL)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)
        with contextlib.suppress(OSError):
            os.waitpid(guardian, 0)
        assert alive({ruff: start_time(ruff)}) == [ruff]  # left behind, stopped

        second = start_daemon(env)  # reaps it before it serves
        try:
            assert wait_all_gone({ruff: start_time(ruff)}, GONE_WITHIN) == []
            assert "killed 1 process groups a previous daemon left behind" in env.log.read_text()
        finally:
            env.run("stop")
            second.wait(30)
    finally:
        if daemon.poll() is None:
            kill_group(daemon.pid)
            daemon.wait(10)


def test_a_record_never_kills_a_pid_used_again(tmp_path: Path) -> None:
    """A recorded leader whose pid now belongs to another process group is left alone."""
    from codeward.daemon.reaper import Table, reap_record

    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        wait_for(lambda: start_time(other.pid) > 0, 10, "the process to start")
        record = tmp_path / "codeward.sock.procs"
        started = start_time(other.pid)
        Table(record, {other.pid: (started - 2, started - 1)}).close()  # an older process
        assert reap_record(record) == 0
        assert other.poll() is None and not record.exists()
        Table(record, {other.pid: (started - 1, started)}).close()  # this very one: ours
        assert reap_record(record) == 1
        assert other.wait(10) == -signal.SIGKILL
        record.write_text(f"boot another-boot\n{os.getpid()} {start_time(os.getpid())}\n")
        assert reap_record(record) == 0  # from another boot: nothing in it is ours
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


class TestGuardianInProcess:
    """The daemon's side of the guardian, with an in-process daemon and the fake server."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        return fake_config({"fake": fake_server("ok")})

    async def test_a_dead_guardian_is_replaced_and_told_every_live_group(
        self, open_client: OpenClient, project: Path, daemon: Daemon
    ) -> None:
        (project / "a.fake").write_text("good\n")
        client = await open_client(project)
        await client.call(
            "tools/call", {"name": "get_diagnostics", "arguments": {"path": "a.fake"}}
        )
        (session,) = daemon.sessions.sessions.values()
        server = session.lsp.pool.servers["fake"].pid
        assert server is not None
        guard = daemon.guardian
        record = record_path(daemon.socket_path)
        with trio.fail_after(10):
            while read_record(record) != {server: (start_time(server),) * 2}:
                await trio.sleep(0.02)  # written by another process: polled, with a deadline
            first = guard.pid
            assert first is not None and guard.generation == 1
            record.unlink()  # the daemon writes it anew when it starts the next guardian
            os.kill(first, signal.SIGKILL)
            while guard.generation < 2:
                await trio.sleep(0.02)
            assert guard.pid != first
            while read_record(record) != {server: (start_time(server),) * 2}:
                await trio.sleep(0.02)
