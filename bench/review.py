"""A change reviewed: `get_diagnostics since: "HEAD"` against the plain diagnostics of the
changed files, and `review_changes`, on a clone of codeward's own checkout.

Clones this checkout (its committed HEAD) into a temporary folder, changes 3 files there (a
type error introduced in one, a function renamed in another whose callers are elsewhere, a
body changed in a third), starts a daemon on a private socket, warms the servers, then per
round changes the 3 files' content again (a comment line with the round's number, so the
servers have new text to check every time) and alternately asks (the order rotated every
round, so machine load hits both alike):
  - the plain diagnostics of the 3 files (`get_diagnostics path=...`, one after the other);
  - `get_diagnostics since: "HEAD"` (the delta of the whole change) as an agent repeats it
    while it works: the revision's diagnostics remembered, the working tree's asked;
  - the same, the first time for the revision's state (an added file's stat changed before
    it, so the servers are shown the revision's text and asked again: two analyses);
  target <= 2x the plain diagnostics (the change has a 4th file, the added one).
Then `review_changes` (median time, and the characters of the text a model reads).

Run: .venv/bin/python bench/review.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient  # bench/

from codeward.protocol.render.tool_text import tool_text

HERE = Path(__file__).resolve().parent
SCRATCH = "codeward/scratch.py"
CHECKOUT = HERE.parent
# file, old text, new text: the change reviewed
CHANGE = [
    ("codeward/daemon/edits/hunks.py", "return found\n", "return len(found)\n"),
    ("codeward/daemon/git/messages.py", "def failure_message(", "def git_failure_message("),
    ("codeward/protocol/render/daemon.py", 'return "?"', 'return "unknown"'),
]


def clone(into: Path) -> Path:
    """A clone of this checkout's HEAD, the 3 files changed, the venv linked (ignored)."""
    subprocess.run(["git", "clone", "-q", str(CHECKOUT), str(into)], check=True)
    (into / SCRATCH).write_text("SCRATCH = 1\n")  # an added file (untracked)
    venv = CHECKOUT / ".venv"
    if venv.exists():
        (into / ".venv").symlink_to(venv.resolve())
    for name, old, new in CHANGE:
        path = into / name
        text = path.read_text()
        assert old in text, f"{name} no longer holds {old!r}: update CHANGE"
        path.write_text(text.replace(old, new, 1))
    return into


def bump(root: Path, round_: int) -> None:
    """New content for the 3 files: a comment line naming the round, at their end."""
    for name, _, _ in CHANGE:
        path = root / name
        lines = path.read_text().splitlines(keepends=True)
        if lines and lines[-1].startswith("# round "):
            lines.pop()
        path.write_text("".join(lines) + f"# round {round_}\n")


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = call()
    return time.perf_counter() - t0, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cw-review-"))
    daemon = None
    try:
        root = clone(Path(os.path.realpath(tmp)) / "codeward")
        daemon = Daemon(tmp / "daemon")
        client = DaemonClient(daemon.socket)
        client.call("session/open", {"root": str(root)})
        names = [name for name, _, _ in CHANGE]

        def plain() -> list[Any]:
            return [client.tool("get_diagnostics", {"path": name}) for name in names]

        def since() -> Any:
            return client.tool("get_diagnostics", {"since": "HEAD"})

        def first_since() -> Any:
            os.utime(root / SCRATCH)  # a new stat: the revision's state is asked again
            return since()

        t0 = time.perf_counter()
        plain()
        since()  # the servers started and warm
        warm = time.perf_counter() - t0
        print(f"warm-up (servers started, the workspace analysed): {warm:.1f} s")
        samples: dict[str, list[float]] = {"plain": [], "since": [], "first": []}
        last: Any = None
        for i in range(args.rounds):
            order = [("plain", plain), ("since", since), ("first", first_since)]
            order = order[i % 3 :] + order[: i % 3]
            for k, (label, call) in enumerate(order):
                bump(root, i * 3 + k)
                took, result = timed(call)
                samples[label].append(took)
                if label == "since":
                    last = result
        plain_ms, since_ms, first_ms = (
            statistics.median(samples[label]) * 1e3 for label in ("plain", "since", "first")
        )
        print(f"\nchange of {len(names)} files in a clone of codeward (median of {args.rounds})")
        print(f"  plain diagnostics of the 3 files   {plain_ms:8.1f} ms")
        print(f"  get_diagnostics since HEAD         {since_ms:8.1f} ms   ratio "
              f"{since_ms / plain_ms:5.2f}x   (target <= 2.0x)")  # fmt: skip
        print(f"    first call for the state         {first_ms:8.1f} ms   ratio "
              f"{first_ms / plain_ms:5.2f}x")  # fmt: skip
        print(
            f"    files reported: {[f['file'] for f in last['files']]}, "
            f"{last['introduced_count']} introduced, {last['resolved_count']} resolved"
        )
        reviews: list[float] = []
        review: Any = None
        for i in range(max(3, args.rounds // 2)):
            bump(root, 1000 + i)
            took, review = timed(lambda: client.tool("review_changes", {"since": "HEAD"}))
            reviews.append(took)
        text = tool_text("review_changes", review)
        print(f"  review_changes                     {statistics.median(reviews) * 1e3:8.1f} ms"
              f"   text {len(text)} characters, {len(text.splitlines())} lines")  # fmt: skip
        print("\n" + "\n".join("    " + line for line in text.splitlines()[:40]))
        client.close()
    finally:
        if daemon is not None:
            daemon.stop()
            if os.environ.get("CW_SHOW_LOG"):
                print(daemon.log.read_text()[-5000:])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
