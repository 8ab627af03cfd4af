"""Benchmark the positions a model gives: 200 `go_to_definition` calls on codeward's own
source (a copy of the `codeward` package in a temporary git repository, basedpyright as its
server), made the ways models make them:

- exact: the line and character of a name, at its definition or at a use;
- columns off by 1 to 4, either way (a 0-based count, a miscounted indent);
- whitespace and keyword columns: character 1 of a declaration's line, the `def` or `class`;
- line + name: the line and the identifier on it, no character;
- name paths: `Class.method` or a top-level `function`, with `path` and without.

Each answer is sorted into: intended (the definition it returns is the one meant), a clear
error naming candidates (an `invalid_arguments` whose `candidates` or message lists them),
an unclear error (any other failure), another symbol stated (the answer's `at` says what it
answered for instead), and silently wrong (another symbol, or nothing, without a word).
What is meant comes from the code itself: the symbols of a few files (their document
symbols) and the uses of each (`git grep -w`) whose exact position basedpyright resolves to
it. Run with PYTHONPATH at another checkout to measure that one's daemon (the tools of a
checkout without names answer those calls with an unclear error).

Run: .venv/bin/python bench/agent_positions.py [--calls 200] [--seed 26]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient, RpcFailed  # bench/

REPO = Path(__file__).resolve().parents[1]
FILES = [
    "codeward/protocol/render/intel.py",
    "codeward/protocol/tools.py",
    "codeward/daemon/tools/registry.py",
    "codeward/daemon/edits/aftermath.py",
    "codeward/daemon/git/policy.py",
    "codeward/daemon/intel/symbols.py",
    "codeward/daemon/lsp/positions.py",
]
KINDS = ("class", "function", "method")
INTENDED, CLEAR, UNCLEAR = "intended", "clear error", "unclear error"
STATED, SILENT = "other, stated", "silently wrong"


@dataclass(frozen=True)
class Target:
    path: str
    line: int
    character: int
    chain: tuple[str, ...]  # the name path: (Class, method) or (function,)

    @property
    def name(self) -> str:
        return self.chain[-1]


@dataclass(frozen=True)
class Site:
    """A place that names a target: its definition or a use."""

    target: Target
    path: str
    line: int
    character: int
    text: str  # the line


def targets(client: DaemonClient) -> list[Target]:
    found: list[Target] = []

    def walk(path: str, items: list[dict[str, Any]], chain: tuple[str, ...]) -> None:
        for item in items:
            own = (*chain, item["name"])
            if item["kind"] in KINDS and not item["name"].startswith("__"):
                found.append(Target(path, item["line"], item["character"], own))
            if item["kind"] == "class":
                walk(path, item.get("children") or [], own)

    for path in FILES:
        answer = client.tool("get_symbols", {"path": path, "kinds": list(KINDS)})
        walk(path, answer["symbols"], ())
    return found


def definition(client: DaemonClient, arguments: dict[str, Any]) -> dict[str, Any]:
    return client.tool("go_to_definition", arguments)


def places(answer: dict[str, Any]) -> set[tuple[str, int]]:
    items = answer.get("definitions") or ([answer["definition"]] if "definition" in answer else [])
    return {(d.get("path"), d.get("line")) for d in items}


def resolves(client: DaemonClient, site: Site) -> bool:
    """Whether the exact position of `site` is answered for its target (ground truth)."""
    try:
        answer = definition(client, {"path": site.path, "line": site.line,
                                     "character": site.character})  # fmt: skip
    except RpcFailed:
        return False
    return (site.target.path, site.target.line) in places(answer) and "at" not in answer


def uses(root: Path, target: Target, lines: dict[str, list[str]]) -> list[Site]:
    """Up to 3 lines outside the definition that use the target's name (a call or an
    attribute), the first occurrence on each."""
    out = subprocess.run(
        ["git", "grep", "-n", "-w", "-I", "--", target.name, "codeward"],
        cwd=root, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    found: list[Site] = []
    pattern = re.compile(rf"(?<![\w$]){re.escape(target.name)}(?![\w$])")
    for row in out.splitlines():
        path, number, text = row.split(":", 2)
        line = int(number)
        if (path, line) == (target.path, target.line) or "import" in text or "#" in text:
            continue
        match = pattern.search(text)
        if match is None or text.lstrip().startswith(("def ", "class ", '"', "'")):
            continue
        lines.setdefault(path, (root / path).read_text().splitlines())
        found.append(Site(target, path, line, match.start() + 1, text))
        if len(found) == 3:
            break
    return found


def definition_site(root: Path, target: Target, lines: dict[str, list[str]]) -> Site:
    text = lines.setdefault(target.path, (root / target.path).read_text().splitlines())
    return Site(target, target.path, target.line, target.character, text[target.line - 1])


# -- the calls models make --------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    way: str
    target: Target
    arguments: dict[str, Any]


def calls_for(site: Site, definition: bool, rng: random.Random) -> list[Call]:
    t = site.target
    at = {"path": site.path, "line": site.line}
    made = [Call("exact", t, {**at, "character": site.character})]
    for _ in range(2):
        offset = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4])
        character = max(1, min(len(site.text) + 1, site.character + offset))
        made.append(Call(f"off by {offset:+d}", t, {**at, "character": character}))
    made.append(Call("line + name", t, {**at, "name": t.name}))
    if definition:
        made.append(Call("column 1", t, {**at, "character": 1}))
        keyword = re.search(r"\b(def|class)\b", site.text)
        if keyword is not None:
            made.append(Call("keyword column", t, {**at, "character": keyword.start() + 1}))
        path = ".".join(t.chain)
        made.append(Call("name path + path", t, {"path": t.path, "symbol": path}))
        made.append(Call("name path", t, {"symbol": path}))
    return made


def classify(client: DaemonClient, call: Call) -> tuple[str, str]:
    """The call's outcome and a short note of what came back."""
    try:
        answer = definition(client, call.arguments)
    except RpcFailed as exc:
        named = exc.data.get("candidates")
        if exc.kind == "invalid_arguments" and (named or "nearest" in str(exc)):
            return CLEAR, str(exc).split(": ", 1)[-1][:160]
        return UNCLEAR, f"{exc.kind}: {exc}"[:160]
    if (call.target.path, call.target.line) in places(answer):
        return INTENDED, ""
    got = sorted(places(answer))
    if "at" in answer:
        return STATED, f"at {answer['at']['name']} -> {got}"
    return SILENT, f"-> {got or 'nothing'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--verbose", action="store_true", help="print every call not intended")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="cw-positions-") as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "project"
        shutil.copytree(REPO / "codeward", root / "codeward",
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        (root / "pyproject.toml").write_text('[project]\nname = "copy"\nversion = "0"\n')
        for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy"]):
            subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *argv],
                           cwd=root, check=True, capture_output=True)  # fmt: skip
        daemon = Daemon(tmp_path)
        try:
            client = DaemonClient(daemon.socket)
            client.call("session/open", {"root": str(root)})
            started = time.monotonic()
            client.tool("get_diagnostics", {"path": FILES[0]})  # the server warm
            daemon.note_servers(client)
            lines: dict[str, list[str]] = {}
            found = targets(client)
            rng.shuffle(found)
            made: list[Call] = []
            for target in found:
                site = definition_site(root, target, lines)
                if resolves(client, site):
                    made += calls_for(site, True, rng)
                for use in uses(root, target, lines)[:1]:
                    if resolves(client, use):
                        made += calls_for(use, False, rng)
                if len(made) >= options.calls:
                    break
            made = made[: options.calls]
            outcomes: Counter[str] = Counter()
            by_way: dict[str, Counter[str]] = {}
            for call in made:
                outcome, note = classify(client, call)
                outcomes[outcome] += 1
                by_way.setdefault(call.way.split(" by ")[0], Counter())[outcome] += 1
                if options.verbose and outcome != INTENDED:
                    print(f"  {outcome}: {call.way} {call.arguments} ({'.'.join(call.target.chain)}"
                          f" {call.target.path}:{call.target.line}) {note}")  # fmt: skip
            elapsed = time.monotonic() - started
            client.close()
        finally:
            daemon.stop()
    total = sum(outcomes.values())
    order = (INTENDED, CLEAR, UNCLEAR, STATED, SILENT)
    print(f"{total} go_to_definition calls on {len(FILES)} files of codeward's source "
          f"(basedpyright), {elapsed:.0f} s")  # fmt: skip
    print(f"{'way':<18}{'calls':>6}  " + "  ".join(f"{o:>14}" for o in order))
    for way, counts in sorted(by_way.items()):
        n = sum(counts.values())
        print(f"{way:<18}{n:>6}  " + "  ".join(f"{counts[o]:>14}" for o in order))
    print(f"{'all':<18}{total:>6}  " + "  ".join(f"{outcomes[o] / total:>14.1%}" for o in order))
    met = outcomes[INTENDED] >= 0.95 * total
    print(f"goals: intended >= 95% ({'met' if met else 'missed'}), silently wrong 0% "
          f"({'met' if outcomes[SILENT] == 0 else 'missed'})")  # fmt: skip


if __name__ == "__main__":
    main()
