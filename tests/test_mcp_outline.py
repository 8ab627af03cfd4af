"""What a model reads of a file's outline through MCP, exactly, on real basedpyright (one
daemon process for the module): runs of siblings of one kind with the line and character of
each name, nesting, overloads, non-ASCII names, and an empty file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest
import trio

from codeward.protocol import mcp as mcp_protocol
from codeward.protocol.render.notes import RESTRICTED
from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_daemon
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, connect

__all__ = ["no_leaked_processes", "shared_daemon"]  # the module's fixtures

pytestmark = needs("basedpyright")

SHAPES = """\
from typing import overload


class Outer:
    class Middle:
        class Inner:
            def deep(self) -> int:
                return 1

    @overload
    def pick(self, value: int) -> int: ...
    @overload
    def pick(self, value: str) -> str: ...
    def pick(self, value: int | str) -> int | str:
        return value


def größe() -> int:
    return 1


async def fetch() -> None:
    pass


def plain() -> None:
    pass


def plain() -> None:
    pass


LABEL = "😀 wide"; AFTER = 1
"""


@pytest.fixture
async def agent(nursery: trio.Nursery, shared_daemon: SharedDaemon) -> AsyncIterator[RpcClient]:
    """MCP spoken on the module daemon's socket, bound to its root, initialized."""
    client = await connect(nursery, shared_daemon.env.socket)
    bind = {"jsonrpc": "2.0", "method": mcp_protocol.BIND_METHOD,
            "params": {"root": str(shared_daemon.root)}}  # fmt: skip
    await client.send_raw(json.dumps(bind).encode() + b"\n")
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "outline", "version": "1"}}  # fmt: skip
    assert (await client.request("initialize", init))["result"]["serverInfo"]
    yield client
    await client.aclose()


async def call(client: RpcClient, name: str, **arguments: Any) -> dict[str, Any]:
    with trio.fail_after(60):
        reply = await client.request("tools/call", {"name": name, "arguments": arguments})
    result = reply["result"]
    assert not result["isError"], result
    return result


async def test_the_outline_as_a_model_reads_it(
    agent: RpcClient, shared_daemon: SharedDaemon
) -> None:
    write(shared_daemon.root, {"shapes.py": SHAPES})
    result = await call(agent, "get_symbols", path="shapes.py")
    assert result["content"][0]["text"].splitlines() == [
        "class@7 Outer:4",
        " class@11 Middle:5",
        "  class@15 Inner:6",
        "   fn@17 deep:7",
        " fn@9 pick:14",  # basedpyright lists an overloaded method once, at its implementation
        # `async def` puts its name at another character; a name defined twice is listed
        # once, at its last definition (as basedpyright answers)
        "fn größe:18:5 fetch:22:11 plain:30:5",
        "const LABEL:34:1 AFTER:34:19",  # characters are code points: 😀 counts one
        f"({RESTRICTED})",  # said once per connection
    ]
    listed = await agent.request("tools/list", {})
    (schema,) = [t["outputSchema"] for t in listed["result"]["tools"] if t["name"] == "get_symbols"]
    jsonschema.validate(result["structuredContent"], schema)
    assert result["structuredContent"]["count"] == 10

    # The positions are those the position tools take: they land on the names.
    hover = await call(agent, "get_hover_info", path="shapes.py", line=18, character=5)
    assert hover["content"][0]["text"] == "def größe() -> int"  # no remark the second time
    after = await call(agent, "get_hover_info", path="shapes.py", line=34, character=19)
    assert after["structuredContent"]["signature"] == "AFTER: Literal[1]"
    deep = await call(agent, "go_to_definition", path="shapes.py", line=7, character=17)
    assert deep["content"][0]["text"] == "shapes.py:7:17: def deep(self) -> int:"

    depth = await call(agent, "get_symbols", path="shapes.py", depth=1)
    assert depth["content"][0]["text"].splitlines() == [
        "class@7 Outer:4",
        "fn größe:18:5 fetch:22:11 plain:30:5",
        "const LABEL:34:1 AFTER:34:19",
    ]


async def test_an_empty_outline_says_so(agent: RpcClient, shared_daemon: SharedDaemon) -> None:
    write(shared_daemon.root, {"empty.py": "# nothing here\n"})
    result = await call(agent, "get_symbols", path="empty.py")
    assert result["structuredContent"]["status"] == "not_found"
    assert result["content"][0]["text"] == f"(no symbols found)\n({RESTRICTED})"
