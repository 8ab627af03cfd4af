"""The editor's workspace folders changing (`workspace/didChangeWorkspaceFolders`), with a
scripted server: an added folder becomes a session holding the editor's buffers there; a
removed one lets go of them and of the editor; a session closed while the editor is
connected is opened again with the editor's buffers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config
from codeward.daemon.server import Daemon
from codeward.daemon.session import Session
from codeward.protocol.framing import Framing
from tests.conftest import OpenClient
from tests.lsp_support import fake_config, fake_server, for_daemon
from tests.test_daemon_limits import Wire
from tests.test_editor_notices import hover, notification, opened, request, until


@pytest.fixture
def daemon_config() -> Config:
    return for_daemon(fake_config({"fake": fake_server("ok")}))


async def initialized(daemon: Daemon, root: Path, capabilities: Any) -> tuple[Wire, Any]:
    wire = await Wire.open(daemon.socket_path, Framing.CONTENT_LENGTH)
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities}
    await wire.send({"jsonrpc": "2.0", "method": "codeward/lsp"}, request(1, "initialize", params))
    reply = await wire.next()
    await wire.send(notification("initialized", {}))
    return wire, reply["result"]["capabilities"]["workspace"]


def folders(added: list[Path] = [], removed: list[Path] = []) -> dict[str, Any]:  # noqa: B006
    def named(paths: list[Path]) -> list[dict[str, str]]:
        return [{"uri": p.as_uri(), "name": p.name} for p in paths]

    event = {"added": named(added), "removed": named(removed)}
    return notification("workspace/didChangeWorkspaceFolders", {"event": event})


def session_of(daemon: Daemon, root: Path) -> Session:
    (session,) = [s for s in daemon.sessions.sessions.values() if s.root == root]
    return session


async def answer(wire: Wire, msg_id: int, path: Path) -> Any:
    await wire.send(hover(msg_id, path))
    return (await until(wire, lambda m: m.get("id") == msg_id))[-1]


async def test_added_folders_become_sessions_and_removed_ones_let_go(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    b = other / "b.fake"
    b.write_text("beta\n")
    _, told = await initialized(daemon, project, {})
    assert told == {"workspaceFolders": {"supported": True, "changeNotifications": False}}
    wire, told = await initialized(daemon, project, {"workspace": {"workspaceFolders": True}})
    assert told == {"workspaceFolders": {"supported": True, "changeNotifications": True}}
    with trio.fail_after(30):
        await opened(wire, b)  # outside its one root: no server sees it
        assert (await answer(wire, 2, b))["result"] is None
        await wire.send(folders(added=[other]))
        assert (await answer(wire, 3, b))["result"]["contents"]["value"] == "hover"
        session = session_of(daemon, other)
        buffer = session.lsp.editor_buffer(b)
        assert buffer is not None and buffer.text == "beta\n" and buffer.version == 1
        conn_id = next(iter(session.clients))
        await wire.send(folders(removed=[other]), folders(added=[tmp_path / "gone"]))
        said = await until(wire, lambda m: m.get("method") == "window/logMessage")
        assert (
            said[-1]["params"]["type"] == 1
            and "gone was not added" in said[-1]["params"]["message"]
        )
        assert (await answer(wire, 4, b))["result"] is None  # outside again
    assert session.lsp.editor_buffer(b) is None  # the servers see the disk again
    assert conn_id not in session.clients
    wire.close()


async def test_a_session_closed_while_an_editor_is_connected_gets_its_buffers_again(
    daemon: Daemon, project: Path, open_client: OpenClient
) -> None:
    a = project / "a.fake"
    a.write_text("alpha\n")
    wire, _ = await initialized(daemon, project, {})
    doc = {"uri": a.as_uri(), "languageId": "fake", "version": 3, "text": "unsaved\n"}
    with trio.fail_after(30):
        await wire.send(notification("textDocument/didOpen", {"textDocument": doc}))
        assert (await answer(wire, 2, a))["result"]["contents"]["value"] == "hover"
        closed = session_of(daemon, project)
        assert closed.lsp.editor_buffer(a) is not None
        agent = await open_client(project)
        await agent.call("session/close", {"terminate": True})  # `codeward sessions close`
        await closed.stopped.wait()
        # (the editor's next request waits for the session's reopening to end)
        assert (await answer(wire, 3, a))["result"]["contents"]["value"] == "hover"
    reopened = session_of(daemon, project)
    assert reopened is not closed
    buffer = reopened.lsp.editor_buffer(a)
    assert buffer is not None and (buffer.text, buffer.version) == ("unsaved\n", 3)
    wire.close()
