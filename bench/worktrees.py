"""Four worktrees of one repository on one set of servers, against four separate checkouts.

Side by side in one run, each on a daemon of its own (a real `python -m
codeward.daemon.main` on a private socket, the roots trusted):
- **shared**: a clone of codeward's own checkout and three `git worktree add`s of it: one
  repository, so its roots share one process per server (basedpyright, ruff);
- **separate**: the same clone and three more clones of it: four repositories, one process
  per server each, as every worktree had before they were shared.
In each, every root gets a hover and the diagnostics of one file (which start basedpyright
and ruff), one root after another. Printed:
1. the servers' memory (RSS of their process groups, once their CPU went quiet) once every
   root answered, against one root's alone (target: shared <= 1.5x one root's; separate is
   what it was: ~4x);
2. the first hover of roots 2-4 against root 1's cold one (target: <= half of it, shared);
3. warm hover and definition in a worktree on the shared process against a checkout on its
   own process, alternating, the median of N each (target: ratio <= 1.05);
4. the same memory figure for gopls, clangd and typescript-language-server on a small
   project of their language, per server.

Run: .venv/bin/python bench/worktrees.py [--runs N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient, RpcFailed, alive, cpu_seconds  # bench/

REPO = Path(__file__).resolve().parents[1]
ROOTS = 4
# a hover and a definition in codeward's own source: a call of a function of another module
PY_FILE = "codeward/daemon/session.py"
PY_NEEDLE = "load_project_config(root)"
SMALL = {
    "gopls": (
        {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "main.go": 'package main\n\nimport "example.com/demo/lib"\n\n'
            "func main() {\n\t_ = lib.Scale(3)\n}\n",
            "lib/lib.go": "package lib\n\n// Scale doubles x.\nfunc Scale(x int) int {\n"
            "\treturn x * 2\n}\n",
        },
        "main.go",
        "Scale(3",
    ),
    "clangd": (
        {
            "main.c": "static int scale(int x) { return x * 2; }\n\n"
            "int main(void) { return scale(3); }\n"
        },
        "main.c",
        "scale(3",
    ),
    "typescript-language-server": (
        {
            "tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n',
            "lib.ts": "export function scale(x: number): number {\n  return x * 2;\n}\n",
            "main.ts": 'import { scale } from "./lib";\n\nexport const value = scale(3);\n',
        },
        "main.ts",
        "scale(3",
    ),
}


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def layouts(base: Path, origin: Path) -> tuple[list[Path], list[Path]]:
    """(a clone of `origin` and 3 worktrees of it, the same clone and 3 more clones)."""
    main = base / "main"
    git(base, "clone", "-q", "--no-hardlinks", str(origin), str(main))
    shared, separate = [main], [main]
    for n in range(1, ROOTS):
        git(main, "worktree", "add", "-q", "-b", f"task{n}", str(base / f"wt{n}"))
        shared.append(base / f"wt{n}")
        git(base, "clone", "-q", str(main), str(base / f"clone{n}"))
        separate.append(base / f"clone{n}")
    return [p.resolve() for p in shared], [p.resolve() for p in separate]


def small_repo(base: Path, files: dict[str, str]) -> Path:
    origin = base / "origin"
    for name, text in files.items():
        (origin / name).parent.mkdir(parents=True, exist_ok=True)
        (origin / name).write_text(text)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "first")
    return origin


def position(root: Path, path: str, needle: str) -> dict[str, Any]:
    text = (root / path).read_text()
    at = text.index(needle)
    line = text.count("\n", 0, at) + 1
    return {"path": path, "line": line, "character": at - (text.rfind("\n", 0, at) + 1) + 1}


def group_rss_mib(pids: set[int]) -> float:
    """The RSS of every process in the process groups of `pids` (each server's group)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            pgid = int(stat.rsplit(")", 1)[1].split()[2])
            if pgid in pids:
                status = Path(f"/proc/{entry}/status").read_text()
                rss = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
                total += int(rss.split()[1])
    return total / 1024


def settled_rss_mib(pids: set[int], limit: float = 180.0) -> float:
    """The servers' RSS once their CPU has gone quiet (under 5% of a core over 2 s, at
    most `limit` s): a server analysing the workspace in the background is still growing."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = sum(cpu_seconds(pid) for pid in pids if alive(pid))
        time.sleep(2.0)
        if sum(cpu_seconds(pid) for pid in pids if alive(pid)) - before < 0.1:
            break
    return group_rss_mib(pids)


def server_pids(client: DaemonClient, names: set[str]) -> set[int]:
    return {
        server["pid"]
        for session in client.call("session/list", {})["sessions"]
        for server in session["servers"]
        if server["name"] in names and server.get("pid")
    }


@contextlib.contextmanager
def daemon(tmp: Path) -> Iterator[Daemon]:
    tmp.mkdir(parents=True)
    d = Daemon(tmp)
    try:
        yield d
    finally:
        d.stop()


def open_root(d: Daemon, root: Path) -> DaemonClient:
    client = DaemonClient(d.socket)
    client.call("trust/set", {"root": str(root)})
    client.call("session/open", {"root": str(root)})
    return client


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def visit(
    d: Daemon, roots: list[Path], path: str, needle: str, names: set[str], diagnose: bool
) -> tuple[list[DaemonClient], list[float], float, float]:
    """Each root in turn: hover (timed, cold) and, with `diagnose`, the file's diagnostics.
    (clients, first hovers in ms, servers' RSS after root 1, after all)."""
    clients, firsts, one = [], [], 0.0
    for n, root in enumerate(roots):
        client = open_root(d, root)
        clients.append(client)
        at = position(root, path, needle)
        firsts.append(timed(lambda c=client, a=at: c.tool("get_hover_info", a)))
        if diagnose:
            client.tool("get_diagnostics", {"path": path})
        d.note_servers(client)
        if n == 0:
            one = settled_rss_mib(server_pids(client, names))
    return clients, firsts, one, settled_rss_mib(server_pids(clients[0], names))


def warm(clients: list[tuple[str, DaemonClient, dict[str, Any]]], tool: str, runs: int) -> dict:
    """Median ms of `tool` per label, the calls alternating between the labels."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in clients}
    for _ in range(runs):
        for label, client, at in clients:
            times[label].append(timed(lambda c=client, a=at: c.tool(tool, a)))
    return {label: statistics.median(values) for label, values in times.items()}


def python_figures(base: Path, runs: int) -> None:
    shared_roots, separate_roots = layouts(base, REPO)
    names = {"basedpyright", "ruff"}
    with daemon(base / "d-shared") as shared_d, daemon(base / "d-separate") as separate_d:
        shared = visit(shared_d, shared_roots, PY_FILE, PY_NEEDLE, names, diagnose=True)
        separate = visit(separate_d, separate_roots, PY_FILE, PY_NEEDLE, names, diagnose=True)
        print(f"basedpyright + ruff, {ROOTS} roots of codeward's own checkout")
        for label, (_, firsts, one, every) in (("worktrees", shared), ("clones", separate)):
            later = statistics.median(firsts[1:])
            print(
                f"  {label:9} servers' RSS: 1 root {one:7.0f} MiB, {ROOTS} roots {every:7.0f} MiB"
                f" = {every / one:.2f}x   first hover: root 1 {firsts[0]:7.0f} ms, roots 2-4"
                f" (median) {later:6.0f} ms = {later / firsts[0]:.2f}x"
            )
        pair = [
            ("worktree", shared[0][1], position(shared_roots[1], PY_FILE, PY_NEEDLE)),
            ("own", separate[0][1], position(separate_roots[1], PY_FILE, PY_NEEDLE)),
        ]
        for tool in ("get_hover_info", "go_to_definition"):
            medians = warm(pair, tool, runs)
            print(
                f"  warm {tool}: worktree on the shared process {medians['worktree']:.2f} ms,"
                f" checkout on its own {medians['own']:.2f} ms,"
                f" ratio {medians['worktree'] / medians['own']:.3f} (target <= 1.05)"
            )


def small_figures(base: Path) -> None:
    for name, (files, path, needle) in SMALL.items():
        where = base / name
        where.mkdir()
        shared_roots, separate_roots = layouts(where, small_repo(where, files))
        try:
            with daemon(where / "d-shared") as shared_d, daemon(where / "d-separate") as other:
                _, _, one, every = visit(shared_d, shared_roots, path, needle, {name}, False)
                _, _, one_s, every_s = visit(other, separate_roots, path, needle, {name}, False)
        except RpcFailed as exc:
            print(f"{name}: skipped ({exc.kind}: {exc})")
            continue
        print(
            f"{name}: {ROOTS} worktrees {every:6.0f} MiB = {every / one:.2f}x one root's"
            f" ({one:.0f} MiB); {ROOTS} clones {every_s:6.0f} MiB = {every_s / one_s:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="warm calls per side")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="cw-wt-") as tmp:
        base = Path(tmp)
        (base / "python").mkdir()
        python_figures(base / "python", args.runs)
        small = base / "small"
        small.mkdir()
        small_figures(small)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
