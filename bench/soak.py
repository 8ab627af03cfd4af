"""Soak: many clients on a few project roots for minutes, with faults, watching the daemon.

A real daemon (`python -m codeward.daemon.main`) on a private socket serves `--clients`
blocking clients (threads), spread over four roots made in a temp dir: two Python
projects (basedpyright, ruff), one Go module (gopls) and one C project (clangd), each a git
repository. Every client opens its root's session and, until the time is up, sends a
random mix of hover, definition, references, diagnostics, git status, git log, lua/eval
(which calls git) and a few edits (it rewrites a shared scratch file badly formatted, then
`format_code`s it, so edits of one file race and may end as `stale_edit`, as they should).

Faults, during the run: at a quarter of it the first Python root's basedpyright is killed
(SIGKILL); at half of it the second one's is stopped (SIGSTOP) and continued (SIGCONT)
`--stop-seconds` later. A probe then asks that root until it answers again (recovery).
Errors on a root between its fault and its recovery (plus the request timeout) are counted
as the fault's; every other error is unexpected, except those the racing edits cause:
`stale_edit`, and answers refused because a file changed meanwhile (`content_modified`).

Every 10 s the daemon's RSS, open descriptors and threads are sampled (from /proc). The
first `WARM_UP` seconds of the load (60 s; a fifth of a run shorter than 5 minutes) are the
warm-up: the daemon's heap reaches its working size, every session's Lua runtimes are made
and trio's worker threads started. RSS growth is measured from the first sample at or after
the warm-up to the last one (taken once the clients stopped), and from it to the highest
sample after it. Descriptors vary under load with the git processes and pipes in flight, so
they are compared with no request running: before the load (every client connected) and
after it.

Prints: requests, errors by kind (unexpected, during faults, expected), p50/p99 per
operation, each fault's recovery, every server's restarts, and the daemon's RSS, fds and
threads: at start, after warm-up, at the peak and at the end, with the growth, and every
sample.

Run: .venv/bin/python bench/soak.py [--minutes 10] [--clients 64] [--stop-seconds 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from common import Daemon, DaemonClient, RpcFailed, alive  # bench/

SAMPLE_SECONDS = 10.0
WARM_UP = 60.0  # seconds of load before RSS growth is measured (see above)
CLIENT_TIMEOUT = 120.0  # a reply that takes longer is a `client_timeout`
FAULT_GRACE = 35.0  # seconds after recovery a request sent during the fault may still fail

PYTHON = {
    "lib.py": '''\
def compute(value: int) -> int:
    """Double the value."""
    return value * 2


class Box:
    def total(self) -> int:
        return compute(3) + compute(4)
''',
    "use.py": "from lib import Box, compute\n\nprint(compute(1) + Box().total())\n",
}
GO = {
    "go.mod": "module example.com/soak\n\ngo 1.19\n",
    "main.go": """\
package main

import (
\t"fmt"

\t"example.com/soak/lib"
)

func main() {
\tfmt.Println(lib.Add(1, 2), lib.Twice(3))
}
""",
    "lib/lib.go": "package lib\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    "lib/more.go": "package lib\n\nfunc Twice(a int) int {\n\treturn Add(a, a)\n}\n",
}
C = {
    "compile_flags.txt": "-std=c11\n-I.\n",
    "lib.h": "int add(int a, int b);\n",
    "lib.c": '#include "lib.h"\n\nint add(int a, int b) { return a + b; }\n',
    "main.c": (
        '#include <stdio.h>\n#include "lib.h"\n\n'
        'int main(void) {\n    printf("%d\\n", add(1, 2));\n    return 0;\n}\n'
    ),
}


@dataclass(frozen=True)
class Project:
    """A root's files and where its clients ask (a use of a function defined elsewhere)."""

    name: str
    files: dict[str, str]
    path: str  # the file asked about
    needle: str  # the position asked about: the start of this text in `path`
    scratch: str  # the file the edits rewrite and format
    ugly: str  # its content before each format


PROJECTS = [
    Project("py0", PYTHON, "use.py", "compute(1)", "scratch.py", "x=[1,2,\n  3]\n"),
    Project("py1", PYTHON, "use.py", "compute(1)", "scratch.py", "y = {  'a':1 }\n"),
    Project("go", GO, "main.go", "Add(1", "scratch.go", "package main\nfunc  f( ) {  }\n"),
    Project("c", C, "main.c", "add(1", "scratch.c", "int   f( void ){return 1 ;}\n"),
]  # fmt: skip
KILLED, STOPPED = "py0", "py1"  # whose basedpyright is killed, and stopped


def position(text: str, needle: str) -> tuple[int, int]:
    """1-based line and character of the start of `needle` in `text`."""
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def make_root(base: Path, project: Project) -> Path:
    root = base / project.name
    for name, text in project.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / project.scratch).write_text(project.ugly)
    quiet = {"capture_output": True, "check": True}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], **quiet)  # type: ignore[call-overload]
    subprocess.run(["git", "-C", str(root), "add", "-A"], **quiet)  # type: ignore[call-overload]
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=Soak", "-c", "user.email=soak@example.com",
         "commit", "-q", "-m", "first"], **quiet,
    )  # type: ignore[call-overload]  # fmt: skip
    return Path(os.path.realpath(root))


@dataclass
class Stats:
    """Every request's outcome, shared by the client threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    # (when the reply came, root, op, kind) of every error
    events: list[tuple[float, str, str, str]] = field(default_factory=list)
    empty: Counter[str] = field(default_factory=Counter)  # answers with status not_found
    messages: dict[str, str] = field(default_factory=dict)  # the first message of each kind

    def record(self, root: str, op: str, seconds: float, kind: str | None, at: float) -> None:
        with self.lock:
            self.latencies[op].append(seconds)
            if kind is not None:
                self.events.append((at, root, op, kind))


@dataclass
class Fault:
    root: str
    what: str
    started: float
    resumed: float | None = None  # SIGCONT (a stop), or the kill itself
    recovered: float | None = None

    def covers(self, root: str, at: float) -> bool:
        end = (self.recovered if self.recovered is not None else float("inf")) + FAULT_GRACE
        return root == self.root and self.started <= at <= end


class Client:
    """One simulated agent: a connection bound to its root's session."""

    def __init__(self, daemon: Daemon, root: Path, project: Project, seed: int) -> None:
        self.daemon, self.root, self.project = daemon, root, project
        self.rng = random.Random(seed)
        self.line, self.character = position(project.files[project.path], project.needle)
        self.conn = self._connect()

    def _connect(self) -> DaemonClient:
        conn = DaemonClient(self.daemon.socket)
        conn.sock.settimeout(CLIENT_TIMEOUT)
        conn.call("session/open", {"root": str(self.root)})
        return conn

    def reconnect(self) -> None:
        self.conn.close()
        self.conn = self._connect()

    def at(self) -> dict[str, Any]:
        return {"path": self.project.path, "line": self.line, "character": self.character}

    def hover(self) -> Any:
        return self.conn.tool("get_hover_info", self.at())

    def definition(self) -> Any:
        return self.conn.tool("go_to_definition", self.at())

    def references(self) -> Any:
        return self.conn.tool("find_references", self.at())

    def diagnostics(self) -> Any:
        return self.conn.tool("get_diagnostics", {"path": self.project.path})

    def git_status(self) -> Any:
        return self.conn.tool("git_command", {"subcommand": "status"})

    def git_log(self) -> Any:
        return self.conn.tool("git_command", {"subcommand": "log", "args": ["-5"]})

    def lua(self) -> Any:
        source = (
            "local st = codeward.git('status', {}).parsed\n"
            "local n = 0 for i = 1, 2000 do n = n + i end\n"
            "return {n, st.branch.head}"
        )
        return self.conn.call("lua/eval", {"source": source})

    def edit(self) -> Any:
        (self.root / self.project.scratch).write_text(self.project.ugly)
        return self.conn.tool("format_code", {"path": self.project.scratch})


OPS: dict[str, tuple[int, Callable[[Client], Any]]] = {
    "hover": (25, Client.hover),
    "definition": (15, Client.definition),
    "references": (10, Client.references),
    "diagnostics": (10, Client.diagnostics),
    "git status": (10, Client.git_status),
    "git log": (8, Client.git_log),
    "lua/eval": (10, Client.lua),
    "edit": (2, Client.edit),
}
# Racing edits of one file: the second one is refused, as it should; and an answer computed
# while the edits changed a file of the project (the server's ContentModified, retried once)
# is refused as about content that no longer exists.
EXPECTED = {"stale_edit", "content_modified"}
CONTENT_MODIFIED = -32801


def run_client(client: Client, end: float, stats: Stats, t0: float) -> None:
    names = list(OPS)
    weights = [OPS[name][0] for name in names]
    while time.monotonic() < end:
        op = client.rng.choices(names, weights)[0]
        started = time.monotonic()
        kind: str | None = None
        try:
            result = OPS[op][1](client)
            if isinstance(result, dict) and result.get("status") == "not_found":
                with stats.lock:
                    stats.empty[op] += 1
        except RpcFailed as exc:
            kind = "content_modified" if exc.data.get("code") == CONTENT_MODIFIED else exc.kind
            with stats.lock:
                stats.messages.setdefault(f"{kind} ({client.project.name} {op})", str(exc))
        except TimeoutError:
            kind = "client_timeout"
        except OSError:
            kind = "connection_lost"
        if kind in ("client_timeout", "connection_lost"):
            try:
                client.reconnect()
            except (OSError, RpcFailed):
                time.sleep(1)
        now = time.monotonic()
        stats.record(client.project.name, op, now - started, kind, now - t0)


class Sample(NamedTuple):
    at: float  # seconds into the load
    rss: float  # MB
    fds: int
    threads: int


def sample(pid: int, at: float) -> Sample:
    """The daemon's resident memory, open descriptors and threads now."""
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return Sample(at, rss_kb / 1024, fds, len(os.listdir(f"/proc/{pid}/task")))


def server_pid(control: DaemonClient, root: Path, name: str) -> int | None:
    for session in control.call("session/list", {})["sessions"]:
        if session["root"] == str(root):
            for server in session["servers"]:
                if server["name"] == name and server.get("pid"):
                    return int(server["pid"])
    return None


def wait_answer(client: Client, deadline: float) -> float | None:
    """Ask hover and references until both answer; the moment they did, or None."""
    while time.monotonic() < deadline:
        try:
            client.hover()
            client.references()
            return time.monotonic()
        except RpcFailed:
            time.sleep(0.5)
        except OSError:
            time.sleep(0.5)
            with contextlib.suppress(OSError, RpcFailed):
                client.reconnect()
    return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--stop-seconds", type=float, default=20.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cw-soak-", dir="/tmp") as tmp:
        base = Path(tmp)
        roots = {p.name: make_root(base / "roots", p) for p in PROJECTS}
        daemon = Daemon(base)
        try:
            soak(daemon, roots, options.minutes * 60, options.clients, options.stop_seconds)
        finally:
            daemon.stop()


def soak(
    daemon: Daemon, roots: dict[str, Path], seconds: float, count: int, stop_seconds: float
) -> None:
    by_name = {p.name: p for p in PROJECTS}
    control = DaemonClient(daemon.socket)
    print(f"soak: {count} clients on {len(roots)} roots ({', '.join(roots)}) for {seconds:g} s")
    warm = time.monotonic()
    probes = {name: Client(daemon, roots[name], by_name[name], -1) for name in roots}
    for name, probe in probes.items():  # start every server and wait for its answers
        if wait_answer(probe, time.monotonic() + 120) is None:
            raise SystemExit(f"{name}: no answer from its servers within 120 s")
    daemon.note_servers(control)
    print(f"servers answering after {time.monotonic() - warm:.1f} s")
    clients = [
        Client(daemon, roots[PROJECTS[i % len(PROJECTS)].name], PROJECTS[i % len(PROJECTS)], i)
        for i in range(count)
    ]
    stats = Stats()
    samples: list[Sample] = []
    faults: list[Fault] = []
    t0 = time.monotonic()
    end = t0 + seconds
    samples.append(sample(daemon.proc.pid, 0.0))
    threads = [
        threading.Thread(target=run_client, args=(c, end, stats, t0), daemon=True) for c in clients
    ]
    for thread in threads:
        thread.start()

    def at(fraction: float) -> None:
        """Sample until `fraction` of the run has passed."""
        target = t0 + fraction * seconds
        while (now := time.monotonic()) < target:
            next_sample = t0 + (len(samples)) * SAMPLE_SECONDS
            time.sleep(max(0.0, min(target, next_sample) - now))
            if time.monotonic() >= next_sample:
                samples.append(sample(daemon.proc.pid, time.monotonic() - t0))

    at(0.25)
    pid = server_pid(control, roots[KILLED], "basedpyright")
    if pid is not None:
        fault = Fault(KILLED, f"basedpyright killed (pid {pid})", time.monotonic() - t0)
        os.kill(pid, signal.SIGKILL)
        fault.resumed = fault.started
        faults.append(fault)
        moment = wait_answer(probes[KILLED], time.monotonic() + 120)
        fault.recovered = None if moment is None else moment - t0
    at(0.5)
    pid = server_pid(control, roots[STOPPED], "basedpyright")
    if pid is not None:
        fault = Fault(STOPPED, f"basedpyright stopped (pid {pid})", time.monotonic() - t0)
        faults.append(fault)
        os.kill(pid, signal.SIGSTOP)
        at(fault.started / seconds + stop_seconds / seconds)
        if alive(pid):
            os.kill(pid, signal.SIGCONT)
        fault.resumed = time.monotonic() - t0
        moment = wait_answer(probes[STOPPED], time.monotonic() + 120)
        fault.recovered = None if moment is None else moment - t0
    at(1.0)
    for thread in threads:
        thread.join(CLIENT_TIMEOUT + 10)
    samples.append(sample(daemon.proc.pid, time.monotonic() - t0))
    daemon.note_servers(control)
    sessions = control.call("session/list", {})["sessions"]
    report(stats, samples, faults, sessions, roots, time.monotonic() - t0)
    for client in [*clients, *probes.values()]:
        client.conn.close()
    control.close()


def report(
    stats: Stats,
    samples: list[Sample],
    faults: list[Fault],
    sessions: list[dict[str, Any]],
    roots: dict[str, Path],
    elapsed: float,
) -> None:
    total = sum(len(v) for v in stats.latencies.values())
    unexpected: Counter[str] = Counter()
    during: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    per_op: Counter[str] = Counter()
    for t, root, op, kind in stats.events:
        per_op[op] += 1
        if kind in EXPECTED:
            expected[kind] += 1
        elif any(f.covers(root, t) for f in faults):
            during[kind] += 1
        else:
            unexpected[f"{kind} ({root} {op} at {t:.0f} s)" if len(unexpected) < 20 else kind] += 1
    print(f"requests: {total} in {elapsed:.0f} s ({total / elapsed:.1f}/s)")
    print(f"errors: {sum(unexpected.values())} unexpected, {sum(during.values())} during faults, "
          f"{sum(expected.values())} expected")  # fmt: skip
    for title, counter in (("unexpected", unexpected), ("during faults", during),
                           ("expected", expected)):  # fmt: skip
        if counter:
            print(f"  {title}: " + ", ".join(f"{k} x{n}" for k, n in counter.most_common()))
    for where, message in sorted(stats.messages.items()):
        print(f"  first {where}: {message[:300]}")
    print(f"{'operation':<12} {'count':>7} {'p50 ms':>8} {'p99 ms':>9} {'errors':>7} {'empty':>6}")
    for op in OPS:
        values = stats.latencies.get(op, [])
        if not values:
            continue
        p50, p99 = statistics.median(values) * 1000, percentile(values, 0.99) * 1000
        print(f"{op:<12} {len(values):>7} {p50:>8.1f} {p99:>9.1f} {per_op[op]:>7} "
              f"{stats.empty[op]:>6}")  # fmt: skip
    for fault in faults:
        if fault.recovered is None:
            print(f"fault {fault.root}: {fault.what} at {fault.started:.0f} s: NOT recovered")
        else:
            resumed = fault.resumed or fault.started
            after = fault.recovered - resumed
            print(f"fault {fault.root}: {fault.what} at {fault.started:.0f} s, resumed at "
                  f"{resumed:.0f} s: answered again {after:.1f} s later")  # fmt: skip
    start, last = samples[0], samples[-1]
    warm_up = min(WARM_UP, elapsed / 5)
    warmed = next((s for s in samples if s.at >= warm_up), start)
    after = [s for s in samples if s.at >= warmed.at]
    peak = max(after, key=lambda s: s.rss)
    print(f"daemon RSS: {start.rss:.1f} MB at start, {warmed.rss:.1f} MB after the warm-up "
          f"({warmed.at:.0f} s), peak {peak.rss:.1f} MB at {peak.at:.0f} s, {last.rss:.1f} MB "
          f"at end: {growth(warmed.rss, last.rss)} after warm-up "
          f"({growth(warmed.rss, peak.rss)} at the peak)")  # fmt: skip
    busy = [s.fds for s in samples[1:-1]] or [start.fds]
    print(f"daemon fds: {start.fds} before the load, {last.fds} after it "
          f"({growth(start.fds, last.fds)}); {min(busy)}-{max(busy)} under load (git "
          "processes and pipes in flight)")  # fmt: skip
    print(f"daemon threads: {start.threads} at start, at most {max(s.threads for s in samples)}, "
          f"{last.threads} at end")  # fmt: skip
    print("samples (s:MB:fds:threads): "
          + " ".join(f"{s.at:.0f}:{s.rss:.1f}:{s.fds}:{s.threads}" for s in samples))  # fmt: skip
    names = {str(path): name for name, path in roots.items()}
    restarts = [
        f"{names.get(s['root'], '?')} {server['name']} {server['restarts']} ({server['state']})"
        for s in sessions
        for server in s["servers"]
    ]
    print("servers (root, name, restarts, state): " + "; ".join(restarts))


def growth(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.1f}%" if before else "n/a"


if __name__ == "__main__":
    main()
