"""The daemon's own memory after its sessions close, against its size at start.

A real daemon (with real basedpyright and ruff) serves `--rounds` sessions one after the
other, each on its own generated Python project of `--modules` modules: 40 documents'
diagnostics asked, hovers, workspace symbols, safe edits; then `session/close` with
`terminate`. The daemon's RSS (from /proc) is read at start (after one request), at the
peak of each session and after all closed; with `--compare TREE`, the same run on a daemon
of another source tree (e.g. main) is printed beside it.

Run: .venv/bin/python bench/daemon_memory.py [--rounds 4] [--modules 200] [--compare /work/main]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from common import Daemon, DaemonClient  # bench/

OPEN = 40


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def module(i: int) -> str:
    head = f"from pkg.m{i - 1} import f{i - 1}\n\n" if i else ""
    body = f"def f{i}(x: int) -> int:\n    return x + {i}\n"
    use = f"\n\nV{i} = f{i - 1}({i})\n" if i else ""
    bad = f"\n\nBAD{i}: int = 'not an int {i}'\n" if i % 5 == 0 else ""
    return head + body + use + bad


def project(base: Path, modules: int) -> Path:
    root = base / "pkg"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    for i in range(modules):
        (root / f"m{i}.py").write_text(module(i))
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    return base


def run(source: Path | None, rounds: int, modules: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="cwmem-", dir="/tmp") as tmp:
        daemon = Daemon(Path(tmp) / "d", source)
        try:
            client = DaemonClient(daemon.socket)
            client.call("daemon/status", {})
            figures = [rss_mb(daemon.proc.pid)]
            for r in range(rounds):
                root = project(Path(tmp) / f"p{r}", modules)
                client.call("session/open", {"root": str(root)})
                for i in range(modules - OPEN, modules):
                    client.tool("get_diagnostics", {"path": f"pkg/m{i}.py"})
                    where = {"path": f"pkg/m{i}.py", "line": 4, "character": 5}
                    client.tool("get_hover_info", where)
                client.tool("get_symbols", {"scope": "workspace", "query": "f1"})
                text = (root / "pkg" / "m1.py").read_text()
                for extra in ("\nX: int = 'no'\n", "\n# fine\n"):
                    client.tool(
                        "edit_file", {"path": "pkg/m1.py", "content": text + extra, "mode": "safe"}
                    )
                daemon.note_servers(client)
                figures.append(rss_mb(daemon.proc.pid))
                client.call("session/close", {"terminate": True})
            time.sleep(2)  # the sessions' tasks end, servers reaped
            figures.append(rss_mb(daemon.proc.pid))
            client.close()
            return figures
        finally:
            daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args()
    runs = {"this tree": run(None, args.rounds, args.modules)}
    if args.compare is not None:
        runs[str(args.compare)] = run(args.compare, args.rounds, args.modules)
    print(f"daemon RSS (MB): start, after each of {args.rounds} sessions, after all closed")
    for name, figures in runs.items():
        start, *peaks, end = figures
        shown = " ".join(f"{f:.1f}" for f in peaks)
        print(f"{name:>14}: start {start:.1f} | {shown} | closed {end:.1f} ({end / start:.2f}x)")


if __name__ == "__main__":
    main()
