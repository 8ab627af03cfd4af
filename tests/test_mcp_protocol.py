"""The sans-IO MCP layer: which first line opens the dialect, the events of each line, the
errors it answers by itself, and the messages it encodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeward.client import pump
from codeward.client.entry import pump_options
from codeward.protocol import mcp
from codeward.protocol.errors import ErrorCode

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}


def line(method: str, params: Any = None, msg_id: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if msg_id is not None:
        message["id"] = msg_id
    return json.dumps(message).encode()


def sent(event: mcp.Event | None) -> dict[str, Any]:
    assert isinstance(event, mcp.Send), event
    return json.loads(event.data)


def ready() -> mcp.McpMachine:
    machine = mcp.McpMachine()
    assert isinstance(machine.receive(line("initialize", INIT, 0)), mcp.Initialize)
    return machine


@pytest.mark.parametrize(
    ("frame", "opens"),
    [
        (line("initialize", INIT, 1), True),
        (line(mcp.BIND_METHOD, {"root": "/p"}), True),
        (pump.binding_line(Path("/p")).strip(), True),
        # the native dialect's initialize (snake_case) and other first lines stay native
        (line("initialize", {"protocol_version": 1, "client": {"name": "c"}}, 1), False),
        (line("initialize", {"protocolVersion": "2025-06-18"}, 1), False),  # no clientInfo
        (line("initialize", {"protocolVersion": 3, "clientInfo": {}}, 1), False),
        (line("initialize", INIT), False),  # a notification, not a request
        (line("session/open", {"root": "/p"}, 1), False),
        (b"[" + line("initialize", INIT, 1) + b"]", False),
        (b"{not json", False),
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}', False),
    ],
)
def test_which_first_line_opens_mcp(frame: bytes, opens: bool) -> None:
    assert mcp.is_opening(frame) is opens


def test_initialize_negotiates_the_version() -> None:
    machine = mcp.McpMachine()
    event = machine.receive(line("initialize", INIT, 0))
    assert isinstance(event, mcp.Initialize) and event.params.client_info.name == "t"
    reply = json.loads(machine.initialize_message(0, mcp.Implementation("codeward", "1"), "hi"))
    assert reply["result"] == {
        "protocolVersion": "2025-06-18",
        "serverInfo": {"name": "codeward", "version": "1"},
        "capabilities": {"tools": {"listChanged": True}},
        "instructions": "hi",
    }
    future = mcp.McpMachine()
    future.receive(line("initialize", {**INIT, "protocolVersion": "2099-01-01"}, 0))
    assert future.version == mcp.LATEST_VERSION


def test_requests_before_initialize_are_refused_but_ping_answers() -> None:
    machine = mcp.McpMachine()
    for method in ("tools/list", "tools/call"):
        error = sent(machine.receive(line(method, {"name": "x"}, 7)))["error"]
        assert error["code"] == ErrorCode.INVALID_REQUEST and "initialize" in error["message"]
    assert sent(machine.receive(line("ping", None, "p"))) == {"jsonrpc": "2.0", "id": "p",
                                                               "result": {}}  # fmt: skip


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (line("resources/list", {}, 1), ErrorCode.METHOD_NOT_FOUND),
        (line("tools/call", {"arguments": {}}, 2), ErrorCode.INVALID_PARAMS),  # no name
        (line("tools/call", {"name": 3}, 3), ErrorCode.INVALID_PARAMS),
        (line("tools/call", {"name": "t", "arguments": [1]}, 4), ErrorCode.INVALID_PARAMS),
        (line("tools/list", {"cursor": 5}, 5), ErrorCode.INVALID_PARAMS),
        (line("initialize", {"clientInfo": {}}, 6), ErrorCode.INVALID_PARAMS),
        (b"{oops", ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', ErrorCode.INVALID_REQUEST),
        (b"[" + line("ping", None, 1) + b"]", ErrorCode.INVALID_REQUEST),  # no batches
    ],
)
def test_bad_input_gets_the_standard_error(frame: bytes, code: int) -> None:
    reply = sent(ready().receive(frame))
    assert reply["error"]["code"] == code
    assert reply["error"]["message"].endswith(".")


def test_tool_calls_carry_their_arguments_and_progress_token() -> None:
    machine = ready()
    call = machine.receive(line("tools/call", {"name": "t", "arguments": {"a": 1},
                                               "_meta": {"progressToken": "tok"}}, 3))  # fmt: skip
    assert call == mcp.CallTool(3, "t", {"a": 1}, "tok")
    bare = machine.receive(line("tools/call", {"name": "t"}, 4))
    assert bare == mcp.CallTool(4, "t", {}, None)
    assert isinstance(machine.receive(line("tools/list", {}, 5)), mcp.ListTools)


def test_notifications() -> None:
    machine = ready()
    assert machine.receive(line("notifications/cancelled", {"requestId": 3})) == mcp.Cancel(3)
    assert machine.receive(line(mcp.BIND_METHOD, {"root": "/r"})) == mcp.Bind("/r")
    # malformed or unknown notifications get no answer (JSON-RPC forbids one)
    assert machine.receive(line("notifications/cancelled", {"id": 3})) is None
    assert machine.receive(line(mcp.BIND_METHOD, {"root": 1})) is None
    assert machine.receive(line("notifications/initialized")) is None
    # a response (to an elicitation) is the dialect's to match with what it asked
    assert machine.receive(b'{"jsonrpc":"2.0","id":9,"result":{}}') == mcp.Reply(9, b"{}")
    error = b'{"jsonrpc":"2.0","id":"codeward-1","error":{"code":-1,"message":"no"}}'
    assert machine.receive(error) == mcp.Reply("codeward-1", None)


@pytest.mark.parametrize(
    ("capabilities", "elicits"),
    [({}, False), ({"elicitation": {}}, True), ({"elicitation": {"form": {}}}, True),
     ({"elicitation": {"form": {}, "url": {}}}, True), ({"elicitation": {"url": {}}}, False),
     ({"elicitation": True}, False)],
)  # fmt: skip
def test_elicitation_is_declared_in_the_capabilities(
    capabilities: dict[str, Any], elicits: bool
) -> None:
    machine = mcp.McpMachine()
    machine.receive(line("initialize", {**INIT, "capabilities": capabilities}, 0))
    assert machine.elicitation is elicits


def test_an_elicitation_request() -> None:
    machine = ready()
    schema = {"type": "object", "properties": {"approve": {"type": "boolean"}}}
    first, body = machine.elicit_message("Approve git commit?", schema)
    second, _ = machine.elicit_message("Again?", schema)
    assert first != second
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "id": first,
        "method": "elicitation/create",
        "params": {"message": "Approve git commit?", "requestedSchema": schema},
    }


def test_encoded_results_and_notifications() -> None:
    machine = ready()
    ok = json.loads(machine.result_message(1, "a.py:1:1: x", {"count": 1}))
    assert ok["result"] == {"content": [{"type": "text", "text": "a.py:1:1: x"}],
                            "structuredContent": {"count": 1}, "isError": False}  # fmt: skip
    failed = json.loads(machine.result_message(2, "No. [git_failed]", None, is_error=True))
    assert failed["result"] == {"content": [{"type": "text", "text": "No. [git_failed]"}],
                                "isError": True}  # fmt: skip
    progress = json.loads(machine.progress_message("tok", 2, "basedpyright: done"))
    assert progress == {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": "tok", "progress": 2.0,
                                   "message": "basedpyright: done"}}  # fmt: skip
    changed = json.loads(machine.list_changed_message())
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    tool = mcp.Tool("t", "does t", {"type": "object"})
    listed = json.loads(machine.tools_message(4, [tool]))["result"]["tools"]
    assert listed == [{"name": "t", "description": "does t", "inputSchema": {"type": "object"}}]


def test_binding_line_escapes_the_root() -> None:
    odd = '/tmp/a "quoted"\\dir\n\tx/é'
    message = json.loads(pump.binding_line(Path(odd)))
    assert message == {"jsonrpc": "2.0", "method": mcp.BIND_METHOD, "params": {"root": odd}}
    assert pump.BIND_METHOD == mcp.BIND_METHOD


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (["mcp"], ("mcp", {})),
        (["--socket", "/s", "mcp", "--root=/r"], ("mcp", {"socket": "/s", "root": "/r"})),
        (["--no-autostart", "-y", "mcp", "--timeout", "5"],
         ("mcp", {"no-autostart": "", "y": "", "timeout": "5"})),
        (["--socket=/s", "lsp"], ("lsp", {"socket": "/s"})),
        (["lsp", "mcp"], None),
        (["status"], None),
        (["mcp", "extra"], None),
        (["mcp", "mcp"], None),
        (["--help", "mcp"], None),
        (["--socket"], None),
        (["mcp", "--root"], None),
        ([], None),
    ],
)  # fmt: skip
def test_the_console_script_sends_only_plain_mcp_and_lsp_to_the_pumps(
    argv: list[str], options: tuple[str, dict[str, str]] | None
) -> None:
    assert pump_options(argv) == options
