"""No input stops the daemon: bad bytes on every dialect (native lines, Content-Length
frames, batches, MCP on the socket, MCP handed off with SCM_RIGHTS, the `codeward mcp` pump)
end as a JSON-RPC error for their message or a closed connection, and the daemon still
answers `daemon/status` on a new connection afterwards."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.server import Daemon
from codeward.protocol import mcp
from tests.test_mcp import ENV, pump_argv
from tests.test_mcp_handoff import handoff, read_line, read_to_end, rights
from tests.wire_support import (
    BAD_HEADERS,
    MCP,
    NASTY,
    NATIVE,
    body,
    framed_content_length,
    framed_ndjson,
    seeded_mutations,
)

LAST = body({"id": "last", "method": "daemon/status"})
MCP_LAST = body({"id": "last", "method": "ping"})
BAD = NASTY + seeded_mutations(NATIVE + MCP, 60)
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


async def still_serves(daemon: Daemon) -> None:
    """A new connection's `daemon/status` answers."""
    with trio.fail_after(10):
        stream = await trio.open_unix_socket(str(daemon.socket_path))
        async with stream:
            await stream.send_all(body({"id": 1, "method": "daemon/status"}) + b"\n")
            reply = await read_line(stream, bytearray())
    assert reply["result"]["pid"] == os.getpid()


def replies_of(data: bytes, framing: str = "ndjson") -> list[Any]:
    """The messages the daemon wrote, every one of them JSON."""
    if framing == "ndjson":
        return [json.loads(part) for part in data.splitlines()]
    out = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def check(replies: list[Any]) -> None:
    """Every reply answers one message (a list: a batch's), errors with JSON-RPC codes;
    the last one answers the last request, which still ran."""
    for reply in replies:
        for one in reply if isinstance(reply, list) else [reply]:
            assert set(one) <= {"jsonrpc", "id", "result", "error"}, one
            if "error" in one:
                assert isinstance(one["error"]["code"], int) and one["error"]["message"]
    (last,) = [r for r in replies if isinstance(r, dict) and r.get("id") == "last"]
    assert "result" in last, last


async def exchange(daemon: Daemon, data: bytes) -> bytes:
    """Send `data` on a new connection and half-close it; all that comes back until the
    daemon closes (it answers every message first)."""
    stream = await trio.open_unix_socket(str(daemon.socket_path))

    async def send() -> None:
        with contextlib.suppress(trio.BrokenResourceError):  # it closed: what it wrote says why
            await stream.send_all(data)
            await stream.send_eof()

    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(send)
        return await read_to_end(stream)


@pytest.fixture(autouse=True)
def no_failed_connections(caplog: pytest.LogCaptureFixture) -> None:
    """A connection that fails is contained, but none of these inputs may make one fail."""
    caplog.set_level(logging.ERROR, logger="codeward")


def no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, failures


async def test_native_lines(daemon: Daemon, caplog: pytest.LogCaptureFixture) -> None:
    start = body({"id": 0, "method": "daemon/status"})
    replies = replies_of(await exchange(daemon, framed_ndjson([start, *BAD, LAST])))
    check(replies)
    assert sum(1 for r in replies if isinstance(r, dict) and r.get("error", {}).get("code")
               == PARSE_ERROR) >= 20  # fmt: skip
    await still_serves(daemon)
    no_errors_logged(caplog)


async def test_native_content_length(daemon: Daemon, caplog: pytest.LogCaptureFixture) -> None:
    start = body({"id": 0, "method": "daemon/status"})
    out = await exchange(daemon, framed_content_length([start, *BAD, LAST]))
    check(replies_of(out, "content-length"))
    await still_serves(daemon)
    no_errors_logged(caplog)


async def test_batches(daemon: Daemon, caplog: pytest.LogCaptureFixture) -> None:
    batches = [b"[" + b",".join(BAD[i : i + 3]) + b"]" for i in range(0, len(BAD), 3)]
    good = [b"[" + b",".join([*NATIVE[:2], bad]) + b"]" for bad in BAD[:20]]
    replies = replies_of(await exchange(daemon, framed_ndjson([*batches, *good, LAST])))
    check(replies)
    await still_serves(daemon)
    no_errors_logged(caplog)


@pytest.mark.parametrize("header", BAD_HEADERS)
async def test_bad_headers_close_the_connection_alone(
    daemon: Daemon, header: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    out = await exchange(daemon, header)
    assert b"Closing" in out
    await still_serves(daemon)
    no_errors_logged(caplog)


@pytest.mark.parametrize("first", ["bind", "initialize"])
async def test_mcp_on_the_socket(
    daemon: Daemon, project: Path, first: str, caplog: pytest.LogCaptureFixture
) -> None:
    opening = (
        body({"method": mcp.BIND_METHOD, "params": {"root": str(project)}})
        if first == "bind"
        else MCP[0]
    )
    lines = [opening, MCP[0], *BAD, MCP_LAST]
    replies = replies_of(await exchange(daemon, framed_ndjson(lines)))
    check(replies)
    assert any(r.get("error", {}).get("code") == PARSE_ERROR for r in replies)
    await still_serves(daemon)
    no_errors_logged(caplog)


async def test_mcp_handed_off(
    daemon: Daemon, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stdin, host_in = os.pipe()
    host_out, stdout = os.pipe()
    sock = trio.socket.socket(socket.AF_UNIX)
    await sock.connect(str(daemon.socket_path))
    await sock.sendmsg([handoff(project)], rights(stdin, stdout))
    os.close(stdin)
    os.close(stdout)
    lifeline = trio.SocketStream(sock)
    assert (await read_line(lifeline, bytearray()))["id"] == 0
    to_daemon = trio.lowlevel.FdStream(host_in)
    from_daemon = trio.lowlevel.FdStream(host_out)
    async with trio.open_nursery() as nursery:

        async def send() -> None:
            await to_daemon.send_all(framed_ndjson([MCP[0], *BAD, MCP_LAST]))
            await to_daemon.aclose()

        nursery.start_soon(send)
        replies = replies_of(await read_to_end(from_daemon))
    check(replies)
    assert json.loads(await read_to_end(lifeline))["method"] == mcp.ENDED_METHOD
    await lifeline.aclose()
    await from_daemon.aclose()
    await still_serves(daemon)
    no_errors_logged(caplog)


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
async def test_mcp_through_the_pump(
    daemon: Daemon, project: Path, tmp_path: Path, stdin_kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """A pipe is handed off; a file is copied by the pump."""
    data = framed_ndjson([MCP[0], *BAD, MCP_LAST])
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(data)
    with requests.open("rb") as file:
        proc = await trio.lowlevel.open_process(
            pump_argv(daemon.socket_path, project),
            stdin=file if stdin_kind == "file" else subprocess.PIPE,
            stdout=subprocess.PIPE, env=os.environ | ENV,
        )  # fmt: skip
    assert proc.stdout is not None
    async with trio.open_nursery() as nursery:
        if proc.stdin is not None:
            stdin = proc.stdin

            async def send() -> None:
                await stdin.send_all(data)
                await stdin.aclose()

            nursery.start_soon(send)
        output = await read_to_end(proc.stdout)
    with trio.fail_after(30):
        assert await proc.wait() == 0
    await proc.stdout.aclose()
    check(replies_of(output))
    await still_serves(daemon)
    no_errors_logged(caplog)


@pytest.mark.parametrize(
    ("root", "kind"),
    [
        ("/tmp/a\x00b", "invalid_arguments"),
        ("/" + "a" * 5000, "invalid_arguments"),
        ("/nonexistent/" + "b" * 200, "file_not_found"),
        ("/proc/version/below-a-file", "file_not_found"),
    ],
)
async def test_roots_that_name_no_folder_get_a_clear_error(
    daemon: Daemon, root: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """On both dialects: the native session/open answers, and MCP's binding line makes
    its tool calls say why (before, a NUL in the root failed the connection's task)."""
    native = body({"id": "last", "method": "session/open", "params": {"root": root}})
    (reply,) = replies_of(await exchange(daemon, native + b"\n"))
    assert reply["error"]["code"] == -32000 and reply["error"]["data"]["kind"] == kind
    assert root not in reply["error"]["message"]
    lines = [
        body({"method": mcp.BIND_METHOD, "params": {"root": root}}),
        MCP[0],
        body({"id": "last", "method": "tools/call",
              "params": {"name": "git_command", "arguments": {"subcommand": "status"}}}),
    ]  # fmt: skip
    replies = replies_of(await exchange(daemon, framed_ndjson(lines)))
    (call,) = [r for r in replies if r["id"] == "last"]
    assert call["result"]["isError"] and kind in call["result"]["content"][0]["text"]
    await still_serves(daemon)
    no_errors_logged(caplog)


async def test_a_failing_connection_closes_alone(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug that raises out of a connection's task (here, in the MCP machine) is logged and
    closes that connection; another connection open meanwhile goes on being served."""
    receive = mcp.McpMachine.receive

    def broken(self: mcp.McpMachine, frame: bytes) -> mcp.Event | None:
        if b"boom" in frame:
            raise RuntimeError("a bug in the machine")
        return receive(self, frame)

    monkeypatch.setattr(mcp.McpMachine, "receive", broken)
    other = await trio.open_unix_socket(str(daemon.socket_path))
    async with other:
        await other.send_all(body({"id": 1, "method": "daemon/status"}) + b"\n")
        buffer = bytearray()
        assert (await read_line(other, buffer))["result"]["connections"] >= 1
        boom = body({"id": 2, "method": "boom"})
        out = await exchange(daemon, framed_ndjson([MCP[0], boom, MCP_LAST]))
        assert [r["id"] for r in replies_of(out)] == [1]  # closed at the failing line
        assert any("closing it" in r.getMessage() for r in caplog.records)
        await other.send_all(body({"id": 3, "method": "daemon/status"}) + b"\n")
        assert (await read_line(other, buffer))["id"] == 3
    await still_serves(daemon)
