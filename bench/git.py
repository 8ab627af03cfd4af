"""git status through the daemon against git run directly, and the Lua costs on the way.

Builds a small repository (20 files) and a large one (10,000 files), starts a daemon on a
private socket, and prints, side by side in one run, the median of N `git_command status`
calls over the socket against N direct `git status` runs (calls alternate, so machine load
hits both alike), for the long format (targets: <= 1.3x small, <= 1.1x large) and for
porcelain v2; then the Lua round trip on the git path (an in-process eval of the
`git_command` chunk whose host answers at once: target <= 50 us) and the cost of one Lua
host call (an eval making N `codeward.call`s against one making none).
Run: .venv/bin/python bench/git.py [--files N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from common import Daemon, DaemonClient  # bench/

from codeward.daemon.config import LuaConfig
from codeward.daemon.lua.actor import LuaActor
from codeward.daemon.tools.git_tool import run_chunk

HOST_CALLS = 500
SMALL = 20
LUA_EVALS = 2000
# git status refreshes the index when it may; the daemon's reads do not (GIT_OPTIONAL_LOCKS=0).
# The direct runs do not either: a rewritten index would also invalidate the daemon's cached
# repository scan, whose signature includes the index, and cost it a rescan per call.
READ_ONLY = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}


def make_repo(root: Path, files: int) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for i in range(files):
        directory = root / f"dir{i // 100:03d}"
        directory.mkdir(exist_ok=True)
        (directory / f"file {i}.txt").write_text(f"line {i}\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "files"], cwd=root, check=True, env=env)
    for i in range(0, files, 1000):  # a few changes, so status has something to say
        (root / f"dir{i // 100:03d}" / f"file {i}.txt").write_text("changed\n")


def timed(fn: Any, runs: int) -> list[float]:
    fn()  # warm up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def side_by_side(first: Any, second: Any, runs: int) -> tuple[float, float]:
    """Medians (ms) of `first` and `second`, alternating (a b, b a, ...) after a warm-up."""
    first()
    second()
    a: list[float] = []
    b: list[float] = []
    for i in range(runs):
        order = ((first, a), (second, b)) if i % 2 == 0 else ((second, b), (first, a))
        for fn, samples in order:
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(a) * 1e3, statistics.median(b) * 1e3


def compare_status(client: DaemonClient, repo: Path, files: int, runs: int, target: float) -> None:
    client.call("session/open", {"root": str(repo)})
    print(f"\nrepository of {files} files (median of {runs} calls each, alternating)")
    for label, status_args in (("long format", []), ("--porcelain=v2", ["--porcelain=v2"])):

        def through_daemon(a: list[str] = status_args) -> None:
            result = client.tool("git_command", {"subcommand": "status", "args": a})
            assert result["parsed"]["unstaged"], "status saw no changes"

        def direct(a: list[str] = status_args) -> None:
            subprocess.run(["git", "status", *a], cwd=repo, check=True, env=READ_ONLY,
                           stdout=subprocess.DEVNULL)  # fmt: skip

        ours, theirs = side_by_side(through_daemon, direct, runs)
        goal = f"   (target <= {target:.1f}x)" if not status_args else ""
        print(f"  git status {label:<15} directly {theirs:7.2f} ms   git_command {ours:7.2f} ms"
              f"   ratio {ours / theirs:5.2f}x   +{ours - theirs:5.2f} ms{goal}")  # fmt: skip


class InstantHost:
    """A Lua host whose git answers at once with a real status result."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        return self.result

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {}

    def log(self, message: str) -> None:
        pass


def lua_git_round_trip(result: dict[str, Any]) -> tuple[float, float, float]:
    """Median microseconds of one `git_command` chunk run in the sandbox (the eval, the host
    call, the result handed back), of the host call awaited directly, and the CPU time of
    one chunk run (less sensitive to a loaded machine than the wall clock), in process."""

    async def measure() -> tuple[float, float]:
        actor = LuaActor(LuaConfig())
        host = InstantHost(result)
        arguments = ["status", [], {"allow_destructive": False}]
        async with trio.open_nursery() as nursery:
            await nursery.start(actor.run)
            evals: list[float] = []
            direct: list[float] = []
            cpu = time.process_time()
            for _ in range(LUA_EVALS):
                await run_chunk(actor, host, arguments)
            cpu_per_eval = (time.process_time() - cpu) / LUA_EVALS * 1e6
            for _ in range(LUA_EVALS):
                t0 = time.perf_counter()
                await run_chunk(actor, host, arguments)
                t1 = time.perf_counter()
                await host.git("status", [], {})
                t2 = time.perf_counter()
                evals.append(t1 - t0)
                direct.append(t2 - t1)
            nursery.cancel_scope.cancel()
        return statistics.median(evals) * 1e6, statistics.median(direct) * 1e6, cpu_per_eval

    return trio.run(measure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    daemon = None
    try:
        small = Path(os.path.realpath(tmp)) / "small"
        large = Path(os.path.realpath(tmp)) / "large"
        make_repo(small, SMALL)
        make_repo(large, args.files)
        daemon = Daemon(tmp)
        client = DaemonClient(daemon.socket)
        compare_status(client, small, SMALL, args.runs, 1.3)
        compare_status(client, large, args.files, args.runs, 1.1)
        status_result = client.tool("git_command", {"subcommand": "status", "args": []})

        lua_us, host_us, cpu_us = lua_git_round_trip(status_result)
        print(f"\nLua round trip on the git path (in process, a {len(status_result['output'])}-"
              f"character status): {lua_us - host_us:6.1f} us wall, {cpu_us:6.1f} us CPU per "
              "git_command   (target <= 50 us)")  # fmt: skip

        def lua(calls: int) -> float:
            source = (
                f"for i = 1, {calls} do pcall(codeward.call, 'no_such_tool', {{}}) end return true"
            )
            samples = timed(lambda: client.call("lua/eval", {"source": source}), 20)
            return statistics.median(samples)

        per_call = (lua(HOST_CALLS) - lua(0)) / HOST_CALLS * 1e6
        print(
            f"Lua host call (codeward.call round trip, over the socket) {per_call:6.1f} us per call"
        )
        client.close()
    finally:
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
