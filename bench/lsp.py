"""Benchmark the language-server layer against a real, warm basedpyright.

1. hover, definition and references through the daemon's LSP layer (LspManager.request:
   routing, disk sync, readiness, position conversion, msgspec decoding) against the same
   requests sent straight to a second basedpyright by a minimal client in this script:
   the ratio of medians (target <= 1.10) and the milliseconds added.
2. A second client's first request on an already-warm session against a cold start.
3. The decode time of a 5,000-location references response.

Run: .venv/bin/python bench/lsp.py [--rounds N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import Config
from codeward.daemon.lsp.capabilities import client_capabilities
from codeward.daemon.lsp.defaults import default_servers
from codeward.daemon.lsp.manager import DocumentContext, LspManager
from codeward.daemon.lsp.types import Location
from codeward.protocol.framing import ContentLengthDecoder
from codeward.protocol.messages import decode_message

LIB = "def compute(value: int) -> int:\n    return value * 2\n"
USE = "from lib import compute\n\n" + "".join(f"r{i} = compute({i})\n" for i in range(200))
QUERIES = {  # (line, character) 1-based in use.py: the `compute` of line 3
    "textDocument/hover": {},
    "textDocument/definition": {},
    "textDocument/references": {"context": {"includeDeclaration": True}},
}


def make_project() -> Path:
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="cw-bench-")))
    (root / "lib.py").write_text(LIB)
    (root / "use.py").write_text(USE)
    return root


class DirectClient:
    """The smallest LSP client that basedpyright answers: a baseline with no daemon."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ids = itertools.count(1)
        self.decoder = ContentLengthDecoder()
        self.waiting: dict[int, trio.MemorySendChannel[Any]] = {}
        self.process: trio.Process | None = None
        self.settings = default_servers()["basedpyright"].settings

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        command = default_servers()["basedpyright"].command
        self.process = await trio.lowlevel.open_process(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=self.root, start_new_session=True,
        )  # fmt: skip
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read)
                task_status.started()
                await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                os.killpg(self.process.pid, 9)
                await self.process.wait()

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        await self.process.stdin.send_all(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for chunk in self.process.stdout:
            for frame in self.decoder.feed(bytes(chunk)):
                message = json.loads(frame)
                if "method" in message and "id" in message:
                    result: Any = None
                    if message["method"] == "workspace/configuration":
                        items = message["params"]["items"]
                        result = [self.settings.get(i.get("section", ""), {}) for i in items]
                    await self._write({"id": message["id"], "result": result})
                elif "id" in message and message["id"] in self.waiting:
                    await self.waiting.pop(message["id"]).send(message.get("result"))

    async def request(self, method: str, params: Any) -> Any:
        request_id = next(self.ids)
        send, receive = trio.open_memory_channel[Any](1)
        self.waiting[request_id] = send
        await self._write({"id": request_id, "method": method, "params": params})
        return await receive.receive()

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"method": method, "params": params})


async def rounds_both(
    root: Path, rounds: int
) -> tuple[dict[str, dict[str, list[float]]], float, float]:
    """Both paths warm side by side, measured alternately so machine load hits both alike."""
    client = DirectClient(root)
    manager = LspManager(root, Config(), lambda _: None)
    use = root / "use.py"
    times: dict[str, dict[str, list[float]]] = {"direct": {}, "daemon": {}}
    async with trio.open_nursery() as nursery:
        start = time.perf_counter()
        await nursery.start(manager.run)

        async def via_daemon(method: str, extra: dict[str, Any], path: Path = use) -> Any:
            def params(ctx: DocumentContext) -> dict[str, Any]:
                return {"textDocument": ctx.text_document, "position": ctx.position(3, 7), **extra}

            result_type = list[Location] if method == "textDocument/references" else Any
            return (await manager.request(path, method, params, result_type=result_type)).result

        await via_daemon("textDocument/hover", {})
        cold = time.perf_counter() - start

        await nursery.start(client.run)
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}],
                # The daemon's own declaration: the server does the same work for both.
                "capabilities": client_capabilities(),
            },
        )
        await client.notify("initialized", {})
        await client.notify("workspace/didChangeConfiguration", {"settings": client.settings})
        uri = use.as_uri()
        await client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": USE}},
        )

        async def direct(method: str, extra: dict[str, Any]) -> Any:
            position = {"line": 2, "character": 6}
            return await client.request(
                method, {"textDocument": {"uri": uri}, "position": position, **extra}
            )

        paths = {"direct": direct, "daemon": via_daemon}
        for name, ask in paths.items():
            times[name] = {m: [] for m in QUERIES}
            for method, extra in QUERIES.items():  # warm-up
                for _ in range(5):
                    await ask(method, extra)
        for _ in range(rounds):
            for method, extra in QUERIES.items():
                for name, ask in paths.items():
                    begin = time.perf_counter()
                    await ask(method, extra)
                    times[name][method].append(time.perf_counter() - begin)
        # A second client's first request on the warm session: a file no one opened yet.
        (root / "other.py").write_text(USE)
        start = time.perf_counter()
        await via_daemon("textDocument/hover", {}, root / "other.py")
        warm_first = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return times, cold, warm_first


def decode_5000() -> float:
    """Milliseconds (median of 20) to decode a 5,000-location references response."""
    location = {
        "uri": "file:///project/src/module_name.py",
        "range": {"start": {"line": 120, "character": 4}, "end": {"line": 120, "character": 11}},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": [location] * 5000}).encode()
    frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
    decoder = msgspec.json.Decoder(list[Location])
    samples = []
    for _ in range(20):
        start = time.perf_counter()
        [message] = [decode_message(f) for f in ContentLengthDecoder().feed(frame)]
        locations = decoder.decode(bytes(message.payload))
        samples.append(time.perf_counter() - start)
        assert len(locations) == 5000
    return statistics.median(samples) * 1000


async def main(rounds: int) -> None:
    root = make_project()
    times, cold, warm_first = await rounds_both(root, rounds)
    direct, daemon = times["direct"], times["daemon"]
    print(f"{'request':28} {'direct ms':>10} {'daemon ms':>10} {'ratio':>7} {'added ms':>9}")
    for method in QUERIES:
        d = statistics.median(direct[method]) * 1000
        m = statistics.median(daemon[method]) * 1000
        print(f"{method:28} {d:10.2f} {m:10.2f} {m / d:7.2f} {m - d:9.2f}")
    print(f"cold start + first hover: {cold * 1000:.0f} ms")
    print(f"second client's first request on the warm session: {warm_first * 1000:.0f} ms")
    print(f"warm / cold ratio: {warm_first / cold:.3f}")
    print(f"decode of a 5,000-location references response: {decode_5000():.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    trio.run(main, parser.parse_args().rounds)
