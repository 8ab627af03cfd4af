"""Benchmark the code-intelligence tools against a direct client of the same basedpyright.

1. Every tool (get_hover_info, go_to_definition, find_references, find_implementations,
   get_type_definition, get_symbols, call_hierarchy), called in-process through the tool
   registry, against the equivalent raw LSP request(s) sent straight to a second warm
   basedpyright by bench/lsp.py's minimal client: medians and the milliseconds added.
2. A find_references call returning 1,000+ locations across ten files: the tool's wall
   time, the direct request's, and the daemon's own CPU time spent on it (the server runs
   in another process, so process CPU time is the daemon's share).

Run: .venv/bin/python bench/lsp_tools.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).parent))

from lsp import DirectClient

import codeward.daemon.tools.all  # noqa: F401  (registers the tools)
from codeward.daemon.config import Config
from codeward.daemon.lsp.capabilities import client_capabilities
from codeward.daemon.lsp.manager import LspManager
from codeward.daemon.tools.registry import REGISTRY, NoCaller, ToolContext

FILES = 10
USES = 120  # per file: 1,200 references to `compute`
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
'''
USE = "from lib import Impl, compute\n\nobj = Impl()\n" + "".join(
    f"r{i} = compute({i})\n" for i in range(USES)
)

# tool name, its arguments, and the direct requests that answer the same question
# (file, method, 0-based line, 0-based character, extra params).
Direct = list[tuple[str, str, int, int, dict[str, Any]]]
CASES: list[tuple[str, dict[str, Any], Direct]] = [
    ("get_hover_info", {"path": "use_0.py", "line": 4, "character": 6},
     [("use_0.py", "textDocument/hover", 3, 5, {})]),
    ("go_to_definition", {"path": "use_0.py", "line": 4, "character": 6},
     [("use_0.py", "textDocument/definition", 3, 5, {})]),
    ("find_implementations", {"path": "lib.py", "line": 6, "character": 9},
     [("lib.py", "textDocument/implementation", 5, 8, {})]),
    ("get_type_definition", {"path": "use_0.py", "line": 3, "character": 1},
     [("use_0.py", "textDocument/typeDefinition", 2, 0, {})]),
    ("get_symbols", {"path": "lib.py"},
     [("lib.py", "textDocument/documentSymbol", -1, -1, {})]),
    ("call_hierarchy", {"path": "lib.py", "line": 14, "character": 5},
     [("lib.py", "textDocument/prepareCallHierarchy", 13, 4, {}),
      ("lib.py", "incoming", 0, 0, {})]),
    ("find_references", {"path": "lib.py", "line": 14, "character": 5},
     [("lib.py", "textDocument/references", 13, 4, {"context": {"includeDeclaration": True}})]),
]  # fmt: skip


def _size(result: Any) -> int:
    """How many things an answer holds (tool result or raw LSP result)."""
    if isinstance(result, list):
        return len(result)
    if isinstance(result, dict):
        for key in ("count", "calls", "symbols"):
            if isinstance(result.get(key), int):
                return result[key]
            if isinstance(result.get(key), list):
                return len(result[key])
        return 1
    return 0


def make_project() -> Path:
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="cw-bench-tools-")))
    (root / "lib.py").write_text(LIB)
    for k in range(FILES):
        (root / f"use_{k}.py").write_text(USE)
    return root


async def open_direct(client: DirectClient, root: Path) -> None:
    await client.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}],
            "capabilities": client_capabilities(),
        },
    )
    await client.notify("initialized", {})
    await client.notify("workspace/didChangeConfiguration", {"settings": client.settings})
    for name in ("lib.py", "use_0.py"):
        await client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": (root / name).as_uri(),
                    "languageId": "python",
                    "version": 1,
                    "text": (root / name).read_text(),
                }
            },
        )


def direct_call(client: DirectClient, root: Path, steps: Direct) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        result: Any = None
        for name, method, line, character, extra in steps:
            uri = (root / name).as_uri()
            if method == "incoming":
                if not result:
                    return None
                result = await client.request("callHierarchy/incomingCalls", {"item": result[0]})
                continue
            params: dict[str, Any] = {"textDocument": {"uri": uri}, **extra}
            if line >= 0:
                params["position"] = {"line": line, "character": character}
            result = await client.request(method, params)
        return result

    return run


async def main(rounds: int) -> None:
    root = make_project()
    manager = LspManager(root, Config(), lambda _: None)
    ctx = ToolContext(SimpleNamespace(lsp=manager), NoCaller())  # type: ignore[arg-type]
    client = DirectClient(root)
    times: dict[str, dict[str, list[float]]] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await nursery.start(client.run)
        await open_direct(client, root)
        paths: dict[str, dict[str, Callable[[], Awaitable[Any]]]] = {}
        for name, arguments, steps in CASES:

            async def via_tool(name: str = name, arguments: dict[str, Any] = arguments) -> Any:
                return await REGISTRY.call(name, arguments, ctx)

            paths[name] = {"direct": direct_call(client, root, steps), "tool": via_tool}
            times[name] = {"direct": [], "tool": []}
        sizes: dict[str, tuple[int, int]] = {}
        for name, ways in paths.items():  # warm-up, and a check that both answer
            tool_result: Any = None
            for _ in range(3):
                tool_result = await ways["tool"]()
            with trio.fail_after(30):  # the direct server answers once it has analysed
                while (direct_result := await ways["direct"]()) is None:
                    await trio.sleep(0.1)
            sizes[name] = (_size(tool_result), _size(direct_result))
            assert tool_result.get("status", "found") == "found", (name, tool_result)
        cpu: list[float] = []
        count = 0
        for _ in range(rounds):
            for name, ways in paths.items():
                for way in ("direct", "tool"):
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    result = await ways[way]()
                    times[name][way].append(time.perf_counter() - begin)
                    if name == "find_references" and way == "tool":
                        cpu.append(time.process_time() - begin_cpu)
                        count = result["count"]
        nursery.cancel_scope.cancel()
    print(f"{'tool':22} {'direct ms':>10} {'tool ms':>10} {'ratio':>7} {'added ms':>9} items")
    for name, ways in times.items():
        d = statistics.median(ways["direct"]) * 1000
        t = statistics.median(ways["tool"]) * 1000
        items = "{} / {}".format(*sizes[name])
        print(f"{name:22} {d:10.2f} {t:10.2f} {t / d:7.2f} {t - d:9.2f} {items}")
    print(
        f"find_references with {count} locations: "
        f"daemon CPU {statistics.median(cpu) * 1000:.1f} ms "
        f"(median of {len(cpu)}), "
        f"wall {statistics.median(times['find_references']['tool']) * 1000:.1f} ms vs direct "
        f"{statistics.median(times['find_references']['direct']) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    trio.run(main, parser.parse_args().rounds)
