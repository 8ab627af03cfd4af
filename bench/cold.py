"""Benchmark a new user's first calls: no daemon running, a fresh HOME, side by side with a
direct client of the same basedpyright started cold, in one run.

Each run makes a new temp dir holding a HOME (with empty XDG config, state and runtime
dirs), a private socket path and a copy of the fixture (bench/lsp.py's Python project plus
a `pyproject.toml` and a JSON file, so that servers the request does not need could start),
and measures, in rotating order:
1. `codeward mcp` spawned with no daemon (it autostarts one): spawn -> `initialize`
   answered, -> `tools/list` answered (asked next, as hosts do), and -> its first hover
   (`get_hover_info`) answered, plus the servers the session then runs (`session/list`:
   only basedpyright should be there);
2. `codeward status` with no daemon (autostart + status): spawn -> exit;
3. a daemon already running and loaded (bench/common.py's): a new session's
   `session/open` + first hover, the language server's cold start through codeward;
4. the direct client (bench/lsp.py's): basedpyright spawned -> `initialize` ->
   `initialized` -> settings -> `didOpen` -> hover answered;
5. first workspace symbols: `codeward mcp` spawned with no daemon -> `initialize` ->
   `get_symbols` (scope workspace, `compute`) answered, against the direct client's
   spawn -> `initialize` -> `workspace/symbol` asked again every 50 ms (as a user retries)
   until its first non-empty answer.
Each daemon is stopped (`codeward stop`) before the next run. The trees' modules are
compiled to byte code first, and their Python reads it (as an installed codeward's).
Prints medians and the ratios (targets: initialize <= 200 ms, first hover <= 1.1x the
direct cold hover, first workspace symbols <= 1.1x the direct first non-empty answer).

With `--tree TREE` (a checkout of an earlier commit), the codeward side runs TREE's code:
the figures before a change. With `--against TREE`, both run in the same rounds, this
checkout's and TREE's codeward alternately, printed side by side.

Run: .venv/bin/python bench/cold.py [--runs N] [--tree TREE] [--against TREE]
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
from functools import partial
from pathlib import Path

import mcp  # bench/
from common import Daemon, DaemonClient  # bench/
from lsp import DirectClient, make_project  # bench/
from mcp import INIT, LAUNCH, Pump  # bench/

HOVER_PATH, HOVER_LINE, HOVER_CHARACTER = "lib.py", 5, 6  # `abc` in `@abc.abstractmethod`


def fresh_env(home: Path, repo: Path) -> dict[str, str]:
    """A new user's environment: an empty HOME and XDG dirs inside it, no daemon socket, and
    Python reading the byte code `compiled` wrote (as an installed package's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEWARD_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name, sub in (("CONFIG", ".config"), ("STATE", ".local/state"), ("CACHE", ".cache")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name}_HOME"] = str(home / sub)
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    env |= {"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(repo)}
    return env


def compiled(tree: Path) -> None:
    """Compile `tree`'s modules to byte code (`__pycache__`, which git ignores), as `pip
    install` does: with PYTHONDONTWRITEBYTECODE set (as in CI shells) and no cache, every
    start would compile the daemon's modules anew, a cost no installed codeward pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "codeward")],
                   check=True, timeout=300, capture_output=True)  # fmt: skip


def fixture(tmp: Path) -> Path:
    tmp.mkdir(parents=True)
    root = make_project(tmp)
    (root / "pyproject.toml").write_text('[project]\nname = "fixture"\nversion = "0.1"\n')
    (root / "data.json").write_text('{"name": "fixture", "values": [1, 2, 3]}\n')
    return root


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI of the tree on env's PYTHONPATH (run there: `-c` puts the working directory
    first on sys.path)."""
    return subprocess.run([sys.executable, "-c", LAUNCH, *args], env=env, capture_output=True,
                          timeout=120, check=True, cwd=env["PYTHONPATH"])  # fmt: skip


def stop_daemon(env: dict[str, str], sock: Path) -> None:
    cli(env, "--socket", str(sock), "--no-autostart", "stop")


def socket_of(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / "codeward" / "codeward.sock"


def spawn_pump(env: dict[str, str], sock: Path, root: Path, repo: Path) -> mcp.Pump:
    """`codeward mcp` of `repo` with `env` (Pump spawns with os.environ, in the working
    directory, which `-c` puts first on sys.path: the tree's own)."""
    saved, here = os.environ.copy(), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(repo)
    mcp.REPO = repo
    try:
        return Pump(sock, root)
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


def run_mcp(tmp: Path, repo: Path) -> dict[str, float]:
    env = fresh_env(tmp / "home-mcp", repo)
    root = fixture(tmp / "mcp")
    sock = socket_of(env)
    begin = time.perf_counter()
    pump = spawn_pump(env, sock, root, repo)
    pump.request("initialize", INIT)
    initialized = time.perf_counter()
    pump.send({"method": "notifications/initialized"})
    assert pump.request("tools/list", {})["tools"], "no tools"  # what a host asks next
    listed = time.perf_counter()
    hover = {"path": HOVER_PATH, "line": HOVER_LINE, "character": HOVER_CHARACTER}
    result = pump.call("get_hover_info", hover)
    hovered = time.perf_counter()
    assert result["content"], "no hover"
    client = DaemonClient(sock)
    sessions = client.call("session/list", {})["sessions"]
    servers = sorted(s["name"] for session in sessions for s in session["servers"])
    client.close()
    pump.close()
    stop_daemon(env, sock)
    return {
        "initialize": initialized - begin,
        "tools/list": listed - begin,
        "hover": hovered - begin,
        "hover after initialize": hovered - initialized,
        "servers": float(len(servers)),
        **{f"server {name}": 1.0 for name in servers},
    }


def run_mcp_symbols(tmp: Path, repo: Path) -> dict[str, float]:
    env = fresh_env(tmp / "home-symbols", repo)
    root = fixture(tmp / "symbols")
    sock = socket_of(env)
    begin = time.perf_counter()
    pump = spawn_pump(env, sock, root, repo)
    pump.request("initialize", INIT)
    pump.send({"method": "notifications/initialized"})
    result = pump.call("get_symbols", {"scope": "workspace", "query": "compute"})
    took = time.perf_counter() - begin
    pump.close()
    stop_daemon(env, sock)
    found = result.get("structuredContent", {}).get("symbols")
    return {"symbols": took, "symbols empty": float(not found)}


def run_status(tmp: Path, repo: Path) -> dict[str, float]:
    env = fresh_env(tmp / "home-status", repo)
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


def run_direct_symbols(tmp: Path) -> dict[str, float]:
    """The direct client's spawn -> `initialize` -> `workspace/symbol` until non-empty."""
    root = fixture(tmp / "direct-symbols")
    begin = time.perf_counter()
    direct = DirectClient(root)
    try:
        direct.start([])
        while not direct.request("workspace/symbol", {"query": "compute"}):
            time.sleep(0.05)
        took = time.perf_counter() - begin
    finally:
        direct.stop()
    return {"direct symbols": took}


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
    parser.add_argument("--against", type=Path, help="also run this checkout's codeward")
    args = parser.parse_args()
    repo = (args.tree or mcp.REPO).resolve()
    trees = [repo] + ([args.against.resolve()] if args.against else [])
    samples: dict[str, list[float]] = {}
    order: list[tuple[str, Callable[[Path], dict[str, float]]]] = []
    for k, tree in enumerate(trees):
        tag = "" if k == 0 else " (against)"
        order += [
            (tag, partial(run_mcp, repo=tree)),
            (tag, partial(run_status, repo=tree)),
            (tag, partial(run_mcp_symbols, repo=tree)),
        ]
    for tree in trees:
        compiled(tree)
    mcp.REPO = repo
    order += [("", run_loaded), ("", run_direct), ("", run_direct_symbols)]
    for k in range(args.runs):
        for tag, run in order[k % len(order) :] + order[: k % len(order)]:
            tmp = Path(tempfile.mkdtemp(prefix="codeward-cold-"))
            try:
                for key, value in run(tmp).items():
                    samples.setdefault(key + tag, []).append(value)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            mcp.REPO = repo
    med = {key: statistics.median(values) for key, values in samples.items()}
    load = os.getloadavg()
    print(f"cold start, medians of {args.runs} runs (load average {load[0]:.1f} {load[1]:.1f})")
    for k, tree in enumerate(trees):
        tag = "" if k == 0 else " (against)"
        print(f"codeward of {tree}:")
        report(med, samples, tag)
    print("direct basedpyright, and a daemon already loaded (this checkout's):")
    rows = [
        ("daemon running and loaded: session/open + first hover", "loaded hover"),
        ("direct basedpyright: spawn -> initialize answered", "direct initialize"),
        ("direct basedpyright: spawn -> didOpen -> hover answered", "direct hover"),
        ("direct: spawn -> first non-empty workspace/symbol", "direct symbols"),
    ]
    for label, key in rows:
        print(f"  {label:<58} {med[key] * 1e3:8.1f} ms")


def report(med: dict[str, float], samples: dict[str, list[float]], tag: str) -> None:
    """One codeward tree's figures and their ratios to the direct client's."""
    rows = [
        ("codeward mcp spawn -> initialize answered (autostart)", "initialize", 0.200),
        ("codeward mcp spawn -> then tools/list answered", "tools/list", None),
        ("codeward mcp spawn -> first hover answered", "hover", None),
        ("  of which: first hover after initialize", "hover after initialize", None),
        ("codeward status, no daemon (autostart + status)", "status", None),
        ("codeward mcp spawn -> first workspace symbols", "symbols", None),
    ]
    for label, key, target in rows:
        goal = f"   (target <= {target * 1e3:.0f} ms)" if target else ""
        print(f"  {label:<58} {med[key + tag] * 1e3:8.1f} ms{goal}")
    ratio = med["hover" + tag] / med["direct hover"]
    print(f"  {'first hover ratio: codeward mcp / direct (target <= 1.10)':<58} {ratio:8.2f}x")
    after = med["hover after initialize" + tag] / med["direct hover"]
    print(f"  {'  hover after initialize / direct cold hover':<58} {after:8.2f}x")
    symbols = med["symbols" + tag] / med["direct symbols"]
    print(f"  {'first workspace symbols / direct (target <= 1.10)':<58} {symbols:8.2f}x")
    empty = int(sum(samples["symbols empty" + tag]))
    servers = sorted(
        k.removeprefix("server ").removesuffix(tag)
        for k in samples
        if k.startswith("server ") and k.endswith(tag) and (tag or not k.endswith(")"))
    )
    runs = len(samples["servers" + tag])
    print(f"  servers the session ran after the hover (of {runs} runs): " + ", ".join(
        f"{name} ({len(samples['server ' + name + tag])})" for name in servers
    ) + f"; empty workspace symbols: {empty}")  # fmt: skip


if __name__ == "__main__":
    main()
