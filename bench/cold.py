"""Benchmark a new user's first calls: no daemon running, a fresh HOME, side by side with a
direct client of the same basedpyright started cold, in one run.

Each run makes a new temp dir holding a HOME (with empty XDG config, state and runtime
dirs), a private socket path and a copy of the fixture (bench/lsp.py's Python project plus
a `pyproject.toml` and a JSON file, so that servers the request does not need could start),
and measures, in rotating order:
1. `codeward mcp` spawned with no daemon (it autostarts one): spawn -> `initialize`
   answered, and -> its first hover (`get_hover_info`) answered, plus the servers the
   session then runs (`session/list`: only basedpyright should be there);
2. `codeward status` with no daemon (autostart + status): spawn -> exit;
3. a daemon already running and loaded (bench/common.py's): a new session's
   `session/open` + first hover, the language server's cold start through codeward;
4. the direct client (bench/lsp.py's): basedpyright spawned -> `initialize` ->
   `initialized` -> settings -> `didOpen` -> hover answered.
Each daemon is stopped (`codeward stop`) before the next run. Prints medians and the
ratios (targets: initialize <= 200 ms, first hover <= 1.1x the direct cold hover).

With `--tree TREE` (a checkout of an earlier commit), the codeward side runs TREE's code:
the figures before a change.

Run: .venv/bin/python bench/cold.py [--runs N] [--tree TREE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import mcp  # bench/
from common import Daemon, DaemonClient  # bench/
from lsp import DirectClient, make_project  # bench/
from mcp import INIT, LAUNCH, Pump  # bench/

HOVER_PATH, HOVER_LINE, HOVER_CHARACTER = "lib.py", 5, 6  # `abc` in `@abc.abstractmethod`


def fresh_env(home: Path) -> dict[str, str]:
    """A new user's environment: an empty HOME and XDG dirs inside it, no daemon socket."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEWARD_"))}
    for name, sub in (("CONFIG", ".config"), ("STATE", ".local/state"), ("CACHE", ".cache")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name}_HOME"] = str(home / sub)
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    env |= {"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(mcp.REPO)}
    return env


def fixture(tmp: Path) -> Path:
    tmp.mkdir(parents=True)
    root = make_project(tmp)
    (root / "pyproject.toml").write_text('[project]\nname = "fixture"\nversion = "0.1"\n')
    (root / "data.json").write_text('{"name": "fixture", "values": [1, 2, 3]}\n')
    return root


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args], env=env, capture_output=True, timeout=120, check=True
    )


def stop_daemon(env: dict[str, str], sock: Path) -> None:
    cli(env, "--socket", str(sock), "--no-autostart", "stop")


def socket_of(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / "codeward" / "codeward.sock"


def run_mcp(tmp: Path) -> dict[str, float]:
    env = fresh_env(tmp / "home-mcp")
    root = fixture(tmp / "mcp")
    sock = socket_of(env)
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)  # Pump spawns with os.environ
    try:
        begin = time.perf_counter()
        pump = Pump(sock, root)
        pump.request("initialize", INIT)
        initialized = time.perf_counter()
        pump.send({"method": "notifications/initialized"})
        hover = {"path": HOVER_PATH, "line": HOVER_LINE, "character": HOVER_CHARACTER}
        result = pump.call("get_hover_info", hover)
        hovered = time.perf_counter()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert result["content"], "no hover"
    client = DaemonClient(sock)
    sessions = client.call("session/list", {})["sessions"]
    servers = sorted(s["name"] for session in sessions for s in session["servers"])
    client.close()
    pump.close()
    stop_daemon(env, sock)
    return {
        "initialize": initialized - begin,
        "hover": hovered - begin,
        "hover after initialize": hovered - initialized,
        "servers": float(len(servers)),
        **{f"server {name}": 1.0 for name in servers},
    }


def run_status(tmp: Path) -> dict[str, float]:
    env = fresh_env(tmp / "home-status")
    begin = time.perf_counter()
    cli(env, "status")
    took = time.perf_counter() - begin
    stop_daemon(env, socket_of(env))
    return {"status": took}


def run_loaded(tmp: Path) -> dict[str, float]:
    """A daemon already running and loaded: a new session's first hover (the language
    server's cold start through codeward, without the daemon's own)."""
    daemon = Daemon(tmp / "daemon", mcp.REPO)
    try:
        root = fixture(tmp / "loaded")
        client = DaemonClient(daemon.socket)
        client.call("session/list", {})  # answered once the daemon has loaded
        begin = time.perf_counter()
        client.call("session/open", {"root": str(root)})
        hover = {"path": HOVER_PATH, "line": HOVER_LINE, "character": HOVER_CHARACTER}
        assert client.tool("get_hover_info", hover), "no hover"
        took = time.perf_counter() - begin
        daemon.note_servers(client)
        client.close()
    finally:
        daemon.stop()
    return {"loaded hover": took}


def run_direct(tmp: Path) -> dict[str, float]:
    root = fixture(tmp / "direct")
    begin = time.perf_counter()
    direct = DirectClient(root)
    try:
        direct.start([])
        initialized = time.perf_counter()
        direct.first_hover(HOVER_PATH)
        hovered = time.perf_counter()
    finally:
        direct.stop()
    return {"direct initialize": initialized - begin, "direct hover": hovered - begin}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, help="run codeward from this checkout")
    args = parser.parse_args()
    if args.tree:
        mcp.REPO = args.tree.resolve()
    samples: dict[str, list[float]] = {}
    order: list[Callable[[Path], dict[str, float]]] = [run_mcp, run_status, run_loaded, run_direct]
    for k in range(args.runs):
        for run in order[k % len(order) :] + order[: k % len(order)]:
            tmp = Path(tempfile.mkdtemp(prefix="codeward-cold-"))
            try:
                for key, value in run(tmp).items():
                    samples.setdefault(key, []).append(value)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    med = {key: statistics.median(values) for key, values in samples.items()}
    load = os.getloadavg()
    print(f"cold start of {mcp.REPO}, medians of {args.runs} runs "
          f"(load average {load[0]:.1f} {load[1]:.1f})")  # fmt: skip
    rows = [
        ("codeward mcp spawn -> initialize answered (autostart)", "initialize", 0.200),
        ("codeward mcp spawn -> first hover answered", "hover", None),
        ("  of which: first hover after initialize", "hover after initialize", None),
        ("codeward status, no daemon (autostart + status)", "status", None),
        ("daemon running and loaded: session/open + first hover", "loaded hover", None),
        ("direct basedpyright: spawn -> initialize answered", "direct initialize", None),
        ("direct basedpyright: spawn -> didOpen -> hover answered", "direct hover", None),
    ]
    for label, key, target in rows:
        goal = f"   (target <= {target * 1e3:.0f} ms)" if target else ""
        print(f"  {label:<58} {med[key] * 1e3:8.1f} ms{goal}")
    ratio = med["hover"] / med["direct hover"]
    print(f"  {'first hover ratio: codeward mcp / direct (target <= 1.10)':<58} {ratio:8.2f}x")
    after = med["hover after initialize"] / med["direct hover"]
    print(f"  {'  hover after initialize / direct cold hover':<58} {after:8.2f}x")
    loaded = med["loaded hover"] / med["direct hover"]
    print(f"  {'  loaded daemon: first hover / direct cold hover':<58} {loaded:8.2f}x")
    servers = sorted(k.removeprefix("server ") for k in samples if k.startswith("server "))
    runs = len(samples["servers"])
    print(f"  servers the session ran after the hover (of {runs} runs): " + ", ".join(
        f"{name} ({len(samples['server ' + name])})" for name in servers
    ))  # fmt: skip


if __name__ == "__main__":
    main()
