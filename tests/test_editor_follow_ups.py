"""Follow-ups through `codeward lsp` with two servers for one language: the scripted server
(`follow-ups`) first, real basedpyright second. The scripted one answers the first
completion, inlay hints and call hierarchy and then withdraws each, so basedpyright answers
the next: an item of either list, resolved afterwards, goes back to the server that gave it,
its `data` as that server sent it (the scripted server's items, the first of their kind,
pass untagged; basedpyright's carry its name)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config, LanguageConfig
from codeward.daemon.server import Daemon
from codeward.protocol.framing import Framing
from tests.lsp_support import fake_server, for_daemon, logged, needs
from tests.test_daemon_limits import Wire

pytestmark = needs("basedpyright")

# the scripted server's items' data (fake_lsp_server.FOLLOW_UP_DATA), as it sends it
DATA = {"z": [1, 2.5, "é😀", None, True], "a": {"codewardServer": "lookalike"}}
MODELS = 'class Account:\n    def deposit(self, amount: int) -> int:\n        """Add money."""\n'
MODELS += "        return amount\n\n\ndef use() -> None:\n    Account().deposit(1)\n"
MAIN = "from models import Account\n\nbalance = Account().deposit(5)\nAccount().\n"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "fake.log"


@pytest.fixture
def daemon_config(log: Path) -> Config:
    scripted = fake_server("follow-ups", log)
    scripted.registers = ["textDocument/completion", "textDocument/inlayHint",
                          "textDocument/prepareCallHierarchy"]  # fmt: skip
    python = LanguageConfig(
        patterns=["*.py"], servers=["fake", "basedpyright"], language_id="python"
    )
    return for_daemon(Config(servers={"fake": scripted}, languages={"python": python}))


class Editor:
    """A bare LSP client on the daemon's socket (requests answered one at a time)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.next_id = 1

    @classmethod
    async def start(cls, daemon: Daemon, root: Path) -> Editor:
        wire = await Wire.open(daemon.socket_path, Framing.CONTENT_LENGTH)
        await wire.send({"jsonrpc": "2.0", "method": "codeward/lsp"})
        editor = cls(wire)
        await editor.call("initialize", {"processId": None, "rootUri": root.as_uri(),
                                         "capabilities": {}})  # fmt: skip
        await editor.notify("initialized", {})
        return editor

    async def notify(self, method: str, params: Any) -> None:
        await self.wire.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        msg_id = self.next_id
        await self.wire.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            message = await self.wire.next(timeout=60)
            if message.get("id") == msg_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if "method" in message and "id" in message:  # the daemon's request: no answer
                await self.wire.send({"jsonrpc": "2.0", "id": message["id"], "result": None})


def at(path: Path, line: int, character: int) -> dict[str, Any]:
    position = {"line": line, "character": character}
    return {"textDocument": {"uri": path.as_uri()}, "position": position}


def tag(item: dict[str, Any]) -> str:
    """The server an item's `data` names."""
    return item["data"]["codewardServer"]


def received(log: Path, method: str) -> list[Any]:
    """The params of each `method` the scripted server received."""
    return [m["params"] for m in logged(log) if m.get("method") == method]


async def test_each_item_is_followed_up_by_the_server_that_gave_it(
    daemon: Daemon, project: Path, log: Path
) -> None:
    (project / "models.py").write_text(MODELS)
    (project / "main.py").write_text(MAIN)
    main, models = project / "main.py", project / "models.py"
    editor = await Editor.start(daemon, project)
    with trio.fail_after(120):
        for path in (models, main):
            doc = {"uri": path.as_uri(), "languageId": "python", "version": 1,
                   "text": path.read_text()}  # fmt: skip
            await editor.notify("textDocument/didOpen", {"textDocument": doc})

        # completions: the scripted server's list (the kind's own server: as it came),
        # then basedpyright's (its items name it)
        scripted = (await editor.call("textDocument/completion", at(main, 3, 10)))["items"]
        assert scripted == [{"label": "fake_item", "data": DATA}, {"label": "fake_bare"}]
        real = await editor.call("textDocument/completion", at(main, 3, 10))
        real = real["items"] if isinstance(real, dict) else real
        (deposit,) = [i for i in real if i["label"] == "deposit"]
        # the older list's item goes to the scripted server, its data as it was sent
        resolved = await editor.call("completionItem/resolve", scripted[0])
        assert resolved == {**scripted[0], "detail": "resolved by fake",
                            "tooltip": "resolved by fake"}  # fmt: skip
        (sent,) = received(log, "completionItem/resolve")
        assert json.dumps(sent["data"]) == json.dumps(DATA)  # (key order kept too)
        assert {tag(i) for i in real} == {"basedpyright"}  # (those without data too)
        # basedpyright's item goes to basedpyright, which finds its symbol by its data
        resolved = await editor.call("completionItem/resolve", deposit)
        assert "Add money." in json.dumps(resolved.get("documentation"))
        assert resolved["data"] == deposit["data"]  # tagged again, the same

        # call hierarchy: the scripted server's item, then basedpyright's
        (fake_fn,) = await editor.call("textDocument/prepareCallHierarchy", at(models, 1, 9))
        assert fake_fn["data"] == DATA
        (method,) = await editor.call("textDocument/prepareCallHierarchy", at(models, 1, 9))
        assert method["name"] == "deposit" and tag(method) == "basedpyright"
        (call,) = await editor.call("callHierarchy/incomingCalls", {"item": fake_fn})
        assert call["from"]["name"] == "fake_caller" and call["from"]["data"] == DATA
        (again,) = await editor.call("callHierarchy/incomingCalls", {"item": call["from"]})
        assert again["from"]["name"] == "fake_caller"  # a result's item follows up too
        assert [json.dumps(p["item"]["data"]) for p in
                received(log, "callHierarchy/incomingCalls")] == [json.dumps(DATA)] * 2  # fmt: skip
        calls = await editor.call("callHierarchy/incomingCalls", {"item": method})
        assert "use" in [c["from"]["name"] for c in calls]  # basedpyright's own answer
        assert {tag(c["from"]) for c in calls} == {"basedpyright"}

        # inlay hints: the scripted server's, then basedpyright's; the first's resolve
        # goes back to it
        lines = {"textDocument": {"uri": main.as_uri()}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}}}  # fmt: skip
        (hint,) = await editor.call("textDocument/inlayHint", lines)
        assert hint["label"] == "fake hint" and hint["data"] == DATA
        hints = await editor.call("textDocument/inlayHint", lines)
        assert hints and {tag(h) for h in hints} == {"basedpyright"}
        resolved = await editor.call("inlayHint/resolve", hint)
        assert resolved == {**hint, "detail": "resolved by fake", "tooltip": "resolved by fake"}
        assert [json.dumps(p["data"]) for p in received(log, "inlayHint/resolve")] == [
            json.dumps(DATA)
        ]
    editor.wire.close()
