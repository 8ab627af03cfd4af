"""Benchmark the edit loop: edit -> diagnostics delta latency through the daemon, against a
peer-style client that sends the change and waits for 500 ms of quiet, side by side in one
run, per language server.

The daemon (a real `codeward.daemon.main` on a private socket) is asked `edit_file` with
content that alternately introduces and fixes an error (mode `apply`: the write, the
diagnostics before and after, the delta) and, separately, with mode `preview` (nothing
written: the servers' memory only). The baseline is the way peers wait for diagnostics: a
minimal LSP client of a second warm server of the same kind sends `didChange` and returns
once no `publishDiagnostics` came for 500 ms (agent-lsp's rule), which costs at least those
500 ms and silently returns what it has on a timeout. Rounds alternate daemon and baseline
so that machine load hits both alike. Medians in milliseconds.

Run: .venv/bin/python bench/editloop.py [--rounds N] [--only python,go,c]
"""

from __future__ import annotations

import argparse
import itertools
import os
import select
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from common import Daemon, DaemonClient, stop_group  # bench/

from codeward.daemon.lsp.defaults import command_available, default_servers
from codeward.daemon.lsp.initialize import initialize_params
from codeward.protocol.framing import ContentLengthDecoder

QUIET = 0.5  # the peers' "no news for 500 ms" rule
TIMEOUT = 30.0


@dataclass(frozen=True)
class Scenario:
    language: str
    language_id: str
    servers: tuple[str, ...]  # the language's servers in the daemon (each a baseline)
    files: dict[str, str]  # the project
    path: str  # the file edited
    good: str
    bad: str  # introduces one error


SCENARIOS = [
    Scenario(
        "python",
        "python",
        ("basedpyright", "ruff"),
        {"m.py": "import os\n\n\ndef f(x: int) -> int:\n    return x\n\n\nprint(os.sep, f(1))\n"},
        "m.py",
        "import os\n\n\ndef f(x: int) -> int:\n    return x\n\n\nprint(os.sep, f(1))\n",
        "import os\n\n\ndef f(x: int) -> int:\n    return y\n\n\nprint(os.sep, f(1))\n",
    ),
    Scenario(
        "go",
        "go",
        ("gopls",),
        {"go.mod": "module example.com/b\n\ngo 1.19\n", "m.go": "package main\n\nfunc main() {}\n"},
        "m.go",
        "package main\n\nfunc f(x int) int {\n\treturn x\n}\n\nfunc main() { _ = f(1) }\n",
        "package main\n\nfunc f(x int) int {\n\treturn y\n}\n\nfunc main() { _ = f(1) }\n",
    ),
    Scenario(
        "c",
        "c",
        ("clangd",),
        {"m.c": "int f(int x) { return x; }\n"},
        "m.c",
        "int f(int x) {\n    return x;\n}\n",
        "int f(int x) {\n    return y;\n}\n",
    ),
]


class QuietClient:
    """A peer-style LSP client: push diagnostics only, and "done" after 500 ms of quiet."""

    def __init__(self, name: str, root: Path) -> None:
        config = default_servers()[name]
        self.settings = config.settings
        self.proc = subprocess.Popen(
            config.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=root, env={**os.environ, **config.env},
            start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.fd = self.proc.stdin, self.proc.stdout.fileno()
        self.decoder = ContentLengthDecoder(max_message=64 << 20, max_header=65536)
        self.frames: deque[bytes] = deque()
        self.ids = itertools.count(1)
        self.root = root
        self.version = 1
        params = initialize_params([root], config.init_options)
        params["capabilities"].get("textDocument", {}).pop("diagnostic", None)  # pushes only
        self.request("initialize", params)
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": self.settings})

    def _write(self, message: dict[str, Any]) -> None:
        body = msgspec.json.encode({"jsonrpc": "2.0", **message})
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.stdin.flush()

    def _next(self, timeout: float) -> dict[str, Any] | None:
        while not self.frames:
            ready, _, _ = select.select([self.fd], [], [], max(timeout, 0))
            if not ready:
                return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise SystemExit("a baseline server exited")
            self.frames.extend(self.decoder.feed(chunk))
        message = msgspec.json.decode(self.frames.popleft())
        if "method" in message and "id" in message:  # the server's request: answer it
            result: Any = None
            if message["method"] == "workspace/configuration":
                result = [self._setting(i.get("section")) for i in message["params"]["items"]]
            self._write({"id": message["id"], "result": result})
        return message

    def _setting(self, section: str | None) -> Any:
        value: Any = self.settings
        for part in section.split(".") if section else []:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def request(self, method: str, params: Any) -> Any:
        ident = next(self.ids)
        self._write({"id": ident, "method": method, "params": params})
        while True:
            message = self._next(TIMEOUT)
            if message is None:
                raise SystemExit(f"no answer to {method}")
            if message.get("id") == ident and "method" not in message:
                return message.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})

    def open(self, path: str, language_id: str, text: str) -> None:
        uri = (self.root / path).as_uri()
        item = {"uri": uri, "languageId": language_id, "version": self.version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})
        self.wait_quiet(uri)

    def change(self, path: str, text: str) -> float:
        """Seconds from didChange to the end of the first 500 ms without diagnostics."""
        uri = (self.root / path).as_uri()
        self.version += 1
        begin = time.perf_counter()
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": self.version},
                "contentChanges": [{"text": text}],
            },
        )
        self.wait_quiet(uri)
        return time.perf_counter() - begin

    def wait_quiet(self, uri: str) -> None:
        last = time.perf_counter()
        deadline = last + TIMEOUT
        while time.perf_counter() < deadline:
            message = self._next(last + QUIET - time.perf_counter())
            if message is None:
                return
            params = message.get("params")
            if message.get("method") == "textDocument/publishDiagnostics" and (
                isinstance(params, dict) and params.get("uri") == uri
            ):
                last = time.perf_counter()

    def stop(self) -> None:
        self.stdin.close()
        stop_group(self.proc, grace=5.0)


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def run(scenario: Scenario, tmp: Path, daemon: Daemon, rounds: int) -> list[str]:
    root = tmp / scenario.language
    for name, text in scenario.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / scenario.path).write_text(scenario.good)
    client = DaemonClient(daemon.socket)
    client.call("session/open", {"root": str(root)})
    client.tool("get_diagnostics", {"path": scenario.path})  # servers warm
    daemon.note_servers(client)
    baselines = {name: QuietClient(name, root) for name in scenario.servers}
    for baseline in baselines.values():
        baseline.open(scenario.path, scenario.language_id, scenario.good)
    applied: list[float] = []
    previewed: list[float] = []
    quiet: dict[str, list[float]] = {name: [] for name in scenario.servers}
    partial = 0
    caught = 0  # breaking rounds whose delta named an introduced error
    try:
        for i in range(rounds):
            text = scenario.bad if i % 2 == 0 else scenario.good
            begin = time.perf_counter()
            result = client.tool("edit_file", {"path": scenario.path, "content": text})
            applied.append(time.perf_counter() - begin)
            report = result["diagnostics_after"][0]
            partial += bool(report.get("partial"))
            if text == scenario.bad:
                caught += any(d["severity"] == "error" for d in report["introduced"])
            for name, baseline in baselines.items():
                quiet[name].append(baseline.change(scenario.path, text))
            other = scenario.good if text == scenario.bad else scenario.bad
            begin = time.perf_counter()
            client.tool("edit_file", {"path": scenario.path, "content": other, "mode": "preview"})
            previewed.append(time.perf_counter() - begin)
    finally:
        for baseline in baselines.values():
            baseline.stop()
        client.close()
    lines = [
        f"{scenario.language:<7} daemon edit_file apply  {ms(applied):8.1f} ms"
        f"   preview {ms(previewed):8.1f} ms   (the error introduced: named in {caught} of "
        f"{(rounds + 1) // 2} breaking edits; {partial} partial)"
    ]
    for name, values in quiet.items():
        ratio = ms(values) / ms(applied)
        lines.append(
            f"        {name:<13} 500 ms-quiet baseline {ms(values):8.1f} ms"
            f"   baseline / daemon apply {ratio:5.2f}x"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--only", help="comma-separated languages (python, go, c)")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    tmp = Path(tempfile.mkdtemp(prefix="cwb-", dir="/tmp"))
    daemon = Daemon(tmp)
    print(f"edit -> delta, median of {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    try:
        for scenario in SCENARIOS:
            if wanted is not None and scenario.language not in wanted:
                continue
            missing = [
                n
                for n in scenario.servers
                if not command_available(default_servers()[n].command, default_servers()[n].env)
            ]
            if missing:
                print(f"{scenario.language:<7} skipped: {', '.join(missing)} not installed")
                continue
            for line in run(scenario, tmp, daemon, args.rounds):
                print(line, flush=True)
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
