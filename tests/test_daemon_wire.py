"""The daemon's wire: framing per connection, JSON-RPC errors, concurrency, cancellation."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.server import Daemon
from codeward.daemon.tools.registry import REGISTRY, Tool, ToolContext
from codeward.protocol.framing import Framing
from tests.conftest import OpenClient
from tests.rpc import RpcFailure


class BlockArgs(msgspec.Struct, forbid_unknown_fields=True):
    label: str = ""


class Gate:
    """A tool under test control: it starts, then waits to be released."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()
        self.finished = trio.Event()
        self.cancelled = trio.Event()


@pytest.fixture
def gate() -> Iterator[Gate]:
    g = Gate()

    async def handler(ctx: ToolContext, args: BlockArgs) -> dict[str, Any]:
        g.started.set()
        try:
            await g.release.wait()
        except trio.Cancelled:
            g.cancelled.set()
            raise
        g.finished.set()
        return {"label": args.label}

    async def write_handler(ctx: ToolContext, args: BlockArgs) -> dict[str, Any]:
        # as run_git and the edit layer do: the write itself is shielded, at its own depth
        with trio.CancelScope(shield=True):
            return await handler(ctx, args)

    REGISTRY.register(Tool("test_gate", "test only", BlockArgs, handler))
    REGISTRY.register(Tool("test_gate_write", "test only", BlockArgs, write_handler))
    yield g
    REGISTRY.unregister("test_gate")
    REGISTRY.unregister("test_gate_write")


async def raw_exchange(socket: Path, data: bytes, max_bytes: int = 1 << 20) -> bytes:
    """Send bytes, half-close nothing, read until the daemon closes or goes quiet."""
    stream = await trio.open_unix_socket(str(socket))
    async with stream:
        await stream.send_all(data)
        out = b""
        with trio.move_on_after(5):
            while len(out) < max_bytes:
                try:
                    chunk = await stream.receive_some(65536)
                except trio.BrokenResourceError:  # closed with our bytes unread: a reset
                    break
                if not chunk:
                    break
                out += chunk
                if (
                    out.endswith(b"\n")
                    and b"Closing" not in out
                    and data.count(b"\n") <= out.count(b"\n")
                ):
                    break
        return out


async def test_initialize_and_status(open_client: OpenClient, daemon: Daemon) -> None:
    client = await open_client()
    result = await client.call(
        "initialize",
        {"protocol_version": 1, "client": {"name": "t", "version": "1"}, "capabilities": {}},
    )
    assert result["pid"] == os.getpid()
    assert result["server"]["name"] == "codeward"
    status = await client.call("daemon/status")
    assert status["pid"] == os.getpid()
    assert status["connections"] == 1
    assert status["socket"] == str(daemon.socket_path)
    assert status["uptime"] >= 0


async def test_ids_zero_and_strings(open_client: OpenClient) -> None:
    client = await open_client()
    response = await client.request("daemon/status", id=0)
    assert response["id"] == 0 and "result" in response
    response = await client.request("daemon/status", id="abc")
    assert response["id"] == "abc" and "result" in response


async def test_unknown_method_and_bad_params(open_client: OpenClient) -> None:
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.call("no/such/method")
    assert info.value.code == -32601
    with pytest.raises(RpcFailure) as info:
        await client.call("tools/list", {"format": 5})
    assert info.value.code == -32602 and "format" in info.value.message
    with pytest.raises(RpcFailure) as info:
        await client.call("tools/list", [1, 2])
    assert info.value.code == -32602
    # the connection still serves
    assert (await client.call("daemon/status"))["connections"] == 1


async def test_tool_call_without_session(open_client: OpenClient) -> None:
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.tool("git_command", subcommand="status")
    assert info.value.code == -32000 and info.value.kind == "no_session"


async def test_garbage_first_byte_closes_with_an_error(daemon: Daemon) -> None:
    out = await raw_exchange(daemon.socket_path, b"\x00\x01garbage\n")
    reply = json.loads(out.splitlines()[0])
    assert reply["error"]["code"] == -32600 and "framing" in reply["error"]["message"].lower()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{garbage}\n", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n', -32700),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"x","params":'
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}\n",
            -32700,
        ),
        (b"[]\n", -32600),
    ],
)
async def test_bad_lines_get_errors_and_the_connection_lives(
    daemon: Daemon, line: bytes, code: int
) -> None:
    status = b'{"jsonrpc":"2.0","id":2,"method":"daemon/status"}\n'
    out = await raw_exchange(daemon.socket_path, line + status)
    replies = [json.loads(x) for x in out.splitlines()]
    assert replies[0]["error"]["code"] == code
    assert replies[1]["id"] == 2 and "result" in replies[1]


class TestLimits:
    """A daemon with small frame limits."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(daemon=DaemonConfig(max_message_bytes=4096, max_header_bytes=256))

    async def test_frame_over_the_limit_closes(self, daemon: Daemon) -> None:
        big = b'{"jsonrpc":"2.0","id":1,"method":"x","params":"' + b"a" * 5000 + b'"}\n'
        out = await raw_exchange(daemon.socket_path, big)
        reply = json.loads(out.splitlines()[0])
        assert reply["error"]["code"] == -32600 and "limit" in reply["error"]["message"]

    async def test_header_block_that_never_ends_closes(self, daemon: Daemon) -> None:
        out = await raw_exchange(daemon.socket_path, b"Content-Length: 10\r\nX-Pad: " + b"p" * 400)
        assert b"Header block" in out
        assert b"Content-Length:" in out  # the reply uses the connection's framing


async def test_content_length_framing(open_client: OpenClient) -> None:
    client = await open_client(framing=Framing.CONTENT_LENGTH)
    status = await client.call("daemon/status")
    assert status["pid"] == os.getpid()


async def test_batch(daemon: Daemon) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "daemon/status"},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        5,
    ]
    out = await raw_exchange(daemon.socket_path, json.dumps(batch).encode() + b"\n")
    replies = json.loads(out.splitlines()[0])
    assert isinstance(replies, list) and len(replies) == 3
    assert replies[0]["id"] == 1 and "result" in replies[0]
    assert replies[1]["error"]["code"] == -32601
    assert replies[2]["error"]["code"] == -32600


async def test_requests_on_one_connection_run_concurrently(client, gate: Gate) -> None:
    async with trio.open_nursery() as nursery:
        results: dict[str, Any] = {}

        async def blocked() -> None:
            results["gate"] = await client.tool("test_gate", label="g")

        nursery.start_soon(blocked)
        with trio.fail_after(5):
            await gate.started.wait()
        # a second request on the same connection is served while the first waits
        status = await client.call("daemon/status")
        assert status["connections"] == 1
        gate.release.set()
    assert results["gate"] == {"label": "g"}


async def test_reused_id_in_flight_is_refused(daemon: Daemon, project: Path, gate: Gate) -> None:
    stream = await trio.open_unix_socket(str(daemon.socket_path))
    async with stream:
        lines = LineReader(stream)
        await stream.send_all(
            b'{"jsonrpc":"2.0","id":1,"method":"session/open","params":{"root":"%s"}}\n'
            % str(project).encode()
        )
        assert "result" in await lines.next()
        await stream.send_all(
            b'{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"test_gate"}}\n'
        )
        with trio.fail_after(5):
            await gate.started.wait()
        await stream.send_all(b'{"jsonrpc":"2.0","id":77,"method":"daemon/status"}\n')
        dup = await lines.next()
        assert dup["id"] == 77 and dup["error"]["code"] == -32600
        assert "in flight" in dup["error"]["message"]
        gate.release.set()
        first = await lines.next()
        assert first == {"jsonrpc": "2.0", "id": 77, "result": {"label": ""}}


class LineReader:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def next(self) -> Any:
        with trio.fail_after(5):
            while b"\n" not in self.buffer:
                chunk = await self.stream.receive_some(65536)
                assert chunk, "the daemon closed the connection"
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


async def test_cancel_request(client, gate: Gate) -> None:
    async with trio.open_nursery() as nursery:
        response: dict[str, Any] = {}

        async def blocked() -> None:
            response.update(
                await client.request("tools/call", {"name": "test_gate", "arguments": {}}, id=0)
            )

        nursery.start_soon(blocked)
        with trio.fail_after(5):
            await gate.started.wait()
        await client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 0}})
    assert gate.cancelled.is_set()
    assert response["error"]["code"] == -32800
    assert response["error"]["data"]["kind"] == "cancelled"


async def test_disconnect_cancels_reads_but_finishes_writes(
    open_client: OpenClient, project: Path, gate: Gate, daemon: Daemon
) -> None:
    client = await open_client(project)
    await client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_gate"}}
    )
    with trio.fail_after(5):
        await gate.started.wait()
    await client.aclose()
    with trio.fail_after(5):
        await gate.cancelled.wait()

    gate2 = Gate()
    gate.__dict__.update(gate2.__dict__)  # the tool handler reads the fixture's gate object
    client = await open_client(project)
    await client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_gate_write"}}
    )
    with trio.fail_after(5):
        await gate.started.wait()
    (conn,) = daemon.connections.values()
    await client.aclose()
    with trio.fail_after(5):
        await conn.reader_done.wait()
    assert not gate.cancelled.is_set()
    gate.release.set()
    with trio.fail_after(5):
        await gate.finished.wait()


async def test_two_hundred_connections(open_client: OpenClient, daemon: Daemon) -> None:
    fds_before = len(os.listdir("/proc/self/fd"))
    pids: list[int] = []
    clients = []

    async def one() -> None:
        client = await open_client()
        clients.append(client)
        pids.append((await client.call("daemon/status"))["pid"])

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for _ in range(200):
                nursery.start_soon(one)
        assert len(daemon.connections) == 200
        conns = list(daemon.connections.values())
        for client in clients:
            await client.aclose()
        for conn in conns:
            await conn.done.wait()
    assert pids == [os.getpid()] * 200
    assert daemon.connections == {}
    assert len(os.listdir("/proc/self/fd")) <= fds_before  # no fd left behind


async def test_connection_from_another_uid_is_closed(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codeward.daemon.server as server

    monkeypatch.setattr(server, "peer_uid", lambda stream: os.getuid() + 1)
    out = await raw_exchange(
        daemon.socket_path, b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n'
    )
    assert out == b""


async def test_peer_uid_reads_the_real_credentials(daemon: Daemon) -> None:
    from codeward.daemon.listener import peer_uid

    a, b = trio.socket.socketpair()
    with a, b:
        assert peer_uid(trio.SocketStream(a)) == os.getuid()


async def test_tools_list_formats(open_client: OpenClient) -> None:
    client = await open_client()
    for fmt, key in [
        ("native", "input"),
        ("openai", "function"),
        ("anthropic", "input_schema"),
        ("mcp", "inputSchema"),
    ]:
        tools = (await client.call("tools/list", {"format": fmt}))["tools"]
        assert tools and all(key in t for t in tools)
    with pytest.raises(RpcFailure) as info:
        await client.call("tools/list", {"format": "xml"})
    assert info.value.code == -32602


async def test_tool_arguments_are_validated(client, gate: Gate) -> None:
    with pytest.raises(RpcFailure) as info:
        await client.tool("test_gate", label=5)
    assert info.value.kind == "invalid_arguments" and "label" in info.value.message
    with pytest.raises(RpcFailure) as info:
        await client.tool("test_gate", lable="x")
    assert info.value.kind == "invalid_arguments" and "lable" in info.value.message
    with pytest.raises(RpcFailure) as info:
        await client.tool("no_such_tool")
    assert info.value.kind == "invalid_arguments" and "tools/list" in info.value.message
    with pytest.raises(RpcFailure) as info:
        await client.call("tools/call", {"name": "test_gate", "arguments": [1]})
    assert info.value.code == -32602
    assert not gate.started.is_set()


async def test_tool_schema_is_generated_from_the_struct(
    open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client()
    tools = (await client.call("tools/list", {"format": "anthropic"}))["tools"]
    (mine,) = [t for t in tools if t["name"] == "test_gate"]
    assert mine["input_schema"] == {
        "type": "object",
        "properties": {"label": {"type": "string", "default": ""}},
        "required": [],
        "additionalProperties": False,
    }


async def test_a_tool_error_inside_a_nursery_is_reported_as_itself(
    open_client: OpenClient, project: Path
) -> None:
    from codeward.protocol.errors import ErrorKind, ToolError

    async def handler(ctx: ToolContext, args: BlockArgs) -> dict[str, Any]:
        async def fail() -> None:
            raise ToolError(ErrorKind.LSP_ERROR, "The server crashed; call again.")

        async with trio.open_nursery() as nursery:  # wraps the error in an exception group
            nursery.start_soon(fail)
        return {}

    async def broken(ctx: ToolContext, args: BlockArgs) -> dict[str, Any]:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep, 0)
            raise ValueError("a bug")

    REGISTRY.register(Tool("test_nested_error", "test only", BlockArgs, handler))
    REGISTRY.register(Tool("test_bug", "test only", BlockArgs, broken))
    try:
        client = await open_client(project)
        with pytest.raises(RpcFailure) as info:
            await client.tool("test_nested_error")
        assert info.value.kind == "lsp_error" and info.value.message.startswith("The server")
        with pytest.raises(RpcFailure) as info:
            await client.tool("test_bug")
        assert info.value.code == -32603 and "a bug" not in info.value.message
    finally:
        REGISTRY.unregister("test_nested_error")
        REGISTRY.unregister("test_bug")


def test_find_tool_error() -> None:
    from codeward.protocol.errors import ErrorKind, ToolError, find_tool_error

    inner = ToolError(ErrorKind.TIMEOUT, "Slow.")
    nested = ExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [inner])])
    assert find_tool_error(nested) is inner
    assert find_tool_error(ExceptionGroup("g", [ValueError("x")])) is None
    assert find_tool_error(inner) is inner


# -- state-changing requests take effect before later ones start ------------------------------


@pytest.fixture
def whoami() -> Iterator[None]:
    """A tool answering what its connection's state is when it runs."""

    async def handler(ctx: ToolContext, args: BlockArgs) -> dict[str, Any]:
        return {"root": ctx.session.root.name, "can_confirm": ctx.caller.can_confirm}

    REGISTRY.register(Tool("test_whoami", "test only", BlockArgs, handler))
    yield
    REGISTRY.unregister("test_whoami")


def _req(msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _pipelined(project: Path, other: Path) -> list[dict[str, Any]]:
    """State changes each followed at once by a request that depends on them."""
    whoami = {"name": "test_whoami"}
    return [
        _req(1, "initialize", {"capabilities": {"confirm": True}}),
        _req(2, "session/open", {"root": str(project)}),
        _req(3, "tools/call", whoami),
        _req(4, "session/open", {"root": str(other)}),
        _req(5, "tools/call", whoami),
        _req(6, "session/close"),
        _req(7, "tools/call", whoami),
        _req(8, "session/open", {"bad": 1}),  # a failed state change lets the rest through
        _req(9, "daemon/status"),
    ]


def _check_pipelined(replies: list[dict[str, Any]]) -> None:
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == set(range(1, 10)), replies
    assert by_id[3]["result"] == {"root": "project", "can_confirm": True}
    assert by_id[5].get("result") == {"root": "other", "can_confirm": True}, by_id[5]
    assert by_id[7]["error"]["data"]["kind"] == "no_session"
    assert by_id[8]["error"]["code"] == -32602
    assert "result" in by_id[9]


async def _read_replies(stream: trio.SocketStream, framing: Framing, count: int) -> list[Any]:
    from codeward.protocol.framing import make_decoder

    decoder, replies = make_decoder(framing), []
    with trio.fail_after(20):
        while len(replies) < count:
            chunk = await stream.receive_some(65536)
            assert chunk, "the daemon closed the connection"
            replies += [json.loads(frame) for frame in decoder.feed(chunk)]
    return replies


@pytest.mark.parametrize("framing", [Framing.NDJSON, Framing.CONTENT_LENGTH])
async def test_pipelined_state_changes_come_first(
    daemon: Daemon, project: Path, tmp_path: Path, whoami: None, framing: Framing
) -> None:
    from codeward.protocol.framing import encode_frame

    other = tmp_path / "other"
    other.mkdir()
    messages = _pipelined(project, other)
    stream = await trio.open_unix_socket(str(daemon.socket_path))
    async with stream:  # every message in one write: nothing waits for an answer
        await stream.send_all(
            b"".join(encode_frame(framing, json.dumps(m).encode()) for m in messages)
        )
        _check_pipelined(await _read_replies(stream, framing, len(messages)))


async def test_state_changes_come_first_in_and_across_batches(
    daemon: Daemon, project: Path, tmp_path: Path, whoami: None
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    messages = _pipelined(project, other)
    # one batch, then a batch holding only a state change followed by a lone request
    frames = [
        messages,
        [_req(10, "session/open", {"root": str(project)})],
        _req(11, "tools/call", {"name": "test_whoami"}),
    ]
    stream = await trio.open_unix_socket(str(daemon.socket_path))
    async with stream:
        await stream.send_all(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        replies = await _read_replies(stream, Framing.NDJSON, 3)
    batch = next(r for r in replies if isinstance(r, list) and len(r) == 9)
    _check_pipelined(batch)
    lone = next(r for r in replies if isinstance(r, dict))
    assert lone["id"] == 11 and lone["result"]["root"] == "project"
