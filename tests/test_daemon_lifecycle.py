"""Starting and stopping: socket directory rules, stale sockets, the start lock, signals,
socket activation, sd_notify and the watchdog, config errors."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from codeward.daemon import systemd
from codeward.daemon.config import ConfigError, PolicyConfig, load_config, load_project_config
from codeward.daemon.listener import (
    ListenerError,
    acquire_start_lock,
    bind_socket,
    prepare_directory,
)

DAEMON = [sys.executable, "-m", "codeward.daemon.main"]


def status_over(path: Path, timeout: float = 10.0) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)["result"]


def wait_for_socket(proc: subprocess.Popen, path: Path) -> None:
    """Block until the daemon answers (it prints its listening line to stderr first)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if b"listening on" in line:
            return
    raise AssertionError(f"daemon exited with {proc.wait()} before listening")


def test_directory_is_made_private(socket_dir: Path) -> None:
    prepare_directory(socket_dir / "deeper")
    assert (socket_dir.stat().st_mode & 0o777) == 0o700
    assert ((socket_dir / "deeper").stat().st_mode & 0o777) == 0o700


def test_existing_directories_are_checked_never_changed(socket_dir: Path) -> None:
    socket_dir.mkdir(mode=0o755)
    os.chmod(socket_dir, 0o755)
    prepare_directory(socket_dir)  # only the owner can write: fine, and left as it is
    assert (socket_dir.stat().st_mode & 0o777) == 0o755
    os.chmod(socket_dir, 0o777)
    with pytest.raises(ListenerError, match="writable by others"):
        prepare_directory(socket_dir)
    assert (socket_dir.stat().st_mode & 0o777) == 0o777
    os.chmod(socket_dir, 0o1777)  # sticky, like /tmp: others cannot replace our socket
    prepare_directory(socket_dir)
    assert (socket_dir.stat().st_mode & 0o7777) == 0o1777


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to chown the directory to another uid")
def test_directory_owned_by_another_user_is_refused(socket_dir: Path) -> None:
    socket_dir.mkdir(mode=0o700)
    os.chown(socket_dir, 65534, 65534)
    with pytest.raises(ListenerError, match="not by you"):
        prepare_directory(socket_dir)


def test_non_directory_is_refused(socket_dir: Path) -> None:
    socket_dir.parent.mkdir(exist_ok=True)
    socket_dir.write_text("x")
    with pytest.raises(ListenerError):
        prepare_directory(socket_dir)


def test_socket_is_0600_and_stale_socket_is_replaced(socket_dir: Path) -> None:
    prepare_directory(socket_dir)
    path = socket_dir / "codeward.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a socket file nobody listens on
    sock = bind_socket(path)
    try:
        assert (path.stat().st_mode & 0o777) == 0o600
        with pytest.raises(ListenerError, match="already running"):
            bind_socket(path)
    finally:
        sock.close()


def test_a_regular_file_in_the_way_is_refused(socket_dir: Path) -> None:
    prepare_directory(socket_dir)
    (socket_dir / "codeward.sock").write_text("x")
    with pytest.raises(ListenerError, match="not a socket"):
        bind_socket(socket_dir / "codeward.sock")


def test_start_lock_lets_one_daemon_through(socket_dir: Path) -> None:
    prepare_directory(socket_dir)
    path = socket_dir / "codeward.sock"
    fd = acquire_start_lock(path)
    try:
        with pytest.raises(ListenerError, match="another codeward daemon"):
            acquire_start_lock(path)
        os.close(acquire_start_lock(socket_dir / "other.sock"))  # another socket, another lock
    finally:
        os.close(fd)
    os.close(acquire_start_lock(path))


def test_sigterm_stops_gracefully_and_removes_the_socket(socket_dir: Path) -> None:
    path = socket_dir / "codeward.sock"
    proc = subprocess.Popen([*DAEMON, "--socket", str(path)], stderr=subprocess.PIPE)
    try:
        wait_for_socket(proc, path)
        assert status_over(path)["pid"] == proc.pid
        second = subprocess.run([*DAEMON, "--socket", str(path)], capture_output=True, timeout=30)
        assert second.returncode == 1
        assert b"another codeward daemon" in second.stderr
        proc.send_signal(signal.SIGHUP)
        assert proc.stderr is not None
        assert any(b"config reloaded" in line for line in proc.stderr)  # reads up to the line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not path.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_socket_activation_and_notify(socket_dir: Path) -> None:
    """A stand-in for systemd: a bound socket as fd 3 and a datagram NOTIFY_SOCKET."""
    prepare_directory(socket_dir)
    path = socket_dir / "activated.sock"
    listening = bind_socket(path)
    notify_path = socket_dir / "notify.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(30)
    # exec keeps the pid, so LISTEN_PID can name the daemon itself
    launcher = textwrap.dedent(
        """
        import os, sys
        os.dup2(int(sys.argv[1]), 3)
        os.environ["LISTEN_FDS"] = "1"
        os.environ["LISTEN_PID"] = str(os.getpid())
        os.execv(sys.executable, [sys.executable, "-m", "codeward.daemon.main", *sys.argv[2:]])
        """
    )
    env = {**os.environ, "NOTIFY_SOCKET": str(notify_path), "WATCHDOG_USEC": "200000"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            launcher,
            str(listening.fileno()),
            "--socket",
            str(socket_dir / "unused.sock"),
        ],
        pass_fds=[listening.fileno()],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    listening.close()
    try:
        states = [notify.recv(4096)]
        assert states[0] == b"READY=1"
        states.append(notify.recv(4096))
        assert states[1] == b"WATCHDOG=1"
        assert status_over(path)["pid"] == proc.pid
        assert not (socket_dir / "unused.sock").exists()
        proc.send_signal(signal.SIGTERM)
        while (state := notify.recv(4096)) != b"STOPPING=1":
            assert state == b"WATCHDOG=1"
        assert proc.wait(timeout=30) == 0
        assert path.exists()  # the socket is systemd's: the daemon does not remove it
    finally:
        notify.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_listen_fds_rules() -> None:
    env = {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "0"}
    assert systemd.listen_fds(env) == []
    assert "LISTEN_PID" not in env
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1"}
    assert systemd.listen_fds(env) == []  # meant for another process


def test_notify_without_socket_and_watchdog_rules() -> None:
    assert systemd.notify("READY=1", {}) is False
    assert systemd.notify("READY=1", {"NOTIFY_SOCKET": "/nonexistent/x"}) is False
    assert systemd.watchdog_interval({}) is None
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "0"}) is None
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}) is None
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "1000000"}) == 0.5


def test_abstract_notify_socket() -> None:
    name = f"codeward-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind("\0" + name)
        assert systemd.notify("READY=1", {"NOTIFY_SOCKET": "@" + name})
        assert s.recv(100) == b"READY=1"


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[policy]\ngit_write = 'sometimes'\n")
    with pytest.raises(ConfigError, match=r"policy\.git_write"):
        load_config(path)
    path.write_text("[daemon]\nidle_timeuot = 5\n")
    with pytest.raises(ConfigError, match="idle_timeuot"):
        load_config(path)
    path.write_text("[daemon\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    path.write_text("[daemon]\nidle_timeout = 5\n[policy]\ngit_write = 'allow'\n")
    config = load_config(path)
    assert config.daemon.idle_timeout == 5 and config.policy.git_write == "allow"
    assert load_config(tmp_path / "missing.toml").policy.git_write == "confirm"


def test_bad_config_stops_the_daemon_with_exit_2(tmp_path: Path, socket_dir: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[lua]\nmemory_mb = 'lots'\n")
    proc = subprocess.run(
        [*DAEMON, "--config", str(path), "--socket", str(socket_dir / "s.sock")],
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert b"lua.memory_mb" in proc.stderr


def test_project_config_may_only_narrow(tmp_path: Path) -> None:
    (tmp_path / ".codeward.toml").write_text(
        "[policy]\ngit_write = 'allow'\ngit_destructive = 'deny'\n"
    )
    project = load_project_config(tmp_path)
    assert project.policy is not None
    user = PolicyConfig(git_write="confirm", git_destructive="allow")
    narrowed = user.narrowed(project.policy)
    assert narrowed.git_write == "confirm"  # 'allow' in the project cannot widen
    assert narrowed.git_destructive == "deny"
    (tmp_path / ".codeward.toml").write_text("[servers.python]\ncommand = ['evil']\n")
    with pytest.raises(ConfigError):
        load_project_config(tmp_path)


async def test_sighup_reloads_config(
    tmp_path: Path, socket_dir: Path, nursery: trio.Nursery
) -> None:
    from codeward.daemon.config import Config
    from codeward.daemon.server import Daemon

    path = tmp_path / "config.toml"
    path.write_text("[daemon]\nidle_timeout = 7\n")
    daemon = Daemon(Config(), socket_dir / "codeward.sock", path)
    await nursery.start(daemon.run)
    daemon.reload_config()
    assert daemon.config.daemon.idle_timeout == 7
    assert daemon.sessions.config.daemon.idle_timeout == 7
    path.write_text("[daemon\n")
    daemon.reload_config()  # a broken file keeps the old config
    assert daemon.config.daemon.idle_timeout == 7
    daemon.request_stop()
