"""The editor dialect on the daemon's own socket (the pump's copy mode), in process: the
backpressure an editor that stops reading meets, and the end after `exit`; the pump's
first bytes and its lean imports."""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import codeward
from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.server import Daemon
from codeward.protocol.framing import Framing
from codeward.protocol.lsp import LspMachine
from tests.test_cli_imports import forbidden, imported_modules
from tests.test_cli_mcp import LAUNCH, READ_TIMEOUT, launch_argv
from tests.test_daemon_limits import Wire, connection_of

QUEUE_LIMIT = 64 * 1024
IN_FLIGHT = 8
LONG = "x" * 4000  # an unknown method's error names it: a reply of ~4 KB


@pytest.fixture
def daemon_config() -> Config:
    return Config(
        daemon=DaemonConfig(max_queued_reply_bytes=QUEUE_LIMIT, max_requests_in_flight=IN_FLIGHT)
    )


def request(msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


async def editor(daemon: Daemon, root: Path) -> Wire:
    """An editor on the socket: the binding frame, then initialize (a root of no language:
    no server starts)."""
    wire = await Wire.open(daemon.socket_path, Framing.CONTENT_LENGTH)
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    await wire.send({"jsonrpc": "2.0", "method": "codeward/lsp"}, request(1, "initialize", params))
    reply = await wire.next()
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "codeward"
    return wire


async def test_an_editor_that_stops_reading_is_held(daemon: Daemon, project: Path) -> None:
    wire = await editor(daemon, project)
    conn = await connection_of(daemon)
    async with trio.open_nursery() as nursery:  # (the sending blocks once the daemon pauses)
        nursery.start_soon(wire.send, *(request(i, LONG) for i in range(2, 402)))  # ~1.6 MB
        await trio.testing.wait_all_tasks_blocked()
        assert conn.paused  # it stopped reading this editor's requests
        assert 0 < conn.outbox.queued_bytes <= QUEUE_LIMIT + 8 * 1024
        with trio.fail_after(60):
            replies = [await wire.next() for _ in range(400)]
    assert [r["id"] for r in replies] == list(range(2, 402))
    assert all(r["error"]["code"] == -32601 for r in replies)
    await trio.testing.wait_all_tasks_blocked()
    assert not conn.paused and conn.outbox.queued_bytes == 0
    wire.close()


async def test_exit_ends_the_connection_and_its_session_lets_go(
    daemon: Daemon, project: Path
) -> None:
    wire = await editor(daemon, project)
    conn = await connection_of(daemon)
    (session,) = daemon.sessions.sessions.values()
    assert conn.id in session.clients
    await wire.send(request(2, "shutdown"), {"jsonrpc": "2.0", "method": "exit"},
                    request(3, "textDocument/hover"))  # fmt: skip
    assert (await wire.next())["id"] == 2
    assert await wire.rest() == []  # nothing after exit; the daemon closed
    with trio.fail_after(10):
        await conn.done.wait()
    assert conn.id not in session.clients


async def test_the_next_editors_open_the_dialect_with_no_thread(
    daemon: Daemon, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dialect's modules are imported in a worker thread, once: the next editors'
    connections open it with no hop to a thread (their `initialize` waits on it)."""
    first = await editor(daemon, project)
    hops: list[object] = []
    in_thread = trio.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await in_thread(fn, *args, **kwargs)

    monkeypatch.setattr(trio.to_thread, "run_sync", counted)
    second = await editor(daemon, project)
    assert importlib.import_module not in hops
    first.close()
    second.close()


def test_the_pump_loads_nothing_heavy_and_opens_the_dialect_first(tmp_path: Path) -> None:
    """`codeward lsp` with stdin not a pipe (it copies): its first bytes are the binding
    frame, and it imported no trio, no msgspec, nothing of the full CLI."""
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        listener.settimeout(READ_TIMEOUT)
        proc = subprocess.Popen(
            launch_argv("--socket", str(path), "lsp"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=os.environ | {"PYTHONPROFILEIMPORTTIME": "1"},
        )  # fmt: skip
        conn, _ = listener.accept()
        with conn:
            first = conn.makefile("rb").read()  # up to the end the pump sends once stdin ends
        _, stderr = proc.communicate(timeout=READ_TIMEOUT)
    assert proc.returncode == 0
    body = b'{"jsonrpc":"2.0","method":"codeward/lsp"}'
    assert first == b"Content-Length: %d\r\n\r\n" % len(body) + body
    names = imported_modules(stderr.decode())
    assert "codeward.client.lsp_pump" in names
    assert forbidden(names) == set()
    heavy = {"codeward.client.cli", "codeward.client.connection", "argparse", "json", "subprocess"}
    assert names & heavy == set()


# What `codeward lsp` imports beyond the interpreter's own start when it hands stdin and
# stdout over (as every editor starts it): each module here is paid by every editor's start,
# before its `initialize` is answered.
PUMP_MODULES = {
    "_socket", "codeward", "codeward.client", "codeward.client.entry",
    "codeward.client.lsp_pump", "codeward.client.pump", "codeward.protocol",
    "codeward.protocol.socket_path",
}  # fmt: skip


def test_the_pump_handing_over_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    """`codeward lsp` with pipes (it hands them to the daemon): beyond what any Python start
    imports (`site` and its modules), only its own modules and `_socket` (no threading: it
    copies nothing; no pathlib, collections, typing or `__future__`). Compared without
    running `site` (`-S`): a venv's .pth files import modules that would hide one the pump
    added."""
    source = str(Path(codeward.__file__).parents[1])
    env = os.environ | {"PYTHONPATH": source, "PYTHONPROFILEIMPORTTIME": "1"}
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        listener.settimeout(READ_TIMEOUT)
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCH, "--socket", str(path), "lsp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(READ_TIMEOUT)
            first, fds, _, _ = socket.recv_fds(conn, 65536, 2)
            for fd in fds:
                os.close(fd)
            machine = LspMachine()
            conn.sendall(frame(machine.handoff_message(0)) + frame(machine.ended_message(0)))
        _, stderr = proc.communicate(timeout=READ_TIMEOUT)
    assert b'"method":"codeward/lsp-stdio"' in first and len(fds) == 2
    assert proc.returncode == 0  # the ended frame's code
    bare = subprocess.run(
        [sys.executable, "-S", "-c", "import site"],  # (its modules; -S: not run)
        capture_output=True, text=True, env=env, timeout=READ_TIMEOUT, check=True,
    )  # fmt: skip
    added = imported_modules(stderr.decode()) - imported_modules(bare.stderr)
    assert added == PUMP_MODULES


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
