"""Benchmark the code-intelligence tools end to end, through the daemon's socket, against a
direct client of basedpyright, side by side in one run.

A real daemon (`python -m codeward.daemon.main`) runs on a private socket in a temp dir
with an empty XDG_CONFIG_HOME; a plain blocking client speaks NDJSON JSON-RPC to it
(`session/open {root}`, `tools/call {name, arguments}`). The baseline is a second
basedpyright (node, started directly) driven by the smallest blocking LSP client, on the
same fixture project, with the daemon's own client capabilities and settings, so that both
servers do the same work. Calls alternate (daemon, direct, then direct, daemon) so that
machine load hits both alike.

Prints:
1. every tool against its direct LSP equivalent: medians over N rounds, the ratio of
   medians (target <= 1.10 for hover and definition), the milliseconds added, and the
   daemon process's CPU per call (from /proc schedstat);
2. find_references returning 1,000+ locations (one function used 1,200 times across six
   files): through the daemon against direct, and the daemon's own time on it, two ways:
   its process CPU time per call, and an in-process replay of its work on the server's
   very response bytes (frame, envelope, decode, shape, encode);
3. a second client's first request on the already-warm session against a cold start (a
   new session on a new copy of the fixture), as a ratio;
4. the decode time of a 5,000-location references response;
5. the first workspace-symbols call of a new session (server just started, its analysis
   still running) against a direct client's first `workspace/symbol` after `initialize`;
6. the daemon's own CPU per warm definition (its process CPU time over N calls in a row,
   from /proc), and its work on a 5,000-location references reply, in process
   (bench/shaping.py: process CPU time).

With `--before TREE` (a checkout of an earlier commit, e.g. `git worktree add /tmp/base
COMMIT`), two new daemons run on the same project, one from this tree and one from TREE,
each with one session and the same warm-up (so both have the same files open), and part 6
plus warm hover, definition and the 1,210 references are measured for both daemons and the
direct client side by side, the order rotated every round: the figures before and after a
change.

`--only symbols` runs part 5 alone.

Run: .venv/bin/python bench/lsp.py [--rounds N] [--cold-runs N] [--before TREE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from common import Daemon, DaemonClient, RpcFailed, cpu_seconds, stop_group  # bench/

from codeward.daemon.config import Config
from codeward.daemon.intel.locations import Locator
from codeward.daemon.lsp.defaults import default_servers
from codeward.daemon.lsp.initialize import initialize_params
from codeward.daemon.lsp.positions import Encoding, negotiated
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.protocol.framing import ContentLengthDecoder, Framing, encode_frame
from codeward.protocol.messages import Response, decode_message, encode

USE_FILES = 6
USES = 200  # per file: 1,200 calls of `compute`
LIB = '''\
import abc


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> int: ...


class Impl(Base):
    def run(self) -> int:
        return compute(1)


def compute(value: int) -> int:
    """Double the value."""
    return value * 2


def caller() -> int:
    return compute(3) + compute(4)


LIMIT: int = "ten"
'''
USE = "from lib import Impl, compute\n\nobj = Impl()\ntotal = obj.run()\n" + "".join(
    f"r{i} = compute({i})\n" for i in range(USES)
)
MAX_MESSAGE = 256 * 1024 * 1024
START_TIMEOUT = 60.0

# -- the fixture ---------------------------------------------------------------------------


def make_project(parent: Path, name: str = "project") -> Path:
    """lib.py (a class hierarchy, `compute`, a type error) and six files calling `compute`."""
    root = parent / name
    root.mkdir()
    (root / "lib.py").write_text(LIB)
    for k in range(USE_FILES):
        (root / f"use_{k}.py").write_text(USE)
    return Path(os.path.realpath(root))


# -- processes -----------------------------------------------------------------------------


# -- the daemon and its client -------------------------------------------------------------


# -- the direct client ---------------------------------------------------------------------


class DirectClient:
    """The smallest LSP client that basedpyright answers: a baseline with no daemon.

    Blocking and single-threaded: it reads the server's output only while it waits for an
    answer, answering the server's own requests and noting progress and diagnostics on the
    way, so no thread hop is on its path.
    """

    def __init__(
        self, root: Path, command: list[str] | None = None, env: dict[str, str] | None = None
    ) -> None:
        """basedpyright on `root`; with `command` (and `env`), another LSP server there
        (bench/editor.py: `codeward lsp`), asked the same way."""
        config = default_servers()["basedpyright"]
        self.root = root
        self.settings = config.settings
        self.proc = subprocess.Popen(
            command or config.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=root, start_new_session=True, env=env,
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.decoder = ContentLengthDecoder(max_message=MAX_MESSAGE, max_header=65536)
        self.frames: deque[bytes] = deque()
        self.ids = itertools.count(1)
        self.progress: set[int | str] = set()
        self.published: set[str] = set()
        self.capabilities: dict[str, Any] = {}
        self.registered: set[str] = set()
        self.last_frame = b""  # the raw body of the last response (for the replay)

    def uri(self, path: str) -> str:
        return (self.root / path).as_uri()

    def _write(self, message: dict[str, Any]) -> None:
        body = msgspec.json.encode({"jsonrpc": "2.0", **message})
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.stdin.flush()

    def _next(self, timeout: float | None) -> bytes | None:
        """The next frame from the server, or None when none came within `timeout`."""
        while not self.frames:
            if timeout is not None:
                ready, _, _ = select.select([self.fd], [], [], timeout)
                if not ready:
                    return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise SystemExit("the direct basedpyright exited")
            self.frames.extend(self.decoder.feed(chunk))
        return self.frames.popleft()

    def _handle(self, frame: bytes) -> dict[str, Any] | None:
        """Answer or note a server message; a response is returned to the caller."""
        message = msgspec.json.decode(frame)
        method = message.get("method")
        if method is None:
            return message
        if "id" in message:
            result: Any = None
            if method == "workspace/configuration":
                result = [self._setting(i.get("section")) for i in message["params"]["items"]]
            elif method == "client/registerCapability":
                self.registered |= {r["method"] for r in message["params"]["registrations"]}
            self._write({"id": message["id"], "result": result})
        elif method == "$/progress":
            value = message["params"].get("value") or {}
            if value.get("kind") == "begin":
                self.progress.add(message["params"]["token"])
            elif value.get("kind") == "end":
                self.progress.discard(message["params"]["token"])
        elif method == "textDocument/publishDiagnostics":
            self.published.add(message["params"]["uri"])
        return None

    def _setting(self, section: str | None) -> Any:
        value: Any = self.settings
        for part in (section or "").split(".") if section else []:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def request(self, method: str, params: Any) -> Any:
        return self.pipelined([(method, params)])[0]

    def pipelined(self, calls: list[tuple[str, Any]]) -> list[Any]:
        """Send every request at once, then wait for all the answers (as the daemon does)."""
        ids = {}
        for method, params in calls:
            ids[next(self.ids)] = method
            self._write({"id": list(ids)[-1], "method": method, "params": params})
        results: dict[int, Any] = {}
        while len(results) < len(ids):
            frame = self._next(None)
            assert frame is not None
            message = self._handle(frame)
            if message is not None and message.get("id") in ids:
                if "error" in message:
                    raise RpcFailed(f"{ids[message['id']]}: {message['error']}")
                self.last_frame = frame
                results[message["id"]] = message.get("result")
        return [results[i] for i in ids]

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})

    def settle(self, quiet: float, timeout: float) -> None:
        """Read until no progress is active and the server said nothing for `quiet` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            frame = self._next(quiet)
            if frame is None and not self.progress:
                return
            if frame is not None:
                self._handle(frame)

    def start(self, open_files: list[str]) -> None:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.root.as_uri(),
                "rootPath": str(self.root),
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
                # The daemon's own declaration: the server does the same work for both.
                "capabilities": initialize_params([self.root])["capabilities"],
            },
        )
        self.capabilities = result["capabilities"]
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": self.settings})
        for name in open_files:
            text = (self.root / name).read_text()
            document = {"uri": self.uri(name), "languageId": "python", "version": 1, "text": text}
            self.notify("textDocument/didOpen", {"textDocument": document})

    def pulls_diagnostics(self) -> bool:
        self.settle(0.2, 10.0)  # registrations come after `initialized`
        return "diagnosticProvider" in self.capabilities or (
            "textDocument/diagnostic" in self.registered
        )

    def at(self, method: str, path: str, line: int, character: int, **extra: Any) -> Any:
        """`method` at 1-based `line`:`character` (ASCII text: code points = UTF-16 units)."""
        return self.request(method, self.params(path, line, character, **extra))

    def params(self, path: str, line: int, character: int, **extra: Any) -> dict[str, Any]:
        position = {"line": line - 1, "character": character - 1}
        return {"textDocument": {"uri": self.uri(path)}, "position": position, **extra}

    def first_hover(self, path: str) -> float:
        """Seconds to open `path` and get a hover in it: a direct client's first touch."""
        begin = time.perf_counter()
        text = (self.root / path).read_text()
        document = {"uri": self.uri(path), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": document})
        result = self.at("textDocument/hover", path, 5, 6)
        assert result, f"no hover in {path}"
        return time.perf_counter() - begin

    def stop(self) -> None:
        self.stdin.close()
        stop_group(self.proc, grace=5.0)


# -- the cases -----------------------------------------------------------------------------


def incoming_calls(client: DirectClient, path: str, line: int, character: int) -> Any:
    items = client.at("textDocument/prepareCallHierarchy", path, line, character)
    found: list[Any] = []
    for item in items or []:
        found += client.request("callHierarchy/incomingCalls", {"item": item}) or []
    return found


def at(path: str, line: int, character: int, **extra: Any) -> dict[str, Any]:
    return {"path": path, "line": line, "character": character, **extra}


@dataclass
class Case:
    label: str
    tool: str
    arguments: dict[str, Any]
    direct: Callable[[DirectClient], Any]
    daemon_times: list[float] = field(default_factory=list)
    direct_times: list[float] = field(default_factory=list)
    daemon_cpu: list[float] = field(default_factory=list)
    sizes: tuple[int, int] = (0, 0)


def cases() -> list[Case]:
    refs = "textDocument/references"
    return [
        Case("get_hover_info", "get_hover_info", at("use_0.py", 5, 6),
             lambda c: c.at("textDocument/hover", "use_0.py", 5, 6)),
        Case("get_hover_info vs h+def", "get_hover_info", at("use_0.py", 5, 6),
             lambda c: c.pipelined([("textDocument/hover", c.params("use_0.py", 5, 6)),
                                    ("textDocument/definition", c.params("use_0.py", 5, 6))])[0]),
        Case("go_to_definition", "go_to_definition", at("use_0.py", 5, 6),
             lambda c: c.at("textDocument/definition", "use_0.py", 5, 6)),
        Case("find_references +decl", "find_references",
             at("lib.py", 9, 7, include_declaration=True),
             lambda c: c.at(refs, "lib.py", 9, 7, context={"includeDeclaration": True})),
        Case("find_references", "find_references", at("lib.py", 9, 7),
             lambda c: c.at(refs, "lib.py", 9, 7, context={"includeDeclaration": False})),
        Case("find_implementations", "find_implementations", at("lib.py", 6, 9),
             lambda c: c.at("textDocument/implementation", "lib.py", 6, 9)),
        Case("get_type_definition", "get_type_definition", at("use_0.py", 3, 1),
             lambda c: c.at("textDocument/typeDefinition", "use_0.py", 3, 1)),
        Case("get_symbols document", "get_symbols", {"path": "lib.py"},
             lambda c: c.request("textDocument/documentSymbol",
                                 {"textDocument": {"uri": c.uri("lib.py")}})),
        Case("get_symbols workspace", "get_symbols", {"scope": "workspace", "query": "Impl"},
             lambda c: c.request("workspace/symbol", {"query": "Impl"})),
        Case("call_hierarchy incoming", "call_hierarchy", at("lib.py", 10, 9),
             lambda c: incoming_calls(c, "lib.py", 10, 9)),
        Case("get_diagnostics", "get_diagnostics", {"path": "lib.py"},
             lambda c: c.request("textDocument/diagnostic",
                                 {"textDocument": {"uri": c.uri("lib.py")}})),
    ]  # fmt: skip


BIG = Case(
    "find_references 1,200+",
    "find_references",
    at("lib.py", 14, 5, include_declaration=True),
    lambda c: c.at(
        "textDocument/references", "lib.py", 14, 5, context={"includeDeclaration": True}
    ),
)


def size(result: Any) -> int:
    """How many things an answer holds (tool result or raw LSP result)."""
    if isinstance(result, list):
        return len(result)
    if isinstance(result, dict):
        if result.get("status") == "not_found":
            return 0
        for key in ("count", "calls", "symbols", "items", "diagnostics"):
            value = result.get(key)
            if isinstance(value, int):
                return value
            if isinstance(value, list):
                return len(value)
        return 1
    return 0


# -- measuring -----------------------------------------------------------------------------


def warm_up(client: DaemonClient, direct: DirectClient, case: Case) -> None:
    """Both answer, and the same thing; the direct server answers once it has analysed."""
    mine: Any = None
    for _ in range(3):
        mine = client.tool(case.tool, case.arguments)
    deadline = time.monotonic() + START_TIMEOUT
    while not (theirs := case.direct(direct)):
        if time.monotonic() > deadline:
            raise SystemExit(f"the direct server gave no answer for {case.label}")
        direct.settle(0.1, 1.0)
    for _ in range(2):
        theirs = case.direct(direct)
    case.sizes = (size(mine), size(theirs))


def measure(
    client: DaemonClient, direct: DirectClient, pid: int, batch: list[Case], rounds: int
) -> None:
    for round_ in range(rounds):
        for case in batch:
            for way in ("daemon", "direct") if round_ % 2 == 0 else ("direct", "daemon"):
                if way == "daemon":
                    cpu = cpu_seconds(pid)
                    begin = time.perf_counter()
                    client.tool(case.tool, case.arguments)
                    case.daemon_times.append(time.perf_counter() - begin)
                    case.daemon_cpu.append(cpu_seconds(pid) - cpu)
                else:
                    begin = time.perf_counter()
                    case.direct(direct)
                    case.direct_times.append(time.perf_counter() - begin)


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def report(batch: list[Case], rounds: int) -> None:
    print(f"median of {rounds} alternating rounds; daemon CPU: mean per call from /proc schedstat")
    print(
        f"{'tool':26} {'direct ms':>9} {'daemon ms':>9} {'ratio':>6} {'added ms':>8}"
        f" {'daemon CPU ms':>13}  items daemon/direct"
    )
    for case in batch:
        d, m = ms(case.direct_times), ms(case.daemon_times)
        cpu = statistics.fmean(case.daemon_cpu) * 1000
        print(
            f"{case.label:26} {d:9.2f} {m:9.2f} {m / d:6.2f} {m - d:8.2f} {cpu:13.2f}"
            f"  {case.sizes[0]} / {case.sizes[1]}"
        )


def replay_references(
    root: Path, frame: bytes, encoding: Encoding, rounds: int = 20
) -> tuple[float, int]:
    """CPU milliseconds (median) of the daemon's own work on a references response, in process.

    The same steps as LspConnection._reader and find_references on the server's very bytes:
    frame, envelope, msgspec decode, path and position shaping with previews, sort, and the
    encoding of the reply; only the event loop and socket I/O are left out.
    """
    manager = LanguageService(root, Config(), lambda _: None)
    wire = b"Content-Length: %d\r\n\r\n" % len(frame) + frame
    samples: list[float] = []
    count = 0
    for _ in range(rounds):
        begin = time.process_time()  # CPU time: the machine's load does not count
        [body] = ContentLengthDecoder(MAX_MESSAGE).feed(wire)
        message = decode_message(body)
        items = msgspec.json.decode(bytes(message.payload), type=list[LspLocation] | None) or []
        found = Locator(manager).locations(items, encoding)  # as find_references does
        result = {"status": "found", "references": found, "count": len(found), "partial": False}
        encode_frame(Framing.NDJSON, encode(Response(id=1, result=result)))
        samples.append(time.process_time() - begin)
        count = len(found)
    return ms(samples), count


def decode_5000() -> float:
    """Milliseconds (median of 20) for the daemon to take a 5,000-location references
    response off the wire: frame, envelope, and msgspec decode into Location Structs."""
    location = {
        "uri": "file:///project/src/module_name.py",
        "range": {"start": {"line": 120, "character": 4}, "end": {"line": 120, "character": 11}},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": [location] * 5000}).encode()
    frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
    samples = []
    for _ in range(20):
        begin = time.perf_counter()
        [message] = [decode_message(f) for f in ContentLengthDecoder(MAX_MESSAGE).feed(frame)]
        locations = msgspec.json.decode(bytes(message.payload), type=list[LspLocation] | None)
        samples.append(time.perf_counter() - begin)
        assert locations is not None and len(locations) == 5000
    return ms(samples)


def first_request(sock: Path, root: Path, path: str) -> tuple[float, float, bool]:
    """A new client: (session/open s, first hover s, whether the session was created)."""
    client = DaemonClient(sock)
    try:
        begin = time.perf_counter()
        opened = client.call("session/open", {"root": str(root)})
        middle = time.perf_counter()
        result = client.tool("get_hover_info", at(path, 5, 6))
        end = time.perf_counter()
        assert result["status"] == "found", result
        if opened["created"]:
            client.call("session/close", {"terminate": True})
        return middle - begin, end - middle, opened["created"]
    finally:
        client.close()


def first_symbols(tmp: Path, sock: Path, runs: int) -> None:
    """Part 5: a new session's first workspace symbols, against a new direct server's first
    `workspace/symbol` (which answers at once, but empty until its workspace is loaded) and
    its first non-empty answer (asked again every 50 ms)."""
    daemon_times, first_times, full_times = [], [], []
    partial = empty_first = empty_daemon = 0
    for k in range(runs):
        copy = make_project(tmp, f"symbols-{k}")
        client = DaemonClient(sock)
        try:
            client.call("session/open", {"root": str(copy)})
            begin = time.perf_counter()
            result = client.tool("get_symbols", {"scope": "workspace", "query": "compute"})
            daemon_times.append(time.perf_counter() - begin)
            empty_daemon += not result["symbols"]  # `compute` is there: empty is wrong
            partial += bool(result.get("partial"))
            client.call("session/close", {"terminate": True})
        finally:
            client.close()
        direct = DirectClient(make_project(tmp, f"symbols-direct-{k}"))
        try:
            direct.start([])
            begin = time.perf_counter()
            found = direct.request("workspace/symbol", {"query": "compute"})
            first_times.append(time.perf_counter() - begin)
            empty_first += not found
            while not found:
                time.sleep(0.05)
                found = direct.request("workspace/symbol", {"query": "compute"})
            full_times.append(time.perf_counter() - begin)
        finally:
            direct.stop()
    first, full, m = ms(first_times), ms(full_times), ms(daemon_times)
    print(
        f"\nfirst workspace symbols of a new session (server just started), median of {runs}:\n"
        f"  direct: first answer {first:.1f} ms (empty in {empty_first} of {runs}),"
        f" first non-empty answer {full:.1f} ms\n"
        f"  through the daemon {m:.1f} ms (empty: {empty_daemon}, marked partial: {partial},"
        f" of {runs});"
        f" ratio to the direct first non-empty answer {m / full:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=48)  # side by side: 2 x 24 orders
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--only", choices=["symbols"], help="run one part alone")
    parser.add_argument("--before", type=Path, help="a source tree to compare with, side by side")
    parser.add_argument("--cpu-calls", type=int, default=3000)
    args = parser.parse_args()
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-lsp-"))
    daemon: Daemon | None = None
    befores: list[Daemon] = []  # the two daemons of --before (this tree's and TREE's)
    direct: DirectClient | None = None
    if args.only == "symbols":
        try:
            daemon = Daemon(tmp)
            first_symbols(tmp, daemon.socket, max(1, args.cold_runs))
        finally:
            if daemon is not None:
                daemon.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        root = make_project(tmp)
        daemon = Daemon(tmp)
        client = DaemonClient(daemon.socket)
        client.call("session/open", {"root": str(root)})
        direct = DirectClient(root)
        direct.start(["lib.py", "use_0.py"])
        daemon.note_servers(client)
        batch = cases()
        for case in [*batch, BIG]:
            if case.tool == "get_diagnostics" and not direct.pulls_diagnostics():
                print("basedpyright offers no pull diagnostics: get_diagnostics has no twin")
                batch.remove(case)
                continue
            warm_up(client, direct, case)
        daemon.note_servers(client)
        pid = daemon.proc.pid
        measure(client, direct, pid, batch, args.rounds)
        report(batch, args.rounds)

        measure(client, direct, pid, [BIG], args.rounds)
        encoding = negotiated(direct.capabilities.get("positionEncoding"))
        replay, replayed = replay_references(root, direct_big_frame(direct), encoding)
        d, m = ms(BIG.direct_times), ms(BIG.daemon_times)
        cpu = statistics.fmean(BIG.daemon_cpu) * 1000
        print(
            f"\nfind_references returning {BIG.sizes[0]} locations (direct: {BIG.sizes[1]}),"
            f" median of {len(BIG.daemon_times)}:\n"
            f"  direct {d:.1f} ms, through the daemon {m:.1f} ms: ratio {m / d:.2f},"
            f" {m - d:.1f} ms added\n"
            f"  daemon process CPU per call (mean, /proc schedstat): {cpu:.1f} ms\n"
            f"  daemon's own work replayed in process on the server's bytes (CPU)"
            f" ({replayed} locations): {replay:.1f} ms"
        )

        runs = max(1, min(args.cold_runs, USE_FILES - 1))
        warm = [first_request(daemon.socket, root, f"use_{k}.py") for k in range(1, 1 + runs)]
        fresh = [direct.first_hover(f"use_{k}.py") for k in range(1, 1 + runs)]
        same = [first_request(daemon.socket, root, "use_0.py") for _ in range(runs)]
        cold = []
        for k in range(max(1, args.cold_runs)):
            copy = make_project(tmp, f"cold-{k}")
            cold.append(first_request(daemon.socket, copy, "use_1.py"))
        assert not any(w[2] for w in warm + same) and all(c[2] for c in cold)
        warm_total = statistics.median(o + h for o, h, _ in warm) * 1000
        same_total = statistics.median(o + h for o, h, _ in same) * 1000
        cold_total = statistics.median(o + h for o, h, _ in cold) * 1000
        print(
            f"\na second client's first request on the warm session (session/open + hover),"
            f" median of {runs}:\n"
            f"  in a file no client asked about yet: {warm_total:.1f} ms (session/open"
            f" {statistics.median(o for o, _, _ in warm) * 1000:.1f} ms; the daemon waits"
            f" until the server has analysed the newly opened file)\n"
            f"  in the file the first client asked about: {same_total:.1f} ms\n"
            f"  for scale, a direct client's didOpen + hover in a file it had not opened:"
            f" {statistics.median(fresh) * 1000:.1f} ms\n"
            f"cold start (session/open on a new copy: server start, analysis, hover),"
            f" median of {len(cold)}: {cold_total:.0f} ms\n"
            f"warm / cold ratio: {warm_total / cold_total:.4f} (new file),"
            f" {same_total / cold_total:.4f} (same file)"
        )
        print(f"\ndecode of a 5,000-location references response: {decode_5000():.2f} ms")
        first_symbols(tmp, daemon.socket, max(1, args.cold_runs))
        daemon.note_servers(client)

        sides = [Side("daemon", client, pid, HERE.parent)]
        if args.before is not None:
            # Two new daemons, this tree's and TREE's, in the same state (one session, the
            # same warm-up): the daemon above has more files open by now (parts 1 to 5), and
            # every request stats each open document first.
            sides = []
            for label, source in (("after", None), ("before", args.before.resolve())):
                side_daemon = Daemon(tmp / label, source=source)
                befores.append(side_daemon)
                side_client = DaemonClient(side_daemon.socket)
                side_client.call("session/open", {"root": str(root)})
                side_daemon.note_servers(side_client)
                tree = HERE.parent if source is None else source
                sides.append(Side(label, side_client, side_daemon.proc.pid, tree))
        warm = [c for c in cases() if c.tool in ("get_hover_info", "go_to_definition")]
        for side in sides:
            if side.client is not client:
                for case in [*warm, BIG]:
                    warm_up(side.client, direct, case)
        side_by_side(sides, direct, [*warm, BIG], args.rounds)
        definition = next(c for c in warm if c.tool == "go_to_definition")
        cpu_per_call(sides, definition, args.cpu_calls)
        shaping(sides)
        for side in sides:
            side.client.close()
    finally:
        if direct is not None:
            direct.stop()
        for each in (daemon, *befores):
            if each is not None:
                each.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"(total run {time.perf_counter() - started:.0f} s)")


# -- before and after ---------------------------------------------------------------------

HERE = Path(__file__).resolve().parent


@dataclass
class Side:
    """One daemon under test: "after" (this tree) or "before" (`--before TREE`)."""

    label: str
    client: DaemonClient
    pid: int
    tree: Path


def side_by_side(sides: list[Side], direct: DirectClient, batch: list[Case], rounds: int) -> None:
    """Each case through every daemon and the direct client, in a new order each round: every
    order in turn, so that each way follows each other way as often (a call right after the
    direct client's meets its server's work after answering, on a machine of 2 cores), and
    the cases in every order in turn too, so that each case follows each other case as
    often (a call right after the 1,200+ references meets the three servers' and daemons'
    work after that one: a hover always first took 0.4-0.6 ms more than the same hover
    second)."""
    ways = [*(side.label for side in sides), "direct"]
    by_label = {side.label: side for side in sides}
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    orders = list(itertools.permutations(ways))
    sequences = list(itertools.permutations(batch))
    for round_ in range(rounds):
        for case in sequences[round_ % len(sequences)]:
            for way in orders[round_ % len(orders)]:
                begin = time.perf_counter()
                if way == "direct":
                    case.direct(direct)
                else:
                    by_label[way].client.tool(case.tool, case.arguments)
                times[case.label, way].append(time.perf_counter() - begin)
    header = "".join(f" {side.label + ' ms':>10} {'ratio':>6} {'added':>7}" for side in sides)
    print(
        f"\nside by side, median of {rounds} rounds, every order in turn"
        " (ms; added = daemon - direct)"
    )
    print(f"{'tool':26} {'direct ms':>9}{header}")
    for case in batch:
        d = ms(times[case.label, "direct"])
        row = ""
        for side in sides:
            m = ms(times[case.label, side.label])
            row += f" {m:10.2f} {m / d:6.2f} {m - d:7.2f}"
        print(f"{case.label:26} {d:9.2f}{row}")


def cpu_per_call(sides: list[Side], case: Case, calls: int, chunk: int = 100) -> None:
    """The daemons' own CPU per warm call: process CPU time (/proc schedstat) over `calls`
    calls in a row, taken in chunks that alternate between the daemons."""
    used = dict.fromkeys((side.label for side in sides), 0.0)
    done = 0
    while done < calls:
        for side in sides if (done // chunk) % 2 == 0 else sides[::-1]:
            cpu = cpu_seconds(side.pid)
            for _ in range(chunk):
                side.client.tool(case.tool, case.arguments)
            used[side.label] += cpu_seconds(side.pid) - cpu
        done += chunk
    figures = ", ".join(f"{label} {spent / done * 1e6:.0f} us" for label, spent in used.items())
    print(f"\ndaemon CPU per warm {case.tool} ({done} calls each, /proc schedstat): {figures}")


def shaping(sides: list[Side], runs: int = 3) -> None:
    """bench/shaping.py (a 5,000-location references reply) in each tree, alternately."""
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in range(runs):
        for side in sides if run % 2 == 0 else sides[::-1]:
            env = {**os.environ, "PYTHONPATH": str(side.tree)}
            out = subprocess.run(
                [sys.executable, str(HERE / "shaping.py"), "--rounds", "10"],
                env=env, capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            results[side.label].append(json.loads(out))
    print("\na 5,000-location references reply, the daemon's work in process (CPU ms, median):")
    for label, found in results.items():
        stages = {
            k: statistics.median(r["stages_cpu_ms"][k] for r in found)
            for k in found[0]["stages_cpu_ms"]
        }
        detail = ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
        print(
            f"  {label}: {statistics.median(r['cpu_ms'] for r in found):.2f} ms"
            f" ({detail}; {found[0]['count']} locations)"
        )


def direct_big_frame(direct: DirectClient) -> bytes:
    """The raw body of basedpyright's answer to the 1,200+-location references request."""
    BIG.direct(direct)
    return direct.last_frame


if __name__ == "__main__":
    main()
