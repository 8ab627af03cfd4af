"""The editor dialect with a scripted server (`chatty`): the servers' messages for the people
reach the editor whose request caused them, else every editor of the root, never an agent;
hover contents in the format the editor takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config
from codeward.daemon.server import Daemon
from codeward.protocol.framing import Framing
from tests.conftest import OpenClient
from tests.lsp_support import fake_config, fake_server, for_daemon
from tests.test_daemon_limits import Wire

MARKDOWN = "```python\ndef f(x: int) -> str\n```\n---\nSee [the **docs**](http://x.org) `f`."


@pytest.fixture
def daemon_config() -> Config:
    return for_daemon(fake_config({"fake": fake_server("chatty")}))


def request(msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def editor(daemon: Daemon, root: Path, capabilities: dict[str, Any] | None = None) -> Wire:
    wire = await Wire.open(daemon.socket_path, Framing.CONTENT_LENGTH)
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}
    await wire.send({"jsonrpc": "2.0", "method": "codeward/lsp"}, request(1, "initialize", params))
    reply = await wire.next()
    assert reply["id"] == 1, reply
    await wire.send(notification("initialized", {}))
    return wire


async def until(wire: Wire, done: Any) -> list[Any]:
    """Every message up to and including the first `done(message)` says is the last."""
    seen: list[Any] = []
    while not seen or not done(seen[-1]):
        seen.append(await wire.next())
    return seen


def shown(messages: list[Any]) -> list[tuple[str, int, str]]:
    return [(m["method"], m["params"]["type"], m["params"]["message"]) for m in messages
            if m.get("method") in ("window/showMessage", "window/logMessage")]  # fmt: skip


def hover(msg_id: int, path: Path) -> dict[str, Any]:
    at = {"textDocument": {"uri": path.as_uri()}, "position": {"line": 0, "character": 0}}
    return request(msg_id, "textDocument/hover", at)


async def opened(wire: Wire, path: Path) -> None:
    doc = {"uri": path.as_uri(), "languageId": "fake", "version": 1, "text": path.read_text()}
    await wire.send(notification("textDocument/didOpen", {"textDocument": doc}))


async def test_a_servers_messages_reach_the_editor_that_asked_else_every_editor(
    daemon: Daemon, project: Path, open_client: OpenClient
) -> None:
    a, b = project / "a.fake", project / "b.fake"
    a.write_text("alpha\n")
    b.write_text("beta\n")
    agent = await open_client(project, capabilities={"progress": True})
    first, second = await editor(daemon, project), await editor(daemon, project)
    with trio.fail_after(30):
        await opened(first, a)  # no request in flight: every editor of the root is told
        for wire in (first, second):
            said = await until(wire, lambda m: shown([m]) != [])
            assert shown(said) == [("window/showMessage", 3, "fake: opened a.fake")]
        await first.send(hover(2, a))
        said = await until(first, lambda m: m.get("id") == 2)
        assert shown(said) == [
            ("window/showMessage", 2, "fake: hover in a.fake"),
            ("window/logMessage", 4, "fake: hover in a.fake"),
            ("window/showMessage", 1, "fake: hover in a.fake"),  # (a showMessageRequest)
        ]
        await second.send(hover(2, b))
        said = await until(second, lambda m: m.get("id") == 2)
        assert ("window/showMessage", 2, "fake: hover in b.fake") in shown(said)
        assert not [s for s in shown(said) if "a.fake" in s[2]]  # the first's stayed its own
        # an agent's hover: no editor asked, so every editor is told; the agent is not
        result = await agent.tool("get_hover_info", path="a.fake", line=1, character=1)
        assert result["status"] == "found"
        for wire in (first, second):
            said = await until(wire, lambda m: m.get("method") == "window/showMessage")
            assert shown(said) == [("window/showMessage", 2, "fake: hover in a.fake")]
    assert not [n for n in agent.notifications if "notice" in str(n)]
    first.close()
    second.close()


async def test_hover_comes_in_the_markup_the_editor_takes(daemon: Daemon, project: Path) -> None:
    (project / "a.fake").write_text("alpha\n")
    plain = await editor(
        daemon, project, {"textDocument": {"hover": {"contentFormat": ["plaintext"]}}}
    )
    rich = await editor(
        daemon, project, {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}
    )
    with trio.fail_after(30):
        for msg_id, wire in enumerate((plain, rich), 2):
            await wire.send(hover(msg_id, project / "a.fake"))
        (told,) = [m for m in await until(plain, lambda m: "id" in m) if "id" in m]
        (rich_told,) = [m for m in await until(rich, lambda m: "id" in m) if "id" in m]
    assert told["result"]["contents"] == {
        "kind": "plaintext",
        "value": "def f(x: int) -> str\n\nSee [the **docs**](http://x.org) `f`.",
    }
    assert rich_told["result"]["contents"] == {"kind": "markdown", "value": MARKDOWN}
    plain.close()
    rich.close()
