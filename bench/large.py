"""A large repository through the daemon against basedpyright driven directly with the same
settings, side by side in one run.

The repository is a generated Python project (`--modules`, 2,000 by default: packages of
50 modules with real cross-imports, a deliberate type error in every tenth, and a function
`shared` every module imports and calls, so it has 4,000 references), or, with
`LARGE_REPO` set to a checkout of sympy, a clone of it in a temp dir (the daemon trusts the
root and may write there). A real daemon (empty user config, the root trusted) and a
direct basedpyright (`bench/lsp.py`'s client: the daemon's own capabilities and settings)
serve it; calls alternate. Printed:

1. first workspace symbols (the daemon's first call of the session against the direct
   server's first non-empty answer, counted from its spawn) and warm ones;
2. document symbols of a file, warm;
3. references of a name used 1,000+ times, warm (goal <= 1.2x direct);
4. a safe edit with 40 other documents open: a type error appended (must be refused: 0
   unsafe writes) and a harmless comment (written), each timed;
5. project diagnostics: each call until every server is complete (goal: within 3 calls),
   counts per server, what each checked, time, and the servers' CPU over the 5 s after
   each answer (goal: idle); the daemon's first call done directly (the files in its order,
   each opened and pulled in turn for the same time, the one under way given the same
   grace, then cancelled) and the direct server's CPU after it; the direct server's
   workspace pull streamed to the end, its error count, time and CPU after;
6. the servers' memory once idle (each server's process group), the direct one's;
7. the daemon's memory at start (loaded: `tools/list` answered) and after the session
   closed and its servers exited (goal <= 1.2x).

`--only edit,diagnostics` runs those parts alone (of symbols, outline, references, edit,
diagnostics, memory; the direct server is started all the same, and the daemon's memory
after close is always measured).

Run: .venv/bin/python bench/large.py [--modules 2000] [--rounds 5] [--only PARTS]
     LARGE_REPO=/work/sympy .venv/bin/python bench/large.py
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient, RpcFailed, cpu_seconds, wait_gone  # bench/
from large_direct import Direct  # bench/

from codeward.daemon.config import LspConfig
from codeward.daemon.lsp.process import group_rss
from tests.large_project import generate, group_cpu

OPEN = 40  # other documents open before the safe edit
IDLE_WINDOW = 5.0  # seconds the servers' CPU is measured over after an answer
PROBE = "\n_cw_probe: int = 'not an int'\n"
HARMLESS = "\n# a harmless comment\n"
SHARED = "def shared(value: int) -> int:\n    return value\n"


@dataclass
class Target:
    """The repository and what is asked of it."""

    root: Path
    label: str
    query: str  # workspace symbols
    references: tuple[str, int, int]  # path, 1-based line and character of a name
    outline: str  # a file whose document symbols are asked
    edit: str  # the file the safe edits go to
    others: list[str]  # files opened before the safe edit


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip


def generated(base: Path, modules: int) -> Target:
    """The generated project: `tests/large_project` modules, each also importing and calling
    `pkg0.shared.shared` (a name used 2 x `modules` times)."""
    root = base / "large"
    generate(root, modules)
    (root / "pkg0" / "shared.py").write_text(SHARED)
    for i in range(modules):
        path = root / f"pkg{i // 50}" / f"m{i}.py"
        path.write_text(
            f"from pkg0.shared import shared\n{path.read_text()}\nUSED{i} = shared({i})\n"
        )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "generated")
    middle = modules // 2
    return Target(
        root=root,
        label=f"generated, {modules} modules",
        query=f"Thing{modules - 3}",
        references=("pkg0/shared.py", 1, 5),
        outline=f"pkg{middle // 50}/m{middle}.py",
        edit=f"pkg{middle // 50}/m{middle + 1}.py",
        others=[f"pkg{i // 50}/m{i}.py" for i in range(OPEN)],
    )


def checkout(base: Path, source: Path) -> Target:
    """A clone of the sympy checkout at `source`."""
    root = base / source.name
    subprocess.run(["git", "clone", "-q", str(source), str(root)], check=True)
    symbol = root / "sympy" / "core" / "symbol.py"
    lines = symbol.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if re.match(r"class Symbol\(", text))
    core = sorted(p.name for p in (root / "sympy" / "core").glob("*.py"))
    return Target(
        root=root,
        label=f"{source.name} checkout",
        query="Symbol",
        references=("sympy/core/symbol.py", line, len("class ") + 1),
        outline="sympy/core/expr.py",
        edit="sympy/core/symbol.py",
        others=[f"sympy/core/{name}" for name in core if name != "symbol.py"][:OPEN],
    )


def first_symbols(direct: Direct, query: str) -> list[Any]:
    """Start `direct` and ask for workspace symbols until its first non-empty answer."""
    direct.start([])
    found = direct.request("workspace/symbol", {"query": query})
    while not found:
        time.sleep(0.05)
        found = direct.request("workspace/symbol", {"query": query})
    return found


def quiet(pids: dict[str, int], direct: Direct, timeout: float = 900.0) -> float:
    """Seconds until every server's process group used under 0.1 s of CPU in 1 s (the
    direct client reads its server's messages meanwhile, so its pipe never fills)."""
    begin = time.perf_counter()
    while time.perf_counter() - begin < timeout:
        before = {name: group_cpu(pid) for name, pid in pids.items()}
        direct.settle(1.0, 1.0)
        if all(group_cpu(pid) - before[name] < 0.1 for name, pid in pids.items()):
            break
    return time.perf_counter() - begin


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def servers(client: DaemonClient) -> dict[str, int]:
    """The session's running servers: name -> pid."""
    return {s["name"]: s["pid"] for s in listed(client) if s.get("pid")}


def listed(client: DaemonClient) -> list[dict[str, Any]]:
    [session] = client.call("session/list", {})["sessions"]
    return session["servers"]


def cpu_of(pid: int) -> float | None:
    """The CPU seconds of the process group of `pid`; None once it is gone."""
    try:
        return group_cpu(pid)
    except ProcessLookupError:
        return None


def cpu_after(pids: dict[str, int], direct: Direct) -> dict[str, str]:
    """Each server's CPU seconds over the next `IDLE_WINDOW` seconds (or that it went)."""
    before = {name: cpu_of(pid) for name, pid in pids.items()}
    direct.drain(IDLE_WINDOW)  # a measurement window
    shown: dict[str, str] = {}
    for name, pid in pids.items():
        start, end = before[name], cpu_of(pid)
        shown[name] = "gone" if start is None or end is None else f"{end - start:.2f} s"
    return shown


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def python_files(root: Path) -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "*.py", "*.pyi"], cwd=root, check=True, capture_output=True
    ).stdout
    return {(root / name).as_uri() for name in listed.decode().split("\0") if name}


def alternate(rounds: int, ours: Any, theirs: Any, pid: int) -> tuple[float, float, float]:
    """Medians (ms) of `ours` and `theirs` called alternately, and the daemon's CPU per call."""
    mine: list[float] = []
    direct: list[float] = []
    cpu = 0.0
    for k in range(rounds):
        for way in ("daemon", "direct") if k % 2 == 0 else ("direct", "daemon"):
            begin = time.perf_counter()
            if way == "daemon":
                before = cpu_seconds(pid)
                ours()
                mine.append(time.perf_counter() - begin)
                cpu += cpu_seconds(pid) - before
            else:
                theirs()
                direct.append(time.perf_counter() - begin)
    return ms(mine), ms(direct), cpu / rounds * 1e3


PARTS = ("symbols", "outline", "references", "edit", "diagnostics", "memory")


def run(target: Target, tmp: Path, rounds: int, parts: frozenset[str] = frozenset(PARTS)) -> None:
    root = target.root
    print(f"\n== {target.label}: {len(python_files(root)):,} Python files ({load()})")
    daemon = Daemon(tmp / "daemon")
    direct: Direct | None = None
    try:
        client = DaemonClient(daemon.socket)
        client.call("tools/list", {})  # answered once the daemon has loaded its modules
        start_mb = rss_mb(daemon.proc.pid)
        client.call("trust/set", {"root": str(root)})
        client.call("session/open", {"root": str(root)})
        pid = daemon.proc.pid

        # 1. first and warm workspace symbols: each first call with no other server running
        if "symbols" in parts:
            # (a server analysing the workspace meanwhile takes a core of the other's)
            first_direct = Direct(root)
            try:
                begin = time.perf_counter()
                found = first_symbols(first_direct, target.query)
                theirs_first = time.perf_counter() - begin
            finally:
                first_direct.stop()
            begin = time.perf_counter()
            timeouts = 0
            while True:  # as a user would: asked again after a timeout
                try:
                    first = client.tool(
                        "get_symbols", {"scope": "workspace", "query": target.query}
                    )
                    break
                except RpcFailed as exc:
                    if exc.kind != "timeout" or timeouts >= 5:
                        raise
                    timeouts += 1
            ours_first = time.perf_counter() - begin
            daemon.note_servers(client)
            direct = Direct(root)
            first_symbols(direct, target.query)
            waited = quiet({**servers(client), "direct": direct.proc.pid}, direct)
            print(f"(the servers' analysis after start: quiet after {waited:.0f} s)")
            retried = f", after {timeouts} timeouts" if timeouts else ""
            print(f"first workspace symbols {target.query!r}: daemon {ours_first:.2f} s{retried} "
                  f"({len(first['symbols'])} shown, partial: {bool(first.get('partial'))}, "
                  f"servers asked: {first.get('languages')}); direct first non-empty "
                  f"{theirs_first:.2f} s from spawn ({len(found)} found): "
                  f"{ours_first / theirs_first:.2f}x (goal <= 1.5x)")  # fmt: skip
            symbols = {"scope": "workspace", "query": target.query}
            mine, theirs, cpu = alternate(
                rounds, lambda: client.tool("get_symbols", symbols),
                lambda: direct.request("workspace/symbol", {"query": target.query}), pid,
            )  # fmt: skip
            print(f"warm workspace symbols: daemon {mine:.1f} ms, direct {theirs:.1f} ms "
                  f"({mine / theirs:.2f}x), daemon CPU {cpu:.1f} ms per call "
                  "(goal <= 50)")  # fmt: skip
        else:
            direct = Direct(root)
            direct.start([])

        # 2. document symbols, warm
        if "outline" in parts:
            direct.open(target.outline)
            outline = {"textDocument": {"uri": direct.uri(target.outline)}}
            client.tool("get_symbols", {"path": target.outline})
            direct.request("textDocument/documentSymbol", outline)
            mine, theirs, cpu = alternate(
                rounds * 2, lambda: client.tool("get_symbols", {"path": target.outline}),
                lambda: direct.request("textDocument/documentSymbol", outline), pid,
            )  # fmt: skip
            print(f"document symbols of {target.outline}: daemon {mine:.1f} ms, direct "
                  f"{theirs:.1f} ms ({mine / theirs:.2f}x), daemon CPU {cpu:.1f} ms")  # fmt: skip

        # 3. references, warm
        if "references" in parts:
            path, line, character = target.references
            direct.open(path)
            asked = {"path": path, "line": line, "character": character}
            params = {
                **direct.params(path, line, character),
                "context": {"includeDeclaration": False},
            }
            ours_refs = client.tool("find_references", asked)
            theirs_refs = direct.request("textDocument/references", params) or []
            mine, theirs, cpu = alternate(
                rounds, lambda: client.tool("find_references", asked),
                lambda: direct.request("textDocument/references", params), pid,
            )  # fmt: skip
            print(f"references at {path}:{line}:{character}: daemon {mine:.0f} ms "
                  f"({ours_refs['count']:,} found), direct {theirs:.0f} ms ({len(theirs_refs):,} "
                  f"found): {mine / theirs:.2f}x (goal <= 1.2x), "
                  f"daemon CPU {cpu:.0f} ms")  # fmt: skip

        # 4. a safe edit with other documents open
        if "edit" in parts:
            for other in target.others:
                client.tool("get_diagnostics", {"path": other})
            text = (root / target.edit).read_text()
            said = []
            for label, extra in (("type error", PROBE), ("comment", HARMLESS)):
                begin = time.perf_counter()
                answer = client.tool(
                    "edit_file", {"path": target.edit, "content": text + extra, "mode": "safe"}
                )
                took = time.perf_counter() - begin
                said.append(f"{label}: {took:.2f} s, written {answer.get('written')}, "
                            f"reason {answer.get('reason')!r}")  # fmt: skip
                if label == "type error" and answer.get("written"):
                    said.append("UNSAFE WRITE")
                if answer.get("written"):
                    client.tool(
                        "edit_file", {"path": target.edit, "content": text, "mode": "apply"}
                    )
            print(f"safe edits of {target.edit} with {len(target.others)} other documents open: "
                  + "; ".join(said))  # fmt: skip

        # 5. project diagnostics
        if "diagnostics" in parts:
            print(f"project diagnostics ({load()}):")
            for call in range(1, 6):
                begin = time.perf_counter()
                answer = client.tool("get_diagnostics", {"limit": 1_000_000})
                took = time.perf_counter() - begin
                counts: dict[str, int] = {}
                for d in answer["diagnostics"]:
                    key = f"{d.get('source')} {d['severity']}"
                    counts[key] = counts.get(key, 0) + 1
                checked = ", ".join(
                    f"{s['name']} {s['files_checked']:,}/{s['files_total']:,}"
                    f"{' complete' if s['complete'] else ''}"
                    f"{' stopped: ' + s['stopped'] if s.get('stopped') else ''}"
                    for s in answer.get("servers", [])
                )
                after = cpu_after(servers(client), direct)
                cpu = ", ".join(f"{name} {sec}" for name, sec in after.items())
                restarts = {s["name"]: s.get("restarts", 0) for s in listed(client)}
                print(f"  call {call}: {took:.1f} s; {checked}; counts {counts}; errors "
                      f"{[e.get('server') for e in answer.get('errors', [])]}; servers' CPU over "
                      f"{IDLE_WINDOW:g} s after: {cpu}; restarts {restarts}")  # fmt: skip
                if not answer.get("partial"):
                    break
            expected = python_files(root)
            # the daemon's first call, directly: its order, time and grace, then cancelled
            lsp = LspConfig()
            seconds, grace = lsp.folder_diagnostics_seconds, lsp.settle_timeout
            begin = time.perf_counter()
            answered = direct.cut_pulls(sorted(expected), seconds, grace)
            took = time.perf_counter() - begin
            idle = cpu_after({"direct": direct.proc.pid}, direct)["direct"]
            print(f"  direct, the daemon's way (files opened and pulled in turn for {seconds:g} s, "
                  f"the one under way {grace:g} s more, then cancelled): {took:.1f} s, {answered} "
                  f"files; CPU over {IDLE_WINDOW:g} s after: {idle}")  # fmt: skip
            took, complete = direct.project_diagnostics(expected, 900.0)
            idle = cpu_after({"direct": direct.proc.pid}, direct)["direct"]
            print(f"  direct workspace pull: {took:.1f} s, complete {complete}, "
                  f"{len(direct.reports):,} files reported, {direct.errors():,} errors; CPU over "
                  f"{IDLE_WINDOW:g} s after: {idle}")  # fmt: skip

        # 6. idle memory
        if "memory" in parts:
            direct.drain(IDLE_WINDOW)
            memory = {name: group_rss(p) / 2**20 for name, p in servers(client).items()}
            shown = ", ".join(f"{name} {mb:.0f} MB" for name, mb in memory.items())
            print(f"servers' memory once idle: {shown}; direct basedpyright "
                  f"{group_rss(direct.proc.pid) / 2**20:.0f} MB")  # fmt: skip

        # 7. the daemon's memory after the session closes
        peak = rss_mb(pid)
        running = list(servers(client).values())
        client.call("session/close", {"terminate": True})
        stopped = wait_gone(running)
        time.sleep(2)  # the trims after the session and its servers
        end = rss_mb(pid)
        print(f"daemon RSS: start {start_mb:.1f} MB, in the session {peak:.1f} MB, after "
              f"close {end:.1f} MB ({end / start_mb:.2f}x; goal <= 1.2x; its servers gone "
              f"{stopped:.1f} s after the close)")  # fmt: skip
        client.close()
    finally:
        if direct is not None:
            direct.stop()
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", default=",".join(PARTS), help="the parts to run: " + ",".join(PARTS)
    )
    args = parser.parse_args()
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="cw-bench-large-")))
    try:
        source = os.environ.get("LARGE_REPO")
        target = checkout(tmp, Path(source).resolve()) if source else generated(tmp, args.modules)
        run(target, tmp, args.rounds, frozenset(args.only.split(",")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
