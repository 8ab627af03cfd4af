"""The handoff of `codeward mcp`: its stdin and stdout passed to the daemon (SCM_RIGHTS),
which then reads the host's requests and writes its answers itself; descriptors that come
with anything else are closed; the pump copies when it cannot hand off (a file for stdin, a
daemon that refuses), and a pump that dies ends its session."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.handoff import STDOUT_PIPE_BYTES
from codeward.daemon.server import Daemon
from codeward.protocol import mcp as mcp_protocol
from tests.test_mcp import ENV, pump_argv, until

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "handoff", "version": "1"}}  # fmt: skip


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def handoff(root: Path) -> bytes:
    return line({"id": 0, "method": mcp_protocol.HANDOFF_METHOD, "params": {"root": str(root)}})


def rights(*fds: int) -> list[tuple[int, int, bytes]]:
    data = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, data)]


def open_fds() -> set[str]:
    """This process's open pipes, sockets and files of the test (the daemon runs in it)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            continue  # the directory listing's own descriptor
        if target.startswith(("pipe:", "socket:")) or target.endswith("plain.txt"):
            found.add(f"{fd} {target}")
    return found


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> dict[str, Any]:
    with trio.fail_after(30):
        while b"\n" not in buffer:
            data = await stream.receive_some(65536)
            assert data, "closed before a whole line"
            buffer += data
    first, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(first)


async def read_to_end(stream: trio.abc.ReceiveStream) -> bytes:
    data = b""
    with trio.fail_after(30):
        while chunk := await stream.receive_some(65536):
            data += chunk
    return data


async def test_the_daemon_serves_the_passed_stdin_and_stdout(daemon: Daemon, project: Path) -> None:
    before = open_fds()
    stdin, host_in = os.pipe()  # the daemon reads `stdin`, the host writes `host_in`
    host_out, stdout = os.pipe()  # the daemon writes `stdout`, the host reads `host_out`
    sock = trio.socket.socket(socket.AF_UNIX)
    await sock.connect(str(daemon.socket_path))
    ours = open_fds()
    await sock.sendmsg([handoff(project)], rights(stdin, stdout))
    lifeline = trio.SocketStream(sock)
    buffer = bytearray()
    assert await read_line(lifeline, buffer) == {"jsonrpc": "2.0", "id": 0, "result": {}}
    taken = [int(entry.split()[0]) for entry in open_fds() - ours if "pipe:" in entry]
    assert len(taken) == 2  # the daemon's copies, which its language servers do not inherit
    assert not any(os.get_inheritable(fd) for fd in taken)
    # the stdout pipe holds a large answer whole (unless the system allows no such size)
    if int(Path("/proc/sys/fs/pipe-max-size").read_text()) >= STDOUT_PIPE_BYTES:
        assert fcntl.fcntl(host_out, fcntl.F_GETPIPE_SZ) == STDOUT_PIPE_BYTES
    os.close(stdin)
    os.close(stdout)
    to_daemon, from_daemon = trio.lowlevel.FdStream(host_in), trio.lowlevel.FdStream(host_out)
    await to_daemon.send_all(line({"id": 1, "method": "initialize", "params": INIT}))
    out = bytearray()
    assert (await read_line(from_daemon, out))["result"]["serverInfo"]["name"] == "codeward"
    await to_daemon.send_all(line({"id": 2, "method": "tools/call", "params": {
        "name": "git_command", "arguments": {"subcommand": "status"}}}))  # fmt: skip
    status = await read_line(from_daemon, out)
    assert status["result"]["isError"] is True  # not a git repository: said on stdout
    assert "[" in status["result"]["content"][0]["text"]
    await to_daemon.aclose()  # the host ends the session
    assert await read_to_end(from_daemon) == b""
    ended = json.loads(await read_to_end(lifeline))
    assert ended == {"jsonrpc": "2.0", "method": mcp_protocol.ENDED_METHOD,
                     "params": {"by": "host"}}  # fmt: skip
    await lifeline.aclose()
    await from_daemon.aclose()
    await until(lambda: not daemon.connections)
    assert open_fds() == before  # every descriptor the daemon took is closed


async def test_what_the_pump_read_first_is_read_first_and_its_answer_not_repeated(
    daemon: Daemon, project: Path
) -> None:
    """A handoff with `pending` (the host's `initialize` and half of its next line, which
    the pump read while the daemon started) and `answered` (that `initialize`'s id): the
    daemon reads those bytes before stdin, sends no second answer to `initialize`, and the
    session is initialized (`tools/list` answers)."""
    stdin, host_in = os.pipe()
    host_out, stdout = os.pipe()
    sock = trio.socket.socket(socket.AF_UNIX)
    await sock.connect(str(daemon.socket_path))
    ping = line({"id": 2, "method": "ping"})
    read = line({"id": "one", "method": "initialize", "params": INIT}) + ping[:10]
    params = {"root": str(project), "pending": base64.b64encode(read).decode(),
              "answered": "one"}  # fmt: skip
    first = line({"id": 0, "method": mcp_protocol.HANDOFF_METHOD, "params": params})
    await sock.sendmsg([first], rights(stdin, stdout))
    lifeline = trio.SocketStream(sock)
    assert (await read_line(lifeline, bytearray()))["result"] == {}
    os.close(stdin)
    os.close(stdout)
    to_daemon, from_daemon = trio.lowlevel.FdStream(host_in), trio.lowlevel.FdStream(host_out)
    await to_daemon.send_all(ping[10:] + line({"id": 3, "method": "tools/list"}))
    out = bytearray()
    assert await read_line(from_daemon, out) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    tools = await read_line(from_daemon, out)
    assert tools["id"] == 3 and tools["result"]["tools"]
    await to_daemon.send_all(line({"id": 4, "method": "initialize", "params": INIT}))
    again = await read_line(from_daemon, out)  # a later one is the daemon's to answer
    assert again["id"] == 4 and again["result"]["serverInfo"]["name"] == "codeward"
    await to_daemon.aclose()
    assert await read_to_end(from_daemon) == b""
    await read_to_end(lifeline)
    await lifeline.aclose()
    await from_daemon.aclose()
    await until(lambda: not daemon.connections)


async def test_a_handoff_whose_pending_bytes_are_not_base64_is_refused(
    daemon: Daemon, project: Path
) -> None:
    read_end, write_end = os.pipe()
    try:
        params = {"root": str(project), "pending": "not base64!"}
        first = line({"id": 0, "method": mcp_protocol.HANDOFF_METHOD, "params": params})
        answer = await refused(daemon, first, read_end, write_end)
        assert answer["id"] == 0 and answer["error"]["code"] == -32602
        assert "base64" in answer["error"]["message"]
    finally:
        os.close(read_end)
        os.close(write_end)
    await until(lambda: not daemon.connections)


async def refused(daemon: Daemon, first: bytes, *fds: int) -> dict[str, Any]:
    """The daemon's answer to a first line that passes `fds`."""
    sock = trio.socket.socket(socket.AF_UNIX)
    await sock.connect(str(daemon.socket_path))
    await sock.sendmsg([first], rights(*fds) if fds else [])
    stream = trio.SocketStream(sock)
    answer = await read_line(stream, bytearray())
    await stream.aclose()
    return answer


async def test_descriptors_that_no_handoff_takes_are_closed(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    before = open_fds()
    read_end, write_end = os.pipe()
    plain = os.open(tmp_path / "plain.txt", os.O_CREAT | os.O_RDWR)
    try:
        for fds in [(), (read_end,), (plain, write_end), (read_end, write_end, read_end)]:
            answer = await refused(daemon, handoff(project), *fds)
            assert answer["id"] == 0 and answer["error"]["code"] == -32600, fds
            assert "two pipes or sockets" in answer["error"]["message"]
        native = line({"id": 1, "method": "daemon/status", "params": {}})
        assert (await refused(daemon, native, read_end, write_end))["result"]["pid"]
        ping = line({"id": 1, "method": "initialize", "params": INIT})
        assert (await refused(daemon, ping, read_end, write_end))["result"]["serverInfo"]
    finally:
        for fd in (read_end, write_end, plain):
            os.close(fd)
    await until(lambda: not daemon.connections)
    assert open_fds() == before


async def test_the_pump_copies_nothing_and_its_death_ends_the_session(
    daemon: Daemon, project: Path
) -> None:
    proc = await trio.lowlevel.open_process(
        pump_argv(daemon.socket_path, project), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env=os.environ | ENV,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    await proc.stdin.send_all(line({"id": 1, "method": "initialize", "params": INIT}))
    assert (await read_line(proc.stdout, bytearray()))["result"]["serverInfo"]
    assert len(os.listdir(f"/proc/{proc.pid}/task")) == 1  # no copying thread: handed off
    (conn,) = daemon.connections.values()
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    await until(lambda: not daemon.connections)  # the host's pipe is still open
    assert conn.gone
    await proc.stdin.aclose()
    await proc.stdout.aclose()


async def test_the_pump_copies_when_stdin_is_a_file(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line({"id": 1, "method": "initialize", "params": INIT})
                         + line({"id": 2, "method": "ping"}))  # fmt: skip
    with requests.open("rb") as stdin:
        proc = await trio.lowlevel.open_process(
            pump_argv(daemon.socket_path, project), stdin=stdin, stdout=subprocess.PIPE,
            env=os.environ | ENV,
        )  # fmt: skip
    assert proc.stdout is not None
    output = await read_to_end(proc.stdout)
    with trio.fail_after(30):
        assert await proc.wait() == 0
    replies = [json.loads(part) for part in output.splitlines()]
    assert [r["id"] for r in replies] == [1, 2] and replies[1]["result"] == {}
    await proc.stdout.aclose()


def old_daemon(listener: socket.socket, seen: list[bytes]) -> None:
    """A daemon that knows no handoff: it refuses it, then echoes the lines after a binding."""
    first, _ = listener.accept()
    with first:
        data, ancillary, _, _ = first.recvmsg(65536, socket.CMSG_SPACE(8))
        for _level, _kind, payload in ancillary:  # close what came, as a daemon would
            for i in range(0, len(payload) - len(payload) % 4, 4):
                os.close(int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True))
        seen.append(data)
        first.sendall(line({"id": 0, "error": {"code": -32601, "message": "Method not found"}}))
    second, _ = listener.accept()
    with second, second.makefile("rb") as lines:
        for got in lines:
            seen.append(got)
            if len(seen) > 2:
                second.sendall(got)


async def test_the_pump_copies_when_the_daemon_refuses_the_handoff(
    tmp_path: Path, project: Path
) -> None:
    path = tmp_path / "old.sock"
    seen: list[bytes] = []
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        listener.settimeout(30)
        thread = threading.Thread(target=old_daemon, args=(listener, seen), daemon=True)
        thread.start()
        proc = await trio.lowlevel.open_process(
            pump_argv(path, project, "--no-autostart"), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=os.environ | ENV,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        ping = line({"id": 7, "method": "ping"})
        await proc.stdin.send_all(ping)
        assert await read_line(proc.stdout, bytearray()) == json.loads(ping)  # echoed
        await proc.stdin.aclose()
        with trio.fail_after(30):
            assert await proc.wait() == 0
        await trio.to_thread.run_sync(thread.join, 30)
    assert json.loads(seen[0])["method"] == mcp_protocol.HANDOFF_METHOD
    assert json.loads(seen[1])["method"] == mcp_protocol.BIND_METHOD
    await proc.stdout.aclose()
