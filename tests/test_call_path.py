"""A tool call's path, checked on real calls: from the socket to the language server in a
straight line through at most 6 modules, none called back into once left.

Each request frame written to a server is caught where it is written (`Outbox.put`, the
one write point of frames; hover writes its definition request in the same write), and the
call stack there is read: the writing task's own frames, preceded by the frames of the task
that started it, waiting in its nursery, up to the task daemon/requests.py (or
daemon/mcp.py) started for the client's request.
Helpers that were called and returned (validation, shaping) are not on it, which is the
point: they are not in the line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.outbox import Outbox
from codeward.daemon.server import Daemon
from codeward.protocol.framing import ContentLengthDecoder
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.langs_support import open_project
from tests.lsp_support import needs
from tests.rpc import RpcClient
from tests.test_mcp import raw_mcp

pytestmark = needs("basedpyright", "ruff")

MAX_MODULES = 6
# a client's request runs in a task of its own: a `tools/call` one the connection's
# request runner (daemon/requests.py) starts, or the one daemon/mcp.py starts for an MCP
# call on the same socket
REQUEST_TASKS = frozenset({"codeward.daemon.requests", "codeward.daemon.mcp"})


def line(tool: str) -> list[str]:
    """The expected straight line of `tool`'s modules."""
    return [
        "codeward.daemon.requests",
        "codeward.daemon.handlers",
        tool,
        "codeward.daemon.lsp.service",
        "codeward.daemon.lsp.server",
        "codeward.daemon.lsp.connection",
    ]


HOVER = line("codeward.daemon.tools.hover")
DEFINITIONS = line("codeward.daemon.tools.definitions")
REFERENCES = line("codeward.daemon.tools.references")
SYMBOLS = line("codeward.daemon.tools.symbols")
# a request naming no file (`workspace/...`): the service's part for those sends it
WORKSPACE_SYMBOLS = [*SYMBOLS[:3], "codeward.daemon.lsp.workspace_requests", *SYMBOLS[4:]]
CALLS = line("codeward.daemon.tools.call_hierarchy")
EDITS = line("codeward.daemon.tools.edits")
# the service hands a diagnostics call to its part that gathers them from every server
DIAGNOSTICS = [
    "codeward.daemon.requests",
    "codeward.daemon.handlers",
    "codeward.daemon.tools.diagnostics",
    "codeward.daemon.lsp.diagnostics",
    "codeward.daemon.lsp.server",
    "codeward.daemon.lsp.connection",
]
# a folder's (the project's): the service hands it to its part for folders
FOLDER_DIAGNOSTICS = [*DIAGNOSTICS[:3], "codeward.daemon.lsp.folder_diagnostics", *DIAGNOSTICS[4:]]

LIB = """class Box:
    def __init__(self, size: int) -> None:
        self.size = size


def compute(value: int) -> Box:
    return Box(value)
"""
MAIN = """from lib import compute


def run() -> int:
    box = compute( 2)
    return box.size
"""


def _frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def _module(frame: FrameType) -> str:
    return frame.f_globals.get("__name__", "")


def _root_module(task: trio.lowlevel.Task) -> str:
    frame = getattr(task.coro, "cr_frame", None)
    return _module(frame) if frame is not None else ""


def request_stack(frame: FrameType) -> list[str] | None:
    """The modules on the stack of the client request that wrote from `frame`, outermost
    first, across the tasks it started; None when no client request started the writer
    (the server's own start, a lane's task, the file watcher)."""
    stacks = [[_module(f) for f in reversed(list(_frames(frame)))]]
    task: trio.lowlevel.Task | None = trio.lowlevel.current_task()
    while task is not None and _root_module(task) not in REQUEST_TASKS:
        nursery = task.parent_nursery
        task = nursery.parent_task if nursery is not None else None
        if task is not None:
            stacks.insert(0, _up_to(nursery, [f for f, _ in task.iter_await_frames()]))
    if task is None:
        return None
    return [m for stack in stacks for m in stack if m.startswith("codeward.")]


def _up_to(nursery: Any, frames: list[FrameType]) -> list[str]:
    """The modules of a parent task's `frames` down to the one that opened `nursery` (the
    parent may have gone on meanwhile: what it awaits now is not the child's path)."""
    for i, frame in enumerate(frames):
        if any(value is nursery for value in frame.f_locals.values()):
            return [_module(f) for f in frames[: i + 1]]
    raise AssertionError(f"no frame of {frames} holds the nursery {nursery}")


def runs(modules: list[str]) -> list[str]:
    """`modules` with each contiguous run of one module made one entry."""
    return [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """method -> the request stacks of every request frame of that method written to a
    server (while the test runs)."""
    seen: dict[str, list[list[str]]] = {}
    put = Outbox.put

    def spy(self: Outbox, frame: bytes | list[bytes | memoryview]) -> None:
        if isinstance(frame, bytes) and frame.startswith(b"Content-Length:"):  # to a server
            for body in ContentLengthDecoder().feed(frame):
                message: Any = msgspec.json.decode(body)
                if "id" in message and "method" in message:
                    stack = request_stack(sys._getframe(1))
                    if stack is not None:
                        seen.setdefault(message["method"], []).append(stack)
        put(self, frame)

    monkeypatch.setattr(Outbox, "put", spy)
    return seen


async def test_every_tool_reaches_its_server_in_a_straight_line(
    client: RpcClient,
    project: Path,
    written: dict[str, list[list[str]]],
    daemon: Daemon,
    nursery: trio.Nursery,
) -> None:
    write(project, {"lib.py": LIB, "main.py": MAIN})
    line_, character = pos(project, "main.py", "compute( 2)")
    at: dict[str, Any] = {"path": "main.py", "line": line_, "character": character}
    line_, character = pos(project, "lib.py", "compute")
    declared = {"line": line_, "character": character}
    calls: list[tuple[str, dict[str, Any], dict[str, list[str]]]] = [
        # hover sends its definition request with the hover, in one write
        ("get_hover_info", at, {"textDocument/hover": HOVER, "textDocument/definition": HOVER}),
        ("go_to_definition", at, {"textDocument/definition": DEFINITIONS}),
        ("get_type_definition", at, {"textDocument/typeDefinition": DEFINITIONS}),
        # methods basedpyright runs one at a time: in their turn, in the caller's own task
        (
            "find_references",
            {"path": "lib.py", **declared},
            {"textDocument/references": REFERENCES},
        ),
        (
            "find_implementations",
            {"path": "lib.py", **declared},
            {"textDocument/implementation": DEFINITIONS},
        ),
        ("get_symbols", {"path": "lib.py"}, {"textDocument/documentSymbol": SYMBOLS}),
        (
            "get_symbols",
            {"scope": "workspace", "query": "compute"},
            {"workspace/symbol": WORKSPACE_SYMBOLS},
        ),
        (
            "call_hierarchy",
            {"path": "lib.py", **declared},
            {"textDocument/prepareCallHierarchy": CALLS, "callHierarchy/incomingCalls": CALLS},
        ),
        (
            "call_hierarchy",
            {"path": "lib.py", **declared, "direction": "outgoing"},
            {"callHierarchy/outgoingCalls": CALLS},
        ),
        ("format_code", {"path": "main.py", "apply": False}, {"textDocument/formatting": EDITS}),
        (
            "rename_symbol",
            {**at, "new_name": "calculate", "apply": False},
            {"textDocument/prepareRename": EDITS, "textDocument/rename": EDITS},
        ),
        ("get_code_actions", {"path": "main.py", "line": 1}, {"textDocument/codeAction": EDITS}),
        # a file's diagnostics, pulled from basedpyright and ruff
        ("get_diagnostics", {"path": "lib.py"}, {"textDocument/diagnostic": DIAGNOSTICS}),
        # the folder's: each file pulled in the batches (basedpyright's entry says
        # `workspace_pull = false`)
        ("get_diagnostics", {}, {"textDocument/diagnostic": FOLDER_DIAGNOSTICS}),
        # a preview's diagnostics before and after, asked by the tool
        (
            "edit_file",
            {"path": "lib.py", "content": LIB + "\nBAD: int = 'x'\n", "mode": "preview"},
            {
                "textDocument/diagnostic": [
                    *line("codeward.daemon.tools.edit_file")[:3],
                    *DIAGNOSTICS[3:],
                ]
            },
        ),
        # an edit applied: its diagnostics before and after, asked by the tool
        (
            "format_code",
            {"path": "main.py"},
            {
                "textDocument/formatting": EDITS,
                "textDocument/diagnostic": [*EDITS[:3], *DIAGNOSTICS[3:]],
            },
        ),
    ]
    for tool, arguments, expected in calls:
        written.clear()
        with trio.fail_after(60):
            await client.tool(tool, **arguments)
        for method, path in expected.items():
            assert written.get(method), f"{tool} wrote no {method} request"
            for stack in written[method]:
                modules = runs(stack)
                assert len(modules) == len(set(modules)), (tool, method, stack)  # no call back up
                assert len(modules) <= MAX_MODULES, (tool, method, modules)
                assert modules == path, (tool, method, modules)
        # every other request the call wrote (readiness pulls, barriers) is as straight
        for method, stacks in written.items():
            for stack in stacks:
                modules = runs(stack)
                assert len(modules) == len(set(modules)), (tool, method, stack)
                assert len(modules) <= MAX_MODULES, (tool, method, modules)

    # the same line through MCP on the same socket: its dialect instead of the handlers
    mcp = await raw_mcp(nursery, daemon, project)
    written.clear()
    with trio.fail_after(60):
        reply = await mcp.request("tools/call", {"name": "get_hover_info", "arguments": at})
    assert not reply["result"].get("isError"), reply
    (stack,) = written["textDocument/hover"]
    assert runs(stack) == ["codeward.daemon.mcp", *HOVER[2:]], stack

    # a tool a Lua script calls (`codeward.call`): the eval runs in the request's own task,
    # and its host call goes down the tool's line (the eval's entry, shared with run_lua,
    # the sandbox and its host: three more steps)
    script = "return codeward.call('get_hover_info', {path = 'main.py', line = %d, character = %d})"
    written.clear()
    with trio.fail_after(60):
        evaluated = await client.call(
            "lua/eval", {"source": script % (at["line"], at["character"])}
        )
    assert "compute" in evaluated["result"]["signature"], evaluated
    lua = [
        "codeward.daemon.tools.lua_tool",
        "codeward.daemon.lua.actor",
        "codeward.daemon.tools.host",
    ]
    (stack,) = written["textDocument/hover"]
    assert runs(stack) == [*HOVER[:2], *lua, *HOVER[2:]], stack
    for method, stacks in written.items():
        for modules in map(runs, stacks):
            assert len(modules) == len(set(modules)), (method, modules)  # no call back up
            assert len(modules) <= MAX_MODULES + len(lua), (method, modules)


TS_FILES = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}\n',
    "src/a.ts": (
        'export function twice(x: number): number {\n  return x * 2;\n}\nconst n: number = "no";\n'
    ),
}


@needs("typescript-language-server")
async def test_commands_reach_their_server_in_the_same_line(
    open_client: OpenClient, project: Path, written: dict[str, list[list[str]]]
) -> None:
    """`workspace/executeCommand` runs one command at a time, each in its caller's own task:
    a code action backed by a command (typescript-language-server's refactorings, whose
    edits come back as `workspace/applyEdit`), and the tsserver requests that answer a
    TypeScript file's diagnostics."""
    client = await open_project(open_client, project, TS_FILES)
    with trio.fail_after(60):
        found = await client.tool("get_diagnostics", path="src/a.ts")
    assert [d["line"] for d in found["diagnostics"] if d["severity"] == "error"] == [4]
    asked = written.pop("workspace/executeCommand")
    assert len(asked) == 3  # syntax, semantic and suggestion diagnostics, one after another
    assert all(runs(stack) == DIAGNOSTICS for stack in asked), asked

    title = "Convert named export to default export"
    with trio.fail_after(60):
        done = await client.tool("get_code_actions", path="src/a.ts", line=1, apply=title)
    assert done["files_changed"] == ["src/a.ts"]
    assert (project / "src/a.ts").read_text().startswith("export default function twice(")
    # the command itself; the others are the tsserver diagnostics the tool asks for: the
    # code action's context, and the files' before and after the edit (what it changed)
    # (the command goes through the service's part for workspace requests)
    commands = [runs(stack) for stack in written["workspace/executeCommand"]]
    command = [*EDITS[:3], "codeward.daemon.lsp.workspace_requests", *EDITS[4:]]
    assert commands.count(command) == 1, commands
    edit_diagnostics = [*EDITS[:3], *DIAGNOSTICS[3:]]
    assert all(m in (command, edit_diagnostics) for m in commands), commands
    for method, stacks in written.items():
        for modules in map(runs, stacks):
            assert len(modules) == len(set(modules)), (method, modules)  # no call back up
            assert len(modules) <= MAX_MODULES, (method, modules)


def test_runs_and_the_call_back_check() -> None:
    line_ = ["a", "a", "b", "c", "c"]
    assert runs(line_) == ["a", "b", "c"]
    back = runs(["a", "b", "a"])
    assert len(back) != len(set(back))
