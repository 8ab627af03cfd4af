"""MCP through `codeward mcp` (the pump) against the daemon's own socket, side by side.

A real daemon (`python -m codeward.daemon.main`) runs on a private socket; `codeward mcp`
is started exactly as the console script starts it (`codeward.client.entry:main`). Prints:
1. spawn -> `initialize` answered, median of N spawns (target <= 50 ms), beside the floor of
   any Python tool (an interpreter that echoes one line), and the bridge's RSS (target
   <= 15 MiB);
2. a second agent: spawn -> first hover answered on a warm session (target <= 100 ms);
3. warm hover through MCP against the same hover on the socket, alternating (target <=
   1.1x);
4. the characters a model reads for 68 references and a 31-symbol outline: the MCP `content`
   text against the pretty-printed JSON the old bridge returned, and the outline against
   agent-lsp's outline renderer (read from its source) over the same symbols;
5. figures quoted from the issue that asked for this (other tools, measured elsewhere, on
   another fixture): printed as constants, labelled as quoted.
`git_command status` against git is measured by bench/git.py.

Run: .venv/bin/python bench/mcp.py [--runs N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from common import Daemon, DaemonClient  # bench/

LAUNCH = "import sys; from codeward.client.entry import main; sys.exit(main())"
ECHO = "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush()"
REPO = Path(__file__).resolve().parents[1]
USE_FILES = 4
CALLS_PER_FILE = 17  # 68 references of `compute`
INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}  # fmt: skip
# Quoted from the issue (its machine, its fixture), for orientation only.
QUOTED = [
    ("codeward before: 2nd agent spawn -> first hover", "560 ms (546 ms of it the bridge)"),
    ("agent-lsp, cold: spawn -> first hover", "716-863 ms"),
    ("Serena, cold: spawn -> first hover", "1,851 ms"),
    ("codeward before: bridge RSS", "66 MiB (agent-lsp's whole server: 18 MiB)"),
    ("codeward before: warm hover MCP / socket", "4.7 ms / 2.8 ms = 1.65x"),
    ("agent-lsp: references content (68)", "4,756 characters"),
    ("agent-lsp: document symbols content (31)", "296 characters"),
    ("codeward before: references / symbols", "13,658 / 2,302 characters"),
]


def lib_source() -> str:
    """31 outline entries: 3 classes of 3 methods, 11 functions (`compute` among them),
    8 constants."""
    parts = ['"""Shapes and numbers."""\n']
    for name in ("Circle", "Square", "Triangle"):
        parts.append(f"\n\nclass {name}:\n")
        for method in ("area", "perimeter", "describe"):
            parts.append(f"    def {method}(self) -> float:\n        return 0.0\n\n")
    for k in range(10):
        parts.append(f"\ndef helper_{k}() -> int:\n    return {k}\n\n")
    parts.append('\ndef compute(value: int) -> int:\n    """Double the value."""\n'
                 "    return value * 2\n\n")  # fmt: skip
    parts += [f"\nLIMIT_{k} = {k}" for k in range(8)]
    return "".join(parts) + "\n"


def outline_names(symbols: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Every (name, line) of a document outline, depth first."""
    found: list[tuple[str, int]] = []
    for symbol in symbols:
        found.append((symbol["name"], symbol["line"]))
        found += outline_names(symbol.get("children") or [])
    return found


def agent_lsp_outline(symbols: list[dict[str, Any]], depth: int = 0) -> str:
    """agent-lsp's most compact document-symbol text (its `format: "outline"`, as its
    renderOutline writes it: `name [Kind] :line`, two spaces per level, 1-based lines), over
    this fixture's symbols; the hint and token-meta items it appends are left out."""
    text = ""
    for symbol in symbols:
        kind = "".join(part.title() for part in str(symbol.get("kind")).split("_"))
        text += f"{'  ' * depth}{symbol['name']} [{kind}] :{symbol['line']}\n"
        text += agent_lsp_outline(symbol.get("children") or [], depth + 1)
    return text


def make_project(parent: Path) -> Path:
    root = parent / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "lib.py").write_text(lib_source())
    use = "import lib\n\n" + "".join(f"r{i} = lib.compute({i})\n" for i in range(CALLS_PER_FILE))
    for k in range(USE_FILES):
        (root / f"use_{k}.py").write_text(use)
    return Path(os.path.realpath(root))


class Pump:
    """A `codeward mcp` process, spoken to line by line (blocking)."""

    def __init__(self, sock: Path, root: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "--socket", str(sock), "--root", str(root), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=os.environ | {"PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.ids = itertools.count(1)

    def send(self, message: dict[str, Any]) -> None:
        # msgspec, as DaemonClient: the client's JSON library is not what is measured
        self.stdin.write(msgspec.json.encode({"jsonrpc": "2.0", **message}) + b"\n")
        self.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        msg_id = next(self.ids)
        self.send({"id": msg_id, "method": method, "params": params})
        while True:
            line = self.stdout.readline()
            if not line:
                raise SystemExit(f"codeward mcp exited during {method}")
            reply = msgspec.json.decode(line)
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply["result"]

    def initialize(self) -> None:
        self.request("initialize", INIT)
        self.send({"method": "notifications/initialized"})

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{name}: {result['content'][0]['text']}")
        return result

    def rss_mib(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MiB."""
        fields = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
        )
        return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(30)
        self.stdout.close()


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def echo_floor(runs: int) -> float:
    """Spawn -> one line echoed by a bare Python interpreter (the floor of a Python tool)."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", ECHO], input=b"{}\n", capture_output=True,
                              check=True)  # fmt: skip
        assert proc.stdout == b"{}\n"
        samples.append(time.perf_counter() - t0)
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cw-mcp-"))
    daemon = None
    try:
        root = make_project(tmp)
        daemon = Daemon(tmp)
        hover = {"path": "use_0.py", "line": 3, "character": 10}  # lib.compute

        # 1. spawn -> initialize, and memory
        spawns, rss, hwm = [], [], []
        for _ in range(args.runs):
            pump = Pump(daemon.socket, root)
            pump.initialize()
            spawns.append(time.perf_counter() - pump.started)
            now, peak = pump.rss_mib()
            rss.append(now)
            hwm.append(peak)
            pump.close()
        floor = echo_floor(args.runs)
        spawn = median_ms(spawns)
        print(
            f"median of {args.runs} runs; the machine's load average now: {os.getloadavg()[0]:.1f}"
        )
        print("\n1. codeward mcp: spawn -> initialize answered")
        print(f"   python echo (floor)       {floor:7.1f} ms")
        print(f"   codeward mcp              {spawn:7.1f} ms   ratio {spawn / floor:4.2f}x "
              "the floor   (target <= 50 ms)")  # fmt: skip
        print(f"   bridge RSS                {statistics.median(rss):7.1f} MiB   peak "
              f"{statistics.median(hwm):.1f} MiB   (target <= 15 MiB)")  # fmt: skip

        # warm the session: the first agent's hover starts basedpyright
        first = Pump(daemon.socket, root)
        first.initialize()
        first.call("get_hover_info", hover)
        daemon.note_servers(client := DaemonClient(daemon.socket))

        # 2. a second agent: spawn -> first hover
        seconds = []
        for _ in range(args.runs):
            pump = Pump(daemon.socket, root)
            pump.initialize()
            pump.call("get_hover_info", hover)
            seconds.append(time.perf_counter() - pump.started)
            pump.close()
        print("\n2. second agent, warm session: spawn -> first hover answered")
        print(f"   codeward mcp              {median_ms(seconds):7.1f} ms   (target <= 100 ms)")

        # 3. warm hover: MCP against the socket, alternating
        client.call("session/open", {"root": str(root)})
        direct = DaemonClient(daemon.socket)  # MCP spoken on the socket itself, no pump
        bind = {"jsonrpc": "2.0", "method": "codeward/mcp", "params": {"root": str(root)}}
        direct.sock.sendall(json.dumps(bind).encode() + b"\n")
        direct.call("initialize", INIT)
        call = {"name": "get_hover_info", "arguments": hover}
        runs: dict[str, list[float]] = {"mcp": [], "sock": [], "direct": []}
        actions = {
            "mcp": lambda: first.call("get_hover_info", hover),
            "sock": lambda: client.tool("get_hover_info", hover),
            "direct": lambda: direct.call("tools/call", call),
        }
        for i in range(args.runs * 5):
            order = list(runs) if i % 2 == 0 else list(runs)[::-1]
            for which in order:
                t0 = time.perf_counter()
                actions[which]()
                runs[which].append(time.perf_counter() - t0)
        via_mcp, via_sock = median_ms(runs["mcp"]), median_ms(runs["sock"])
        print(f"\n3. warm hover, median of {args.runs * 5} each (alternating)")
        print(f"   socket (native JSON-RPC)  {via_sock:7.2f} ms")
        print(f"   MCP on the socket, no pump {median_ms(runs['direct']):6.2f} ms")
        print(f"   MCP through the pump      {via_mcp:7.2f} ms   ratio {via_mcp / via_sock:4.2f}x"
              f"   (target <= 1.1x)")  # fmt: skip

        # 4. what a model reads
        line = lib_source().splitlines().index("def compute(value: int) -> int:") + 1
        refs = first.call("find_references", {"path": "lib.py", "line": line, "character": 5})
        symbols = first.call("get_symbols", {"path": "lib.py"})
        print("\n4. characters of content a model reads (this run's fixture)")
        for label, result, quoted in (("references", refs, 4756), ("outline", symbols, 296)):
            structured = result["structuredContent"]
            count = structured["count"]
            text = len(result["content"][0]["text"])
            pretty = len(json.dumps(structured, indent=2, ensure_ascii=False))
            per = text / count
            print(f"   {label:<11} ({count:2d} items)  MCP text {text:6,d}  ({per:5.1f} per item)"
                  f"   old pretty JSON {pretty:6,d}  ratio {text / pretty:4.2f}x")  # fmt: skip
            print(f"   {'':<11}              quoted agent-lsp {quoted:6,d}  ({quoted / count:5.1f} "
                  "per item, on its own fixture)")  # fmt: skip
        theirs = len(agent_lsp_outline(symbols["structuredContent"]["symbols"]))
        ours = len(symbols["content"][0]["text"])
        per = theirs / count
        print(f"   outline, agent-lsp's renderer on this fixture {theirs:6,d}  ({per:5.1f} "
              f"per item)   ours / theirs {ours / theirs:4.2f}x")  # fmt: skip
        names = outline_names(symbols["structuredContent"]["symbols"])
        floor = sum(len(name) + 1 for name, _ in names)
        digits = sum(len(str(line)) for _, line in names)
        print(f"   outline floor: the names alone, one separator each {floor:4d}; with each "
              f"name's line number {floor + digits + len(names):4d}")  # fmt: skip
        print("   outline as the model sees it:")
        for line in symbols["content"][0]["text"].splitlines()[:8]:
            print(f"     | {line}")

        print("\n5. quoted from the issue (other machine, other fixture; not measured here)")
        for label, value in QUOTED:
            print(f"   {label:<48} {value}")
        first.close()
        client.close()
        direct.close()
    finally:
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
