"""The LSP dialect's sans-IO machine: the lifecycle, out-of-order and malformed messages."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from codeward.protocol import lsp
from codeward.protocol.errors import ErrorCode


def body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


INIT = body({"id": 1, "method": "initialize", "params": {
    "processId": 42, "rootUri": "file:///tmp/p", "capabilities": {},
    "clientInfo": {"name": "Neovim", "version": "0.7.2"}}})  # fmt: skip
AT = {"textDocument": {"uri": "file:///tmp/p/a.py"}, "position": {"line": 0, "character": 1}}
HOVER = body({"id": 2, "method": "textDocument/hover", "params": AT})


def error_of(event: lsp.Event | None) -> tuple[Any, int, str]:
    assert isinstance(event, lsp.Send), event
    reply = json.loads(event.data)
    return reply["id"], reply["error"]["code"], reply["error"]["message"]


def running() -> lsp.LspMachine:
    machine = lsp.LspMachine()
    machine.receive(body({"method": lsp.BIND_METHOD}))
    event = machine.receive(INIT)
    assert isinstance(event, lsp.Initialize)
    machine.result_message(event.id, {"capabilities": {}})
    assert isinstance(machine.receive(body({"method": "initialized", "params": {}})),
                      lsp.Initialized)  # fmt: skip
    return machine


def test_the_opening_frames() -> None:
    assert lsp.is_opening(body({"id": 0, "method": lsp.HANDOFF_METHOD}))
    assert lsp.is_opening(body({"method": lsp.BIND_METHOD}))
    assert not lsp.is_opening(body({"method": lsp.HANDOFF_METHOD}))  # a handoff is a request
    assert not lsp.is_opening(INIT)
    assert not lsp.is_opening(b"{not json")
    machine = lsp.LspMachine()
    assert machine.receive(body({"id": 0, "method": lsp.HANDOFF_METHOD})) == lsp.Handoff(0)
    # a handoff later is refused
    assert error_of(machine.receive(body({"id": 9, "method": lsp.HANDOFF_METHOD})))[1] == (
        ErrorCode.INVALID_REQUEST
    )


def test_initialize_reads_roots_client_and_capabilities() -> None:
    machine = lsp.LspMachine()
    event = machine.receive(body({"id": "i", "method": "initialize", "params": {
        "processId": None, "rootUri": None, "capabilities": {"general": {}},
        "workspaceFolders": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}],
    }}))  # fmt: skip
    assert isinstance(event, lsp.Initialize)
    assert [f.uri for f in event.params.workspace_folders or []] == ["file:///a", "file:///b"]
    assert event.params.process_id is None and event.params.client_info is None
    assert machine.state is lsp.State.RUNNING


def test_requests_before_initialize_are_refused_and_notifications_dropped() -> None:
    machine = lsp.LspMachine()
    expected = "Send initialize before textDocument/hover."
    assert error_of(machine.receive(HOVER)) == (2, ErrorCode.SERVER_NOT_INITIALIZED, expected)
    assert error_of(machine.receive(body({"id": 3, "method": "shutdown"})))[1] == (
        ErrorCode.SERVER_NOT_INITIALIZED
    )
    assert machine.receive(body({"method": "textDocument/didOpen", "params": {}})) is None
    assert machine.receive(body({"method": "initialized"})) is None
    assert isinstance(machine.receive(INIT), lsp.Initialize)  # the connection goes on


def test_a_second_initialize_is_invalid() -> None:
    machine = running()
    assert error_of(machine.receive(body({"id": 5, "method": "initialize", "params": {}})))[1] == (
        ErrorCode.INVALID_REQUEST
    )
    assert isinstance(machine.receive(HOVER), lsp.Call)


def test_shutdown_then_exit_ends_with_zero() -> None:
    machine = running()
    assert machine.receive(body({"id": 7, "method": "shutdown"})) == lsp.Shutdown(7)
    code = error_of(machine.receive(HOVER))
    assert code[:2] == (2, ErrorCode.INVALID_REQUEST) and "shut down" in code[2]
    assert machine.receive(body({"method": "textDocument/didClose", "params": {}})) is None
    assert machine.receive(body({"method": "exit"})) == lsp.Exit(0)
    assert machine.state is lsp.State.EXITED
    assert machine.receive(HOVER) is None  # nothing after exit


@pytest.mark.parametrize("initialized", [False, True])
def test_exit_without_shutdown_ends_with_one(initialized: bool) -> None:
    machine = running() if initialized else lsp.LspMachine()
    assert machine.receive(body({"method": "exit"})) == lsp.Exit(1)


def test_requests_notifications_and_cancellations() -> None:
    machine = running()
    event = machine.receive(HOVER)
    assert isinstance(event, lsp.Call) and event.method == "textDocument/hover"
    assert json.loads(bytes(event.params))["position"] == {"line": 0, "character": 1}
    # the same id again while in flight
    assert error_of(machine.receive(HOVER))[:2] == (2, ErrorCode.INVALID_REQUEST)
    assert machine.receive(body({"method": "$/cancelRequest", "params": {"id": 2}})) == (
        lsp.Cancel(2)
    )
    assert machine.receive(body({"method": "$/cancelRequest", "params": {"id": 99}})) is None
    assert machine.receive(body({"method": "$/cancelRequest", "params": {"i": 2}})) is None
    reply = json.loads(machine.result_message(2, None))
    assert reply == {"jsonrpc": "2.0", "id": 2, "result": None}
    assert isinstance(machine.receive(HOVER), lsp.Call)  # the id is free again
    note = machine.receive(body({"method": "textDocument/didSave", "params": {"x": 1}}))
    assert isinstance(note, lsp.Notify) and note.method == "textDocument/didSave"


def test_replies_to_the_daemons_requests() -> None:
    machine = running()
    msg_id, data = machine.request_message("workspace/applyEdit", {"edit": {}})
    assert json.loads(data)["method"] == "workspace/applyEdit"
    event = machine.receive(body({"id": msg_id, "result": {"applied": True}}))
    assert isinstance(event, lsp.Reply) and json.loads(bytes(event.result or b"")) == {
        "applied": True
    }
    assert machine.receive(body({"id": msg_id, "result": {}})) is None  # answered already
    other, _ = machine.request_message("client/registerCapability", {})
    event = machine.receive(body({"id": other, "error": {"code": -1, "message": "no"}}))
    assert isinstance(event, lsp.Reply) and event.result is None and event.error is not None
    gone, _ = machine.request_message("workspace/applyEdit", {})
    machine.forget(gone)
    assert machine.receive(body({"id": gone, "result": {}})) is None


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"{not json", ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":"\xff"}', ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc":"1.0","id":1,"method":"x"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"}', ErrorCode.INVALID_REQUEST),
        (b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"}', ErrorCode.INVALID_REQUEST),
        (b"42", ErrorCode.INVALID_REQUEST),
    ],
)
def test_malformed_messages_are_answered_and_it_goes_on(frame: bytes, code: int) -> None:
    machine = running()
    _, got, message = error_of(machine.receive(frame))
    assert got == code and message
    assert isinstance(machine.receive(HOVER), lsp.Call)


def test_bad_initialize_params_are_invalid_params() -> None:
    machine = lsp.LspMachine()
    bad = body({"id": 1, "method": "initialize", "params": {"workspaceFolders": "x"}})
    assert error_of(machine.receive(bad))[1] == ErrorCode.INVALID_PARAMS
    assert machine.state is lsp.State.NEW
    assert isinstance(machine.receive(INIT), lsp.Initialize)


@pytest.mark.parametrize(
    ("offered", "preferred", "chosen"),
    [
        (None, "utf-8", "utf-16"),
        ([], "utf-8", "utf-16"),
        (["utf-8", "utf-16"], "utf-16", "utf-16"),
        (["utf-32", "utf-16"], "utf-8", "utf-32"),
        (["ebcdic"], "utf-8", "utf-16"),
    ],
)
def test_position_encoding(offered: list[str] | None, preferred: str, chosen: str) -> None:
    capabilities = {} if offered is None else {"general": {"positionEncodings": offered}}
    assert lsp.negotiate_encoding(capabilities, preferred) == chosen


def test_the_ended_line() -> None:
    assert json.loads(lsp.LspMachine.ended_message(0)) == {
        "jsonrpc": "2.0", "method": lsp.ENDED_METHOD, "params": {"code": 0}
    }  # fmt: skip


@pytest.mark.parametrize("msg_id", [0, 2, -7, "codeward-9", 'a"b'])
def test_a_raw_result_is_answered_in_parts_that_reuse_its_bytes(msg_id: Any) -> None:
    """A result passed on as raw JSON is answered as parts (the head, the result's own
    bytes, the closing brace): joined, they are `result_message`'s answer, and the id is
    free again for the editor."""
    machine = running()
    request = body({"id": msg_id, "method": "textDocument/completion", "params": AT})
    assert isinstance(machine.receive(request), lsp.Call)
    frame = b'{"jsonrpc":"2.0","id":5,"result":{"items":[{"label":"x\\u00e9"}]}}'
    result = msgspec.Raw(memoryview(frame)[frame.index(b"{", 1) : -1])
    parts = machine.answer(msg_id, result)
    assert isinstance(parts, list)
    assert isinstance(parts[1], memoryview) and parts[1].obj is result  # (not copied)
    assert b"".join(parts) == lsp.LspMachine().result_message(msg_id, result)
    assert json.loads(b"".join(parts)) == {
        "jsonrpc": "2.0", "id": msg_id, "result": {"items": [{"label": "x\u00e9"}]}
    }  # fmt: skip
    assert isinstance(machine.receive(request), lsp.Call)  # the id is free again
    data = {"items": []}  # any other result is encoded whole
    assert machine.answer(msg_id, data) == lsp.LspMachine().result_message(msg_id, data)
    assert isinstance(machine.receive(request), lsp.Call)
