"""What the benchmarks share: a real daemon subprocess and a blocking client of its socket."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec


def stop_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL to the process group of `proc` (its own session); reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait()
    kill_group(proc.pid)  # anything of its group it left behind


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pids: list[int], timeout: float = 60.0) -> float:
    """Seconds until none of `pids` is alive (at most `timeout`): a session's servers, shared
    ones stopping after it closed (basedpyright's shutdown takes seconds on a large project),
    hold what they were given of it until then."""
    begin = time.monotonic()
    while any(alive(pid) for pid in pids) and time.monotonic() - begin < timeout:
        time.sleep(0.1)
    return time.monotonic() - begin


_threads_seen: dict[tuple[int, str], int] = {}  # (pid, thread id) -> its CPU ns last read


def cpu_seconds(pid: int) -> float:
    """CPU time of process `pid` (every thread), with nanoseconds' resolution (each thread's
    schedstat: /proc's stat counts in clock ticks of 10 ms, too coarse per call). A thread
    gone since an earlier reading (the daemon's idle worker threads exit) counts with what
    it had used then, so the total never goes back (it took the figures below zero)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            used = int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
            before = _threads_seen.get((pid, task), 0)
            if used < before:  # a new thread under a gone one's id: that one's time kept
                _threads_seen[(pid, "gone")] = _threads_seen.get((pid, "gone"), 0) + before
            _threads_seen[(pid, task)] = used
    return sum(used for (of, _), used in _threads_seen.items() if of == pid) / 1e9


class Daemon:
    """A real daemon subprocess on a private socket, with an empty user config."""

    def __init__(self, tmp: Path, source: Path | None = None) -> None:
        """A daemon in `tmp`, from the source tree `source` (None: the one imported here)."""
        self.socket = tmp / "run" / "codeward.sock"
        config_home = tmp / "config"
        config_home.mkdir(parents=True)
        self.log = tmp / "daemon.log"
        env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
        env.pop("CODEWARD_SOCKET", None)
        if source is None:  # the tree this process imports codeward from
            spec = importlib.util.find_spec("codeward")
            assert spec is not None and spec.origin is not None
            source = Path(spec.origin).parents[1]
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
        argv = [sys.executable, "-m", "codeward.daemon.main", "--socket", str(self.socket)]
        with self.log.open("wb") as log:
            # cwd: `python -m` puts the working directory first on sys.path, before
            # PYTHONPATH; run from a checkout, a daemon of `source` would import that
            # checkout's codeward instead
            self.proc = subprocess.Popen(
                [*argv, "--log-level", "warning"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                start_new_session=True, cwd=tmp,
            )  # fmt: skip
        self.server_pids: set[int] = set()
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(str(self.socket))
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit(f"the daemon did not start:\n{self.log.read_text()}") from None
                time.sleep(0.05)

    def note_servers(self, client: DaemonClient) -> None:
        """Remember the language servers' pids, to make sure they are gone at the end."""
        for session in client.call("session/list", {})["sessions"]:
            self.server_pids |= {s["pid"] for s in session["servers"] if s.get("pid")}

    def stop(self) -> None:
        stop_group(self.proc, grace=30.0)
        for pid in self.server_pids:  # the daemon stops them; a crash would leave them
            if alive(pid):
                kill_group(pid)


class RpcFailed(Exception):
    """A JSON-RPC error reply; `kind` is its `data.kind` (a tool error), else its code."""

    def __init__(self, message: str, error: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        data = (error or {}).get("data")
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}
        kind = self.data.get("kind")
        self.kind = str(kind if kind is not None else (error or {}).get("code", "error"))


class DaemonClient:
    """A plain blocking NDJSON JSON-RPC client of the daemon's socket."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")
        self.ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        self.sock.sendall(msgspec.json.encode(message) + b"\n")
        reply = msgspec.json.decode(self.reader.readline())
        if "error" in reply:
            raise RpcFailed(f"{method}: {reply['error']}", reply["error"])
        return reply["result"]

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.call("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        self.reader.close()
        self.sock.close()
