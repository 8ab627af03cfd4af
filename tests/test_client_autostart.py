"""Autostart: connect, else start a daemon under a lock and wait until it answers.

The spawned "daemon" here is a small Python listener (the real daemon is started by
test_cli_e2e.py); it answers every connection with its pid, so the test can stop it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.client import autostart
from codeward.client.connection import DaemonUnreachable
from codeward.protocol.socket_path import ALLOCATOR_ENV, DAEMON_ALLOCATOR
from tests.test_client_connection import private_socket


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


LISTENER = r"""
import os, socket, sys
print("fake daemon starting", flush=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
while True:
    c, _ = s.accept()
    c.sendall(b'{"pid": %d}\n' % os.getpid())
    c.close()
"""


def listener_argv(path: Path, *, tell: bool = False) -> list[str]:
    """The fake daemon; with `tell`, it writes to $CODEWARD_READY_FD once it listens."""
    told = 'os.write(int(os.environ["CODEWARD_READY_FD"]), b"1")\n' if tell else ""
    return [sys.executable, "-c", LISTENER.replace("s.listen(16)\n", "s.listen(16)\n" + told),
            str(path)]  # fmt: skip


def pid_of(sock: socket.socket) -> int:
    with sock, sock.makefile("rb") as f:
        return json.loads(f.readline())["pid"]


def reap(pid: int) -> None:
    """Kill a spawned process and wait for it (it may have been reaped already)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    """Pids of processes a test started; killed and reaped at the end."""
    pids: list[int] = []
    try:
        yield pids
    finally:
        for pid in pids:
            reap(pid)


def starts(log: Path) -> int:
    return log.read_text().count("codeward autostart:") if log.exists() else 0


def test_state_dir_and_daemon_argv() -> None:
    assert autostart.state_dir({"XDG_STATE_HOME": "/x/state"}) == Path("/x/state/codeward")
    assert autostart.state_dir({"HOME": "/home/u"}) == Path("/home/u/.local/state/codeward")
    assert autostart.daemon_log_path({"XDG_STATE_HOME": "/s"}) == Path("/s/codeward/daemon.log")
    argv = autostart.daemon_argv(Path("/run/c.sock"))
    assert argv == [
        sys.executable,
        "-m",
        "codeward.daemon.main",
        "--socket",
        "/run/c.sock",
    ]


def test_the_daemon_is_started_on_the_c_allocator_unless_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    assert DAEMON_ALLOCATOR.items() <= autostart._daemon_env(5, None).items()
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")  # the user's own stands
    env = autostart._daemon_env(5, None)
    assert env["PYTHONMALLOC"] == "pymalloc" and ALLOCATOR_ENV not in env


@pytest.fixture
def slow_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits between connection attempts longer than the tests' ready timeout: a client
    that connects in time was woken by the daemon's pipe, not by polling."""
    monkeypatch.setattr(autostart, "_FIRST_DELAY", 60.0)
    monkeypatch.setattr(autostart, "_MAX_DELAY", 60.0)


@pytest.mark.usefixtures("slow_polling")
def test_the_started_daemon_wakes_the_client_once_it_listens(
    sock_path: Path, tmp_path: Path, spawned: list[int]
) -> None:
    argv = listener_argv(sock_path, tell=True)
    sock = autostart.connect(sock_path, argv=argv, log_path=tmp_path / "log", ready_timeout=30)
    spawned.append(pid_of(sock))


@pytest.mark.usefixtures("slow_polling")
def test_the_real_daemon_wakes_the_client_and_hides_the_pipe_from_children(
    sock_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    sock = autostart.connect(sock_path, log_path=tmp_path / "log", ready_timeout=30)
    with sock, sock.makefile("rb") as replies:
        sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
        pid = json.loads(replies.readline())["result"]["pid"]
        environ = Path(f"/proc/{pid}/environ").read_bytes()  # as it was at exec
        assert b"CODEWARD_READY_FD=" in environ
        # on the C allocator from its start (the client set it), which its children do not get
        assert b"\0PYTHONMALLOC=malloc\0" in b"\0" + environ
        sock.sendall(b'{"jsonrpc":"2.0","id":2,"method":"session/list"}\n')  # once loaded
        assert json.loads(replies.readline())["result"] == {"sessions": []}
        proc = Path(f"/proc/{pid}/task")
        tasks = [proc / task / "children" for task in os.listdir(proc)]
        children = [child for task in tasks for child in task.read_text().split()]
        assert children  # the guardian
        for child in children:
            child_environ = Path(f"/proc/{child}/environ").read_bytes()
            assert b"CODEWARD_READY_FD=" not in child_environ
            assert b"PYTHONMALLOC=" not in child_environ
        sock.sendall(b'{"jsonrpc":"2.0","id":3,"method":"daemon/shutdown"}\n')
        assert json.loads(replies.readline())["result"] == {}
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def test_try_connect_missing_stale_and_bad(sock_path: Path) -> None:
    assert autostart.try_connect(sock_path) is None  # no socket at all
    sock_path.parent.mkdir(parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_path))  # bound, never listening: connect is refused
    stale.close()
    assert autostart.try_connect(sock_path) is None
    with pytest.raises(DaemonUnreachable, match="Cannot connect"):
        autostart.try_connect(sock_path.parent / ("x" * 120))  # AF_UNIX path too long


def test_no_autostart_says_how_to_start(sock_path: Path) -> None:
    with pytest.raises(DaemonUnreachable, match="codeward daemon"):
        autostart.connect(sock_path, autostart=False)
    assert not sock_path.parent.exists()  # nothing created, nothing started


def test_autostart_spawns_detached_and_logs(
    sock_path: Path, tmp_path: Path, spawned: list[int]
) -> None:
    log = tmp_path / "state" / "codeward" / "daemon.log"
    sock = autostart.connect(sock_path, argv=listener_argv(sock_path), log_path=log)
    pid = pid_of(sock)
    spawned.append(pid)
    assert os.getsid(pid) == pid  # its own session: a terminal's ^C does not reach it
    assert stat.S_IMODE(sock_path.parent.stat().st_mode) == 0o700
    assert (sock_path.parent / "autostart.lock").exists()
    text = log.read_text()
    assert starts(log) == 1 and "fake daemon starting" in text
    # a second client finds it running and starts nothing
    assert pid_of(autostart.connect(sock_path, argv=listener_argv(sock_path), log_path=log)) == pid
    assert starts(log) == 1


def test_racing_clients_start_one_daemon(
    sock_path: Path, tmp_path: Path, spawned: list[int]
) -> None:
    log = tmp_path / "daemon.log"
    pids: list[int] = []
    errors: list[BaseException] = []

    def client() -> None:
        try:
            pids.append(
                pid_of(autostart.connect(sock_path, argv=listener_argv(sock_path), log_path=log))
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    spawned.extend(set(pids))
    assert not errors
    assert len(pids) == 4 and len(set(pids)) == 1
    assert starts(log) == 1


def test_daemon_that_exits_early_is_reported_with_its_log(sock_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    argv = [
        sys.executable,
        "-c",
        "import sys; print('config is broken', file=sys.stderr); sys.exit(4)",
    ]
    with pytest.raises(DaemonUnreachable) as info:
        autostart.connect(sock_path, argv=argv, log_path=log)
    assert "status 4" in info.value.message
    assert str(log) in info.value.message
    assert info.value.message.endswith("config is broken")


def test_daemon_that_never_listens_is_stopped(sock_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    argv = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"]
    with pytest.raises(DaemonUnreachable, match="did not become ready"):
        autostart.connect(sock_path, argv=argv, log_path=log, ready_timeout=0.5)
    pid = int(log.read_text().splitlines()[1])
    with pytest.raises(ProcessLookupError):  # terminated and reaped, not left behind
        os.kill(pid, 0)


def test_lock_held_elsewhere_times_out(sock_path: Path, tmp_path: Path) -> None:
    sock_path.parent.mkdir(parents=True)
    fd = os.open(sock_path.parent / "autostart.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(DaemonUnreachable, match="Another client"):
            autostart.connect(sock_path, argv=["false"], log_path=tmp_path / "l", ready_timeout=0.2)
    finally:
        os.close(fd)
    assert not (tmp_path / "l").exists()  # it never got to spawn


def test_unusable_places_are_reported(sock_path: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DaemonUnreachable, match="Not a directory"):
        autostart.connect(blocker / "sub" / "c.sock", argv=["false"])
    (sock_path.parent / "autostart.lock").mkdir(parents=True)
    with pytest.raises(DaemonUnreachable, match="autostart lock"):
        autostart.connect(sock_path, argv=["false"], log_path=tmp_path / "l")
    (sock_path.parent / "autostart.lock").rmdir()
    with pytest.raises(DaemonUnreachable, match="daemon log"):
        autostart.connect(sock_path, argv=["false"], log_path=blocker / "daemon.log")
    with pytest.raises(DaemonUnreachable, match="Cannot start the daemon"):
        autostart.connect(sock_path, argv=[str(tmp_path / "missing")], log_path=tmp_path / "l")


def test_daemon_ignoring_sigterm_is_killed(
    sock_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(autostart, "TERM_GRACE", 0.1)
    log = tmp_path / "daemon.log"
    stubborn = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(os.getpid(), flush=True); time.sleep(60)"
    )
    with pytest.raises(DaemonUnreachable, match="did not become ready"):
        autostart.connect(sock_path, argv=[sys.executable, "-c", stubborn], log_path=log,
                          ready_timeout=0.5)  # fmt: skip
    pid = int(log.read_text().splitlines()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
