"""The editor's requests relayed with no task of their own (`editor.relay`), in process, with
basedpyright and the scripted server: no task started for a hover or a definition about an
open buffer, the waiting way for what the lean one cannot do; `$/cancelRequest` reaching
the server under its own id; a server that crashes or says nothing answered as the waiting
way answers, nothing left pending; an editor that stops reading held by its backpressure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.connection import Connection
from codeward.daemon.server import Daemon
from codeward.daemon.session import Session
from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import Framing
from tests.editors import LIB, MAIN
from tests.lsp_support import fake_config, fake_server, needs
from tests.test_daemon_limits import Wire, connection_of
from tests.test_editor_notices import editor, hover, notification, opened, request

QUEUE_LIMIT = 64 * 1024
IN_FLIGHT = 8
MODES = {  # the scripted server's mode, by test
    "test_a_hover_about_an_open_buffer_starts_no_task": "ok",
    "test_the_editors_cancellation_reaches_the_server_under_its_id": "silent-hover",
    "test_a_relayed_request_that_gets_no_answer_times_out": "silent-hover",
    "test_an_editor_leaving_gives_up_its_relayed_requests": "silent-hover",
    "test_a_server_that_crashes_mid_request_answers_it_and_nothing_stays_pending": (
        "crash-on-hover"
    ),
    "test_an_editor_that_stops_reading_holds_its_relayed_requests": "huge",
    "test_a_large_answer_that_is_not_json_is_an_error_to_the_editor": "huge-broken",
}
NO_TIMEOUT = {"test_an_editor_leaving_gives_up_its_relayed_requests"}


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"


@pytest.fixture
def daemon_config(request: pytest.FixtureRequest, log: Path) -> Config:
    if request.node.name not in MODES:  # basedpyright's
        return Config(daemon=DaemonConfig(idle_timeout=600.0))
    # (a hover times out in 1 s; one given up before that gets no timeout to end it)
    timeout = 600.0 if request.node.name in NO_TIMEOUT else 1.0
    config = fake_config({"fake": fake_server(MODES[request.node.name], log)},
                         method_timeouts={"textDocument/hover": timeout})  # fmt: skip
    limits = DaemonConfig(idle_timeout=600.0, max_queued_reply_bytes=QUEUE_LIMIT,
                          max_requests_in_flight=IN_FLIGHT)  # fmt: skip
    return Config(daemon=limits, lsp=config.lsp, servers=config.servers,
                  languages=config.languages)  # fmt: skip


class Spawned:
    """A trio instrument: the request tasks (the waiting way's) started while it is on."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("EditorDialect._run"):
            self.names.append(task.name)


def received(log: Path, method: str) -> list[dict[str, Any]]:
    """The messages of `method` the scripted server read, in order."""
    if not log.exists():
        return []
    return [m for m in map(json.loads, log.read_text().splitlines()) if m.get("method") == method]


async def until(check: Any) -> Any:
    """`check()` once it is true (a file another process writes, a server that starts)."""
    with trio.fail_after(20):
        while not (found := check()):
            await trio.sleep(0.01)
    return found


def session_of(daemon: Daemon) -> Session:
    (session,) = daemon.sessions.sessions.values()
    return session


async def held(daemon: Daemon, path: Path) -> None:
    """Until the server has the editor's buffer of `path` open (the lean way applies)."""
    service = session_of(daemon).lsp
    await until(lambda: service._held_document(path, "textDocument/hover")[0] is not None)


async def open_editor(daemon: Daemon, project: Path, name: str = "a.fake") -> tuple[Any, Path]:
    path = project / name
    path.write_text("alpha\nbeta\n")
    wire = await editor(daemon, project)
    await opened(wire, path)
    await held(daemon, path)
    return wire, path


async def answer(wire: Any) -> Any:
    """The next reply, past the notifications (diagnostics) before it."""
    while "id" not in (message := await wire.next()):
        pass
    return message


def nothing_pending(conn: Connection, daemon: Daemon, *, gate: bool = True) -> None:
    """No relayed request in flight, none counted; with `gate`, none holds the gate (with
    basedpyright the diagnostics' pulls may hold it at any time)."""
    assert conn.editor is not None and conn.editor.relays.calls == {}
    assert not conn.busy  # (its count of requests in flight: back to none)
    assert not gate or session_of(daemon).lsp.gate.readers == 0


async def test_a_hover_about_an_open_buffer_starts_no_task(daemon: Daemon, project: Path) -> None:
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    spawned = Spawned()
    trio.lowlevel.add_instrument(spawned)
    try:
        await wire.send(hover(2, path))
        relayed = await answer(wire)
    finally:
        trio.lowlevel.remove_instrument(spawned)
    at = {"line": 0, "character": 0}
    assert relayed == {"jsonrpc": "2.0", "id": 2, "result": {
        "contents": {"kind": "plaintext", "value": "hover"}, "range": {"start": at, "end": at}
    }}  # fmt: skip
    assert spawned.names == []
    # a progress token: the waiting way (it rewrites the token), in a task, the same answer
    tokened = hover(3, path)
    tokened["params"]["workDoneToken"] = "t1"
    trio.lowlevel.add_instrument(spawned)
    try:
        await wire.send(tokened)
        waited = await answer(wire)
    finally:
        trio.lowlevel.remove_instrument(spawned)
    assert waited["result"] == relayed["result"]
    assert spawned.names
    # params it cannot read: the waiting way answers them
    await wire.send(request(4, "textDocument/hover", {"position": at}))
    assert (await answer(wire))["error"]["code"] == -32602  # InvalidParams
    nothing_pending(conn, daemon)
    wire.close()


async def test_the_editors_cancellation_reaches_the_server_under_its_id(
    daemon: Daemon, project: Path, log: Path
) -> None:
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    await wire.send(hover(7, path))
    (asked,) = await until(lambda: received(log, "textDocument/hover"))
    assert conn.editor is not None and list(conn.editor.relays.calls) == [7]  # relayed
    await wire.send(notification("$/cancelRequest", {"id": 7}))
    reply = await answer(wire)
    assert reply["id"] == 7 and reply["error"]["code"] == -32800
    assert reply["error"]["data"]["kind"] == "cancelled"
    (cancel,) = await until(lambda: received(log, "$/cancelRequest"))
    assert cancel["params"] == {"id": asked["id"]}  # the server's id, not the editor's
    nothing_pending(conn, daemon)
    wire.close()


async def test_an_editor_leaving_gives_up_its_relayed_requests(
    daemon: Daemon, project: Path, log: Path
) -> None:
    """An editor that disconnects with a relayed request in flight: the server is told to
    cancel it under its own id, and nothing of it stays behind (calls, count, gate)."""
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    await wire.send(hover(9, path))
    (asked,) = await until(lambda: received(log, "textDocument/hover"))
    assert conn.editor is not None and list(conn.editor.relays.calls) == [9]
    wire.close()
    (cancel,) = await until(lambda: received(log, "$/cancelRequest"))
    assert cancel["params"] == {"id": asked["id"]}
    await until(lambda: conn.editor is not None and not conn.editor.relays.calls)
    nothing_pending(conn, daemon)


async def test_a_relayed_request_that_gets_no_answer_times_out(
    daemon: Daemon, project: Path, log: Path
) -> None:
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    await wire.send(hover(4, path))
    await until(lambda: received(log, "textDocument/hover"))
    assert conn.editor is not None and list(conn.editor.relays.calls) == [4]
    reply = await answer(wire)  # (the hover's timeout: 1 s)
    assert reply["id"] == 4 and reply["error"]["data"]["kind"] == "timeout"
    assert "did not answer textDocument/hover within 1" in reply["error"]["message"]
    (asked,) = received(log, "textDocument/hover")
    (cancel,) = await until(lambda: received(log, "$/cancelRequest"))
    assert cancel["params"] == {"id": asked["id"]}
    nothing_pending(conn, daemon)
    wire.close()


async def test_a_server_that_crashes_mid_request_answers_it_and_nothing_stays_pending(
    daemon: Daemon, project: Path, log: Path
) -> None:
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    await wire.send(hover(5, path))
    await until(lambda: received(log, "textDocument/hover"))
    reply = await answer(wire)
    assert reply["id"] == 5 and reply["error"]["code"] == -32803  # RequestFailed
    assert reply["error"]["data"]["kind"] == "lsp_error"
    assert "stopped during textDocument/hover" in reply["error"]["message"]
    await trio.testing.wait_all_tasks_blocked()  # (the request's task ends after its answer)
    nothing_pending(conn, daemon)
    # the server restarts with the buffer: the next hover is relayed again (and crashes it)
    await held(daemon, path)
    await wire.send(hover(6, path))
    assert (await answer(wire))["error"]["data"]["kind"] == "lsp_error"
    assert len(received(log, "textDocument/hover")) == 2
    await trio.testing.wait_all_tasks_blocked()
    nothing_pending(conn, daemon)
    wire.close()


async def test_an_editor_that_stops_reading_holds_its_relayed_requests(
    daemon: Daemon, project: Path, log: Path
) -> None:
    """Each answer is 2 MB: the editor reads none, its requests wait in its socket."""
    wire, path = await open_editor(daemon, project)
    conn = await connection_of(daemon)
    sent = 40
    async with trio.open_nursery() as nursery:  # (the sending blocks once the daemon pauses)
        nursery.start_soon(wire.send, *(hover(i, path) for i in range(2, 2 + sent)))
        # held by its requests in flight, then by the answers it does not read
        await until(lambda: conn.paused and conn.outbox.queued_bytes > QUEUE_LIMIT)
        assert len(received(log, "textDocument/hover")) <= IN_FLIGHT
        with trio.fail_after(60):
            replies = [await answer(wire) for _ in range(sent)]
    assert sorted(r["id"] for r in replies) == list(range(2, 2 + sent))
    assert all(len(r["result"]["contents"]) == 2 * 1024 * 1024 for r in replies)
    await trio.testing.wait_all_tasks_blocked()
    assert not conn.paused
    nothing_pending(conn, daemon)
    wire.close()


async def test_a_large_answer_that_is_not_json_is_an_error_to_the_editor(
    daemon: Daemon, project: Path
) -> None:
    """A large answer is relayed as the server wrote it, unparsed, unless it must be
    changed for the editor (here a hover's markup made plain text for an editor that reads
    no markdown): then one that is not JSON is an error reply that says so (not the editor's
    params blamed), and the relay goes on."""
    path = project / "a.fake"
    path.write_text("alpha\nbeta\n")
    plain = {"textDocument": {"hover": {"contentFormat": ["plaintext"]}}}
    wire = await editor(daemon, project, plain)
    await opened(wire, path)
    await held(daemon, path)
    conn = await connection_of(daemon)
    for msg_id in (2, 3):
        await wire.send(hover(msg_id, path))
        with trio.fail_after(10):
            reply = await answer(wire)
        assert reply["id"] == msg_id and reply["error"]["code"] == ErrorCode.REQUEST_FAILED, reply
        assert "answered with what is not JSON" in reply["error"]["message"], reply
    await trio.testing.wait_all_tasks_blocked()
    nothing_pending(conn, daemon)
    wire.close()


async def spawning(wire: Any, *messages: Any) -> tuple[Any, list[str]]:
    """The reply to `messages` (sent in one write), and the request tasks the daemon
    started meanwhile."""
    spawned = Spawned()
    trio.lowlevel.add_instrument(spawned)
    try:
        await wire.send(*messages)
        return await answer(wire), spawned.names
    finally:
        trio.lowlevel.remove_instrument(spawned)


@needs("basedpyright")
async def test_basedpyright_answers_relayed_and_the_waiting_way_alike(
    daemon: Daemon, project: Path
) -> None:
    (project / "lib.py").write_text(LIB)
    main = project / "main.py"
    main.write_text(MAIN)
    wire = await Wire.open(daemon.socket_path, Framing.CONTENT_LENGTH)
    params = {"processId": None, "rootUri": project.as_uri(), "capabilities": {}}
    await wire.send({"jsonrpc": "2.0", "method": "codeward/lsp"}, request(1, "initialize", params))
    with trio.fail_after(60):
        assert "capabilities" in (await answer(wire))["result"]
    await wire.send(notification("initialized", {}))
    doc = {"uri": main.as_uri(), "languageId": "python", "version": 1, "text": MAIN}
    await wire.send(notification("textDocument/didOpen", {"textDocument": doc}))
    await held(daemon, main)
    at = {"textDocument": {"uri": main.as_uri()}, "position": {"line": 2, "character": 14}}
    with trio.fail_after(60):
        hovered, spawned = await spawning(wire, request(2, "textDocument/hover", at))
        assert "compute" in hovered["result"]["contents"]["value"] and spawned == []
        found, spawned = await spawning(wire, request(3, "textDocument/definition", at))
        (target,) = found["result"]
        assert target["uri"] == (project / "lib.py").as_uri() and spawned == []
        # a change and a hover in one write: the change not handed over yet, the waiting way
        top = {"line": 0, "character": 0}
        edit = {"range": {"start": top, "end": top}, "text": "\n"}
        change = {"textDocument": {"uri": main.as_uri(), "version": 2}, "contentChanges": [edit]}
        moved = {**at, "position": {"line": 3, "character": 14}}
        again, spawned = await spawning(wire, notification("textDocument/didChange", change),
                                        request(4, "textDocument/hover", moved))  # fmt: skip
    assert again["result"]["contents"] == hovered["result"]["contents"]  # on the new text
    assert spawned
    conn = await connection_of(daemon)
    nothing_pending(conn, daemon, gate=False)
    wire.close()
