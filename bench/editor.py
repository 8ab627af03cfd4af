"""Benchmark `codeward lsp` against an editor's own language server, side by side in one run.

The editor is an editor-like client, not a real editor: bench/lsp.py's smallest blocking
LSP client over stdio (initialize with the workspace folder, didOpen, then requests, each
answered before the next), the same client on both sides. One side starts basedpyright
directly, as an editor does today; the other starts `codeward lsp` (the thin client's
pump) with a real daemon already running on a private socket, which serves it from the
root's shared servers. Calls alternate (codeward, direct, then direct, codeward) so that
machine load hits both alike.

Part 1 runs in legs, each with fresh processes on both sides: a new direct basedpyright, a
new daemon (which starts its own basedpyright) and a new `codeward lsp`, warmed alike (each
request answered once, then a few rounds not kept), then N rounds; the leg's processes are
stopped before the next one starts. Why legs: each basedpyright process has a bias of its
own (its JIT and GC state settle differently), so one process answers a completion about
1 ms faster or slower than another throughout, two daemons of one source tree included.
With one process per side, the "added" figure is that random bias (in either direction)
plus codeward's relay, and a goal of <= 1 ms cannot be read from it. Each leg's added
figure (its median through codeward minus its median direct) carries a new draw of both
sides' biases; the median over legs removes a bias that falls either way, favouring
neither side (it is no condition that suits codeward: a leg where the direct server drew
the slow process counts as much as one where the daemon's did), and the legs' spread shows
its size. The pooled figure (every round of every leg, as one run) is printed beside it.

Each leg also runs a third side: bench/byte_relay.py in front of a basedpyright of its own,
a process that only copies bytes both ways with the daemon's way of I/O. What it adds is
the floor of any relay on this machine (one more process on the way: two more wake-ups per
request), which `codeward lsp` pays before any work of its own.

Prints:
1. hover, definition and completion: the milliseconds added per call through `codeward
   lsp` (goals: <= 0.5 ms hover and definition, <= 1 ms completion) as the median over legs
   of each leg's added figure, each leg's figure, the pooled medians direct and through
   codeward and their difference, the daemon's CPU per call (/proc schedstat), and what
   the byte relay adds (the same median over legs);
2. `codeward lsp` spawned to its `initialize` answered, with the daemon running (goal
   <= 50 ms), beside the bare start of the same Python (`python -c pass`) and the pump's
   CPU beyond that start: in this venv, whose editable install's .pth finder runs at every
   Python start (pathlib, re...), and in a plain venv of the same Python, as a user's
   `pip install codeward` makes (no finder). Both with bytecode, as an installed package
   has it (pip compiles at install), whatever PYTHONDONTWRITEBYTECODE says here;
3. an editor and two agents on one root: the language-server processes and their memory
   (RSS, each server with its descendants) when the editor joins the daemon's servers
   through `codeward lsp`, against two separate sets (the daemon's for the agents, and
   the editor's own basedpyright: a lower bound, as an editor would often run ruff too).
Parts 2 and 3 run once, on the last leg's daemon and direct basedpyright.

With `--before TREE` (a checkout of an earlier commit, e.g. `git worktree add /tmp/base
COMMIT`), each leg of part 1 also starts a daemon from TREE and a third client through its
`codeward lsp`, the three sides' order rotated every round: the figures before and after a
change, under the same load.

Run: .venv/bin/python bench/editor.py [--legs N] [--rounds N] [--warmup N] [--spawns N]
     [--before TREE]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient, RpcFailed, cpu_seconds, stop_group  # bench/
from lsp import START_TIMEOUT, DirectClient, make_project  # bench/

from codeward.daemon.lsp.defaults import default_servers

LAUNCH = "import sys; from codeward.client.entry import main; sys.exit(main())"
RELAY = "byte relay"  # the side that only copies bytes (bench/byte_relay.py)
SERVER = default_servers()["basedpyright"]  # as bench/lsp.py's DirectClient starts it
OPEN = ["lib.py", "use_0.py"]
GOALS = {"hover": 0.5, "definition": 0.5, "completion": 1.0}  # ms added, at most
SPAWN_GOAL = 50.0  # ms from spawn to initialize answered


def codeward_lsp(
    socket: Path, python: str = sys.executable, tree: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command and environment an editor would use: `codeward lsp` run by `python`,
    on the daemon's socket, importing codeward from `tree` (None: the tree this benchmark
    runs from)."""
    spec = importlib.util.find_spec("codeward")
    assert spec is not None and spec.origin is not None
    source = str(tree or Path(spec.origin).parents[1])
    env = {**os.environ, "CODEWARD_SOCKET": str(socket)}
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    return [python, "-c", LAUNCH, "lsp"], env


def compiled(env: dict[str, str], cache: Path) -> dict[str, str]:
    """`env` with Python's bytecode kept (in `cache`, the tree untouched), as an installed
    package has it: the first start writes it, the next ones read it."""
    env = {**env, "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def plain_venv(tmp: Path) -> str:
    """The python of a new venv of this Python with nothing installed: no .pth file runs
    at its start, as in a venv where pip installed codeward (from a wheel)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    return str(tmp / "venv" / "bin" / "python")


def children_cpu() -> float:
    """CPU seconds of this process's reaped children (the one just reaped, as a difference)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def close(client: DirectClient) -> None:
    """shutdown, exit, as an editor leaves; then the process is gone."""
    client.request("shutdown", None)
    client.notify("exit", None)
    client.stdin.close()
    try:
        client.proc.wait(10)
    finally:
        stop_group(client.proc, grace=5.0)


def quit_editor(client: DirectClient) -> None:
    """close(client), or, if it is gone already, its process group reaped all the same."""
    try:
        close(client)
    except (OSError, SystemExit, RpcFailed):
        stop_group(client.proc, grace=1.0)


@dataclass
class Case:
    label: str
    ask: Callable[[DirectClient], Any]
    times: dict[str, list[list[float]]] = field(default_factory=dict)  # by side, by leg
    cpu: dict[str, list[float]] = field(default_factory=dict)  # by side through a daemon


def cases() -> list[Case]:
    return [
        Case("hover", lambda c: c.at("textDocument/hover", "use_0.py", 5, 6)),
        Case("definition", lambda c: c.at("textDocument/definition", "use_0.py", 5, 6)),
        Case("completion", lambda c: c.at("textDocument/completion", "use_0.py", 5, 8)),
    ]


def answered(client: DirectClient, case: Case) -> None:
    """Wait until `client` answers `case` with something (the server has analysed)."""
    deadline = time.monotonic() + START_TIMEOUT
    while not case.ask(client):
        if time.monotonic() > deadline:
            raise SystemExit(f"no answer for {case.label}")
        client.settle(0.1, 1.0)


def measure(
    sides: dict[str, DirectClient], batch: list[Case], rounds: int, daemons: dict[str, int]
) -> None:
    """Calls with the sides' order rotated every round, and the requests' order every
    few rounds (an editor asks in no fixed order: a hover always asked after a completion's
    long answer would always find the daemon's caches cold); through a daemon (`daemons`:
    its pid by side), the daemon's CPU per call too (/proc schedstat), a figure the
    machine's load disturbs less than wall time."""
    ways = list(sides)
    for case in batch:  # this leg's times
        for way in ways:
            case.times.setdefault(way, []).append([])
    for round_ in range(rounds):
        order = ways[round_ % len(ways) :] + ways[: round_ % len(ways)]
        first = round_ // len(ways) % len(batch)  # each request follows each of the others
        for case in batch[first:] + batch[:first]:
            for way in order:
                daemon = daemons.get(way)
                cpu = cpu_seconds(daemon) if daemon is not None else 0.0
                begin = time.perf_counter()
                case.ask(sides[way])
                case.times[way][-1].append(time.perf_counter() - begin)
                if daemon is not None:
                    case.cpu.setdefault(way, []).append(cpu_seconds(daemon) - cpu)


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def added(case: Case, way: str) -> tuple[float, list[float], float]:
    """The ms `way` adds to `case` over direct: the median over legs of each leg's (median
    through `way` - median direct), each leg's figure, and the pooled figure (every round
    of every leg as one run)."""
    legs = [
        ms(through) - ms(direct)
        for through, direct in zip(case.times[way], case.times["direct"], strict=True)
    ]
    pooled = ms(flat(case.times[way])) - ms(flat(case.times["direct"]))
    return statistics.median(legs), legs, pooled


def flat(legs: list[list[float]]) -> list[float]:
    return [value for leg in legs for value in leg]


def report(batch: list[Case], legs: int, rounds: int, warmup: int) -> None:
    through = [way for way in batch[0].times if way not in ("direct", RELAY)]
    print(
        f"1. {legs} legs, each with fresh processes on both sides: a direct basedpyright; a new\n"
        "   daemon, with its own basedpyright, and `codeward lsp`. Each leg warmed alike (each\n"
        f"   request answered, then {warmup} rounds not kept), then {rounds} rounds, the sides'\n"
        "   and requests' orders rotated, the same client on each.\n"
        "   added: the median over legs of each leg's (median through codeward - median direct).\n"
        "   Each basedpyright process has a bias of its own (either way, about 1 ms on a\n"
        "   completion), so one leg's figure is codeward's cost plus that random draw; the legs'\n"
        "   median removes it, and each leg's figure shows its spread.\n"
        f"   direct, codeward: medians of all {legs * rounds} rounds pooled as one run; pooled:"
        " their difference.\n"
        "   daemon CPU: the daemon's CPU per call through codeward (mean, /proc schedstat).\n"
        "   relay floor: what a process that only copies bytes adds (bench/byte_relay.py, its\n"
        "   own basedpyright; the same median over legs): one more process on the way."
    )
    for way in through:
        if len(through) > 1:
            print(f"   {way}:")
        print(
            f"{'request':12} {'added ms':>8} {'goal':>8} {'direct ms':>9} {'codeward ms':>11}"
            f" {'pooled ms':>9} {'daemon CPU ms':>13} {'relay floor':>11}  each leg's added ms"
        )
        for case in batch:
            median, each, pooled = added(case, way)
            d, c = ms(flat(case.times["direct"])), ms(flat(case.times[way]))
            goal = f"<= {GOALS[case.label]}"
            cpu = statistics.fmean(case.cpu[way]) * 1000
            floor = added(case, RELAY)[0]
            print(
                f"{case.label:12} {median:8.3f} {goal:>8} {d:9.3f} {c:11.3f} {pooled:9.3f}"
                f" {cpu:13.3f} {floor:11.3f}  {' '.join(f'{leg:+.3f}' for leg in each)}"
            )


def spawned(root: Path, command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """`codeward lsp` started and its initialize answered: the seconds that took, and the
    CPU seconds of the pump until it exited."""
    cpu = children_cpu()
    begin = time.perf_counter()
    client = DirectClient(root, command, env)
    client.request("initialize", {
        "processId": os.getpid(), "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}], "capabilities": {},
    })  # fmt: skip
    wall = time.perf_counter() - begin
    client.notify("initialized", {})
    close(client)
    return wall, children_cpu() - cpu


def bare(python: str, env: dict[str, str]) -> tuple[float, float]:
    """`python -c pass`: its seconds and its CPU seconds."""
    cpu = children_cpu()
    begin = time.perf_counter()
    subprocess.run([python, "-c", "pass"], check=True, env=env)
    return time.perf_counter() - begin, children_cpu() - cpu


def spawn_to_initialize(root: Path, socket: Path, runs: int, tmp: Path) -> None:
    pythons = {"this venv": sys.executable, "a plain venv": plain_venv(tmp)}
    starts: dict[str, tuple[list[str], dict[str, str]]] = {}
    for label, python in pythons.items():
        command, env = codeward_lsp(socket, python)
        starts[label] = command, compiled(env, tmp / "bytecode")
        spawned(root, *starts[label])  # (the bytecode written)
        bare(python, starts[label][1])
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in starts}
    bares: dict[str, list[tuple[float, float]]] = {label: [] for label in starts}
    for _ in range(runs):  # alternating, so that machine load hits each alike
        for label, (command, env) in starts.items():
            times[label].append(spawned(root, command, env))
            bares[label].append(bare(pythons[label], env))
    print(
        f"\n2. `codeward lsp` spawned to initialize answered, daemon running (median of {runs},"
        " bytecode compiled):"
    )
    for label in starts:
        wall, cpu = zip(*times[label], strict=True)
        bare_wall, bare_cpu = zip(*bares[label], strict=True)
        print(
            f"   {label + ':':14} {ms(list(wall)):5.1f} ms (goal <= {SPAWN_GOAL:.0f} ms);"
            f" `python -c pass` {ms(list(bare_wall)):5.1f} ms;"
            f" the pump's CPU beyond it {ms(list(cpu)) - ms(list(bare_cpu)):4.1f} ms"
        )
    print(
        "   (this venv's editable install runs its .pth finder at every Python start; a plain"
        " venv, as `pip install codeward` makes one, has none)"
    )


def rss_kib(pid: int) -> int:
    """Resident memory of `pid` and every descendant, KiB (/proc status VmRSS)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines()
                       if line.startswith("VmRSS:")), 0)  # fmt: skip
    return total


def server_pids(agent: DaemonClient, root: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for session in agent.call("session/list", {})["sessions"]:
        if session.get("root") == str(root):
            found |= {s["name"]: s["pid"] for s in session["servers"] if s.get("pid")}
    return found


def one_set(daemon: Daemon, root: Path, direct: DirectClient) -> None:
    agents = [DaemonClient(daemon.socket) for _ in range(2)]
    try:
        for agent in agents:
            agent.call("session/open", {"root": str(root)})
            agent.tool("get_hover_info", {"path": "use_0.py", "line": 5, "character": 6})
        daemon.note_servers(agents[0])
        shared = server_pids(agents[0], root)
        shared_kib = sum(rss_kib(pid) for pid in shared.values())
        own_kib = rss_kib(direct.proc.pid)
        print(
            "\n3. an editor and two agents on one root: language-server processes, memory (RSS)"
            f"\n  through codeward lsp: {len(shared)} ({', '.join(sorted(shared))}),"
            f" {shared_kib / 1024:.0f} MiB"
            f"\n  two separate sets:    {len(shared) + 1} (the daemon's, and the editor's own"
            f" basedpyright), {(shared_kib + own_kib) / 1024:.0f} MiB"
        )
    finally:
        for agent in agents:
            agent.close()


def start_leg(
    leg: contextlib.ExitStack, tmp: Path, root: Path, before: Path | None, warmup: int
) -> tuple[dict[str, DirectClient], dict[str, int], Daemon]:
    """A leg's fresh processes, stopped when `leg` closes, warmed alike: each request
    answered once on each side, then `warmup` rounds as measured ones but not kept (a new
    server's first completions are several times slower, which a leg's median would feel).
    Returns the editors (by side), the daemons' pids (by side through one), and the daemon
    of this benchmark's tree."""
    tmp.mkdir()
    daemon = Daemon(tmp)
    leg.callback(daemon.stop)  # after the clients closed (an ExitStack unwinds backwards)
    sides = {"direct": DirectClient(root)}
    leg.callback(quit_editor, sides["direct"])
    relay = [sys.executable, str(Path(__file__).with_name("byte_relay.py")), *SERVER.command]
    sides[RELAY] = DirectClient(root, relay)
    leg.callback(quit_editor, sides[RELAY])
    through = "after" if before is not None else "codeward"
    sides[through] = DirectClient(root, *codeward_lsp(daemon.socket))
    leg.callback(quit_editor, sides[through])
    daemons = {through: daemon.proc.pid}
    watched = [daemon]
    if before is not None:
        (tmp / "before").mkdir()
        other = Daemon(tmp / "before", source=before)
        leg.callback(other.stop)
        sides["before"] = DirectClient(root, *codeward_lsp(other.socket, tree=before))
        leg.callback(quit_editor, sides["before"])
        daemons["before"] = other.proc.pid
        watched.append(other)
    batch = cases()
    for client in sides.values():
        client.start(OPEN)

    def warm(client: DirectClient) -> None:
        for case in batch:
            answered(client, case)

    with ThreadPoolExecutor(len(sides)) as pool:  # the servers' first analyses at once
        list(pool.map(warm, sides.values()))
    measure(sides, batch, warmup, daemons)
    for each in watched:  # their servers, made sure to be gone when the leg ends
        agent = DaemonClient(each.socket)
        try:
            each.note_servers(agent)
        finally:
            agent.close()
    return sides, daemons, daemon


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--legs", type=int, default=5, help="fresh processes for each leg")
    parser.add_argument("--rounds", type=int, default=100, help="rounds per leg")
    parser.add_argument("--warmup", type=int, default=10, help="rounds not kept, per leg")
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--before", type=Path, help="a source tree to compare with, side by side")
    args = parser.parse_args()
    if args.legs < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--legs and --rounds must be at least 1, --warmup at least 0")
    before = args.before.resolve() if args.before is not None else None
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-editor-"))
    try:
        root = make_project(tmp)
        batch = cases()
        for index in range(args.legs):
            with contextlib.ExitStack() as leg:
                sides, daemons, daemon = start_leg(
                    leg, tmp / f"leg-{index}", root, before, args.warmup
                )
                measure(sides, batch, args.rounds, daemons)
                if index == args.legs - 1:
                    report(batch, args.legs, args.rounds, args.warmup)
                    spawn_to_initialize(root, daemon.socket, args.spawns, tmp)
                    one_set(daemon, root, sides["direct"])
        print(f"\nload average: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
