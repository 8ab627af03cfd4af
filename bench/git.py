"""git status through the daemon against git run directly, and the Lua host-call overhead.

Builds a repository of 10,000 files, starts a daemon on a private socket, and prints the
median of 50 `git_command status` calls against the median of 50 direct
`git status --porcelain=v2` runs (milliseconds and ratio), then the cost of one Lua host
call in microseconds (an eval making N `codeward.call`s against one making none).
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

from common import Daemon, DaemonClient  # bench/

HOST_CALLS = 500


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
        repo = Path(os.path.realpath(tmp / "repo"))
        make_repo(repo, args.files)
        daemon = Daemon(tmp)
        client = DaemonClient(daemon.socket)
        client.call("session/open", {"root": str(repo)})

        def through_daemon(status_args: list[str]) -> None:
            arguments = {"subcommand": "status", "args": status_args}
            result = client.tool("git_command", arguments)
            assert result["parsed"]["unstaged"], "status saw no changes"

        def direct() -> None:
            subprocess.run(["git", "status", "--porcelain=v2"], cwd=repo, check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip

        direct_ms = statistics.median(timed(direct, args.runs)) * 1e3
        print(f"repository: {args.files} files; median of {args.runs} runs")
        print(f"git status --porcelain=v2 directly   {direct_ms:8.2f} ms")
        for label, status_args in (
            ("git_command status --porcelain=v2", ["--porcelain=v2"]),
            ("git_command status (long format)", []),
        ):
            samples = timed(lambda a=status_args: through_daemon(a), args.runs)
            ms = statistics.median(samples) * 1e3
            print(f"{label:<36} {ms:8.2f} ms   ratio {ms / direct_ms:5.2f}x")

        def lua(calls: int) -> float:
            source = (
                f"for i = 1, {calls} do pcall(codeward.call, 'no_such_tool', {{}}) end return true"
            )
            samples = timed(lambda: client.call("lua/eval", {"source": source}), 20)
            return statistics.median(samples)

        per_call = (lua(HOST_CALLS) - lua(0)) / HOST_CALLS * 1e6
        print(f"Lua host call (codeward.call round trip) {per_call:8.1f} us per call")
        client.close()
    finally:
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
