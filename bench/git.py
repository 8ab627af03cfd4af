"""git status through the daemon against git run directly, and the Lua costs on the way.

Builds a small repository (20 files) and large ones (`--files`: 10,000 and 100,000 files,
written by `git fast-import`), starts a daemon on a private socket, and prints, side by side
in one run, the median of N `git_command status` calls over the socket against N direct `git
status` runs as a user runs them (plain: git takes its optional locks and refreshes the
index when it may), calls alternating so machine load hits both alike: the long format with
the index untouched between calls and with the index touched before each call (a file's
mtime changed and the index refreshed by `git update-index --refresh`, as an editor's save
and any `git status` or `git add` do; untimed, before the daemon's call and git's alike),
targets <= 1.3x small, <= 1.1x large; porcelain v2; `log -n 20` untouched and touched; with
the daemon's CPU time per call (from /proc: steadier than wall time on a loaded machine);
then the Lua round trip on the git path (an in-process eval of the `git_command` chunk whose
host answers at once: target <= 50 us), the cost of one Lua host call (an eval making N
`codeward.call`s against one making none), and the repository inspection's own cost per
call, in process, untouched and with the index refreshed.

With `--before TREE` (a checkout of an earlier commit, e.g. `git worktree add /tmp/base
42a8638`), a second daemon runs from TREE and every round calls both daemons and git, the
order rotated: the figures before and after a change, under the same load. The Lua round
trip of TREE is measured in a subprocess importing TREE, alternating with this tree's.
Run: .venv/bin/python bench/git.py [--files N,M] [--runs N] [--before TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import trio
from common import Daemon, DaemonClient, cpu_seconds  # bench/

from codeward.daemon.config import LuaConfig
from codeward.daemon.git.repository import inspect
from codeward.daemon.lua.actor import LuaActor
from codeward.daemon.tools.git_tool import run_chunk

HOST_CALLS = 500
SMALL = 20
LUA_EVALS = 2000
HERE = Path(__file__).resolve().parent


def make_repo(root: Path, files: int) -> None:
    """A repository of `files` committed files (100 per folder), a few of them then changed.

    The commit is written by `git fast-import` and checked out by `git reset --hard` (git's
    own C, so 100,000 files take seconds, not the minutes a Python loop and `git add` would)."""
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    stream = [b"commit refs/heads/main\n", b"committer b <b@example.com> 0 +0000\n",
              b"data 5\nfiles\n"]  # fmt: skip
    for i in range(files):
        body = b"line %d\n" % i
        stream.append(b"M 100644 inline dir%03d/file %d.txt\ndata %d\n%s\n" % (
            i // 100, i, len(body), body))  # fmt: skip
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, check=True,
                   input=b"".join(stream))  # fmt: skip
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
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


def rotated(calls: list[Any], runs: int, before: Any = None) -> list[float]:
    """Medians (ms) of each of `calls`, called once per round in an order rotated every
    round (so machine load hits all alike), after one warm-up call each; `before`, when
    given, runs untimed before every call."""
    for call in calls:
        call()
    samples: list[list[float]] = [[] for _ in calls]
    for i in range(runs):
        for k in range(len(calls)):
            j = (i + k) % len(calls)
            if before is not None:
                before()
            t0 = time.perf_counter()
            calls[j]()
            samples[j].append(time.perf_counter() - t0)
    return [statistics.median(s) * 1e3 for s in samples]


class Side(NamedTuple):
    label: str  # "after" (this tree) or "before" (--before TREE); "daemon" alone
    client: DaemonClient
    pid: int  # the daemon's, for its CPU time (steadier than wall time on a loaded machine)


def compare_status(sides: list[Side], repo: Path, files: int, runs: int, target: float) -> None:
    for side in sides:
        side.client.call("session/open", {"root": str(repo)})
    print(f"\nrepository of {files} files (median of {runs} calls each, order rotated)")
    clean = repo / "dir000" / "file 1.txt"  # committed and unchanged: a refresh rewrites it
    stamps = [clean.stat().st_mtime_ns - 10**9 * k for k in (1, 2)]

    def touch() -> None:
        """What an editor's save and a user's `git status` do: a file's mtime changes (to
        one of two past times in turn: never racily clean) and the index is refreshed
        (rewritten with the file's new stat)."""
        stamps.reverse()
        os.utime(clean, ns=(stamps[0], stamps[0]))
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, check=True)

    cases = (
        ("status", "untouched", [], None),
        ("status", "touched", [], touch),
        ("status", "--porcelain=v2", ["--porcelain=v2"], None),
        ("log", "-n 20", ["-n", "20"], None),
        ("log", "-n 20 touched", ["-n", "20"], touch),
    )
    for sub, label, status_args, before in cases:

        def through(client: DaemonClient, a: list[str] = status_args, c: str = sub) -> Any:
            def call() -> None:
                result = client.tool("git_command", {"subcommand": c, "args": a})
                assert c != "status" or result["parsed"]["unstaged"], "status saw no changes"

            return call

        def direct(a: list[str] = status_args, c: str = sub) -> None:
            subprocess.run(["git", c, *a], cwd=repo, check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip

        cpu = [cpu_seconds(side.pid) for side in sides]
        *ours, theirs = rotated([*(through(side.client) for side in sides), direct], runs, before)
        cpu = [  # a touched index costs the daemon nothing until its call
            (cpu_seconds(side.pid) - c) / (runs + 1) * 1e3
            for side, c in zip(sides, cpu, strict=True)
        ]
        goal = f"   (target <= {target:.1f}x)" if sub == "status" and not status_args else ""
        print(f"  git {sub} {label:<15} directly {theirs:7.2f} ms")
        for side, took, busy in zip(sides, ours, cpu, strict=True):
            print(f"    git_command, {side.label:<7} {took:7.2f} ms   ratio {took / theirs:5.2f}x"
                  f"   +{took - theirs:5.2f} ms   daemon CPU {busy:4.2f} ms{goal}")  # fmt: skip


def inspection_cost(repo: Path, runs: int) -> tuple[float, float]:
    """The repository inspection's own cost in process (medians, ms): a call with nothing
    changed, and one after the index was refreshed (a file's mtime changed)."""
    git = shutil.which("git") or "git"
    clean = repo / "dir000" / "file 2.txt"
    stamps = [clean.stat().st_mtime_ns - 10**9 * k for k in (1, 2)]

    async def measure() -> tuple[float, float]:
        await inspect(git, repo)
        untouched, touched = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            await inspect(git, repo)
            untouched.append(time.perf_counter() - t0)
            stamps.reverse()
            os.utime(clean, ns=(stamps[0], stamps[0]))
            subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, check=True)
            t0 = time.perf_counter()
            await inspect(git, repo)
            touched.append(time.perf_counter() - t0)
        return statistics.median(untouched) * 1e3, statistics.median(touched) * 1e3

    return trio.run(measure)


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


def lua_only(rounds: int) -> None:
    """`--lua-only`: the Lua figures of the tree imported here, as JSON on stdout."""
    result = json.loads(sys.stdin.buffer.read())
    figures = [lua_git_round_trip(result) for _ in range(rounds)]
    print(json.dumps(figures))


def lua_figures(result: dict[str, Any], source: Path, rounds: int) -> list[float]:
    """(wall, CPU) us per git_command eval of the tree `source`, from a subprocess."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(HERE)])}
    done = subprocess.run(
        [sys.executable, str(HERE / "git.py"), "--lua-only", "--rounds", str(rounds)],
        input=json.dumps(result).encode(), env=env, check=True, capture_output=True,
    )  # fmt: skip
    figures = json.loads(done.stdout)
    return [statistics.median(f[0] - f[1] for f in figures),
            statistics.median(f[2] for f in figures)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", default="10000,100000", help="the large repositories' sizes")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--before", type=Path, help="a source tree to compare with, side by side")
    parser.add_argument("--lua-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lua_only:
        lua_only(args.rounds)
        return
    if shutil.which("git") is None:
        raise SystemExit("git is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    daemons: list[Daemon] = []
    try:
        small = Path(os.path.realpath(tmp)) / "small"
        make_repo(small, SMALL)
        sizes = [int(n) for n in args.files.split(",")]
        larges = [Path(os.path.realpath(tmp)) / f"large-{n}" for n in sizes]
        for large, files in zip(larges, sizes, strict=True):
            began = time.perf_counter()
            make_repo(large, files)
            print(f"generated {files} files in {time.perf_counter() - began:.1f} s")
        daemons.append(Daemon(tmp / "after"))
        label = "after" if args.before else "daemon"
        sides = [Side(label, DaemonClient(daemons[0].socket), daemons[0].proc.pid)]
        if args.before is not None:
            daemons.append(Daemon(tmp / "before", source=args.before.resolve()))
            sides.append(Side("before", DaemonClient(daemons[1].socket), daemons[1].proc.pid))
        client = sides[0].client
        compare_status(sides, small, SMALL, args.runs, 1.3)
        for large, files in zip(larges, sizes, strict=True):
            compare_status(sides, large, files, args.runs, 1.1)
        print("\nthe repository inspection in process (median of 20, ms): untouched / touched")
        for repo, files in [(small, SMALL), *zip(larges, sizes, strict=True)]:
            untouched, touched = inspection_cost(repo, 20)
            print(f"  {files:>7} files: {untouched:6.3f} ms / {touched:6.3f} ms")
        status_result = client.tool("git_command", {"subcommand": "status", "args": []})

        trees = [(side.label, HERE.parent) for side in sides[:1]]
        if args.before is not None:
            trees.append(("before", args.before.resolve()))
        lua: dict[str, list[list[float]]] = {label: [] for label, _ in trees}
        for _ in range(3):  # alternate the trees' subprocesses, so load hits both alike
            for label, source in trees:
                lua[label].append(lua_figures(status_result, source, 1))
        print(f"\nLua round trip on the git path (in process, a {len(status_result['output'])}-"
              "character status; target <= 50 us)")  # fmt: skip
        for label, figures in lua.items():
            wall = statistics.median(f[0] for f in figures)
            cpu = statistics.median(f[1] for f in figures)
            print(f"  {label:<7} {wall:6.1f} us wall, {cpu:6.1f} us CPU per git_command")

        def host_calls(calls: int) -> float:
            source = (
                f"for i = 1, {calls} do pcall(codeward.call, 'no_such_tool', {{}}) end return true"
            )
            samples = timed(lambda: client.call("lua/eval", {"source": source}), 20)
            return statistics.median(samples)

        per_call = (host_calls(HOST_CALLS) - host_calls(0)) / HOST_CALLS * 1e6
        print(
            f"Lua host call (codeward.call round trip, over the socket) {per_call:6.1f} us per call"
        )
        for side in sides:
            side.client.close()
    finally:
        for daemon in daemons:
            daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
