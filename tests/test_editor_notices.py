"""The editor dialect with a scripted server (`chatty`): the servers' messages for the people
reach the editor whose request caused them, else every editor of the root, never an agent;
their questions are asked of the editor whose request caused them, else of the first editor
that declared `window.showMessage`, and the item chosen goes back to the server; hover
contents in the format the editor takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config
from codeward.daemon.editor import asking
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
        ]  # (and its question: see the test below)
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


LATER = {"title": "Later", "id": 7, "at": {"in": [1, "2"]}}  # (the fake's, as it sent it)
ACTIONS = [{"title": "OK"}, LATER]


def asked(messages: list[Any]) -> list[dict[str, Any]]:
    """The questions (`window/showMessageRequest`) among `messages`."""
    return [m for m in messages if m.get("method") == "window/showMessageRequest"]


def reply(question: dict[str, Any], result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": question["id"], "result": result}


def chose(message: dict[str, Any]) -> bool:
    return message.get("method") == "window/showMessage" and message["params"][
        "message"
    ].startswith("fake: chose")


async def question_of(wire: Wire, msg_id: int) -> dict[str, Any]:
    """The question the hover `msg_id` caused, once the hover is answered too (the server's
    next message then goes to every editor, as no request of theirs is in flight)."""
    seen: list[Any] = []
    while not asked(seen) or not [m for m in seen if m.get("id") == msg_id and "result" in m]:
        seen.append(await wire.next())
    (question,) = asked(seen)
    return question


async def test_a_servers_question_is_asked_of_the_editor_that_caused_it_and_its_choice_returned(
    daemon: Daemon, project: Path, open_client: OpenClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asking, "APPLY_TIMEOUT", 1.0)  # (the editor's time to answer)
    a = project / "a.fake"
    a.write_text("alpha\n")
    agent = await open_client(project)
    first = await editor(daemon, project)  # declares nothing
    declared = {"window": {"showMessage": {"messageActionItem": {}}}}
    second = await editor(daemon, project, declared)
    with trio.fail_after(30):
        # the first editor's hover: its question is the first's, whatever it declared
        await first.send(hover(2, a))
        question = await question_of(first, 2)
        assert question["params"] == {
            "type": 1,
            "message": "fake: hover in a.fake",
            "actions": ACTIONS,
        }
        # the person picks "Later": the server gets its own item back, as it sent it
        await first.send(reply(question, {"title": "Later"}))
        said = await until(first, chose)
        told = f"fake: chose {json.dumps(LATER, separators=(',', ':'))}"
        assert said[-1]["params"]["message"] == told
        assert not asked(await until(second, chose))  # told of the choice, never asked
        # an error from the editor: no action
        await first.send(hover(3, a))
        question = await question_of(first, 3)
        await first.send({"jsonrpc": "2.0", "id": question["id"],
                          "error": {"code": -32601, "message": "no"}})  # fmt: skip
        assert (await until(first, chose))[-1]["params"]["message"] == "fake: chose null"
        await until(second, chose)
        # no answer in time: no action
        await first.send(hover(4, a))
        await question_of(first, 4)
        assert (await until(first, chose))[-1]["params"]["message"] == "fake: chose null"
        await until(second, chose)
        # an agent's hover (no editor's request in flight): the editor that declared it
        result = await agent.tool("get_hover_info", path="a.fake", line=1, character=1)
        assert result["status"] == "found"
        (question,) = asked(await until(second, lambda m: asked([m]) != []))
        await second.send(reply(question, {"title": "OK"}))
        said = await until(first, chose)
        assert said[-1]["params"]["message"] == 'fake: chose {"title":"OK"}'
        assert not asked(said)
        await until(second, chose)
        # the editor asked goes away without answering: no action
        await second.send(hover(5, a))
        await question_of(second, 5)
        second.close()
        assert (await until(first, chose))[-1]["params"]["message"] == "fake: chose null"
    first.close()


async def test_with_no_editor_to_ask_the_question_is_shown_and_answered_with_no_action(
    daemon: Daemon, project: Path, open_client: OpenClient
) -> None:
    a = project / "a.fake"
    a.write_text("alpha\n")
    agent = await open_client(project)
    quiet = await editor(daemon, project)  # declares no window.showMessage
    with trio.fail_after(30):
        result = await agent.tool("get_hover_info", path="a.fake", line=1, character=1)
        assert result["status"] == "found"
        said = await until(quiet, chose)
        assert not asked(said)
        assert ("window/showMessage", 1, "fake: hover in a.fake") in shown(said)
        assert said[-1]["params"]["message"] == "fake: chose null"
    quiet.close()


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
        (told,) = [m for m in await until(plain, lambda m: "result" in m) if "result" in m]
        (rich_told,) = [m for m in await until(rich, lambda m: "result" in m) if "result" in m]
    assert told["result"]["contents"] == {
        "kind": "plaintext",
        "value": "def f(x: int) -> str\n\nSee [the **docs**](http://x.org) `f`.",
    }
    assert rich_told["result"]["contents"] == {"kind": "markdown", "value": MARKDOWN}
    plain.close()
    rich.close()
