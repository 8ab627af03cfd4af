"""Shapes off the LSP spec, sent by the scripted fake server: each is left out or gives a
clear `lsp_error` naming the server and the method; the server and the others go on."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.config import Config
from codeward.daemon.lsp.shapes import OffSpec, answer, lenient, structure
from codeward.daemon.tools.call_hierarchy import CallsArgs, call_hierarchy
from codeward.daemon.tools.registry import NoCaller, ToolContext
from codeward.protocol.errors import ErrorKind
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, for_daemon, logged, running
from tests.rpc import RpcFailure

FULL = lsp.RelatedFullDocumentDiagnosticReport


def hover_params(path: Path) -> dict[str, Any]:
    return {"textDocument": {"uri": path.as_uri()}, "position": {"line": 0, "character": 0}}


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\nbad line\n")
    return path


async def test_capabilities_and_registrations_off_the_spec(
    tmp_path: Path, doc: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "log"
    caplog.set_level(logging.DEBUG, logger="codeward.lsp")
    async with running(tmp_path, fake_config({"fake": fake_server("off-spec", log)})) as (
        manager,
        _,
    ):
        server = manager.pool.server_for("fake")
        await server.connection()
        with trio.fail_after(5):
            await server.wait_for(lambda: "f" in server.capabilities.registrations, 5)
        caps = server.capabilities
        assert caps.supports("textDocument/hover")  # the readable capabilities stand
        assert caps.unreadable == [
            "semanticTokensProvider",
            "workspace/didChangeWatchedFiles registration",
        ]
        assert caps.watched_file_globs() == []
        # Its pulled diagnostics: the one without a range is left out, not the others.
        found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"] and not found.errors
        # Its pushes: each diagnostic has the severity "high", each is left out.
        assert await server.request("textDocument/hover", hover_params(doc)) is not None
        published = server.published[doc.as_uri()]
        assert published.version == 1 and published.diagnostics == []
    answers = {m["id"]: m for m in logged(log) if "method" not in m}
    refused = answers[1001]["error"]  # registrations that are not a list
    assert refused["code"] == -32602 and "client/registerCapability" in refused["message"]
    assert answers[1002]["result"] is None
    assert answers[1003]["error"]["code"] == -32602  # configuration items not a list
    assert server._freshness.progress == {}  # left out
    assert "fake: m" not in caplog.messages  # left out (a log message of type "loud")
    assert any("window/logMessage off the LSP spec" in m for m in caplog.messages)


class TestTools:
    """Through the daemon: `odd` answers off the spec, `fine` by it; both serve `*.fake`."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        return for_daemon(
            fake_config(
                {"odd": fake_server("off-spec"), "fine": fake_server("by-spec")},
                order=["odd", "fine"],
            )
        )

    async def test_an_answer_off_the_spec_is_an_lsp_error_naming_server_and_method(
        self, open_client: OpenClient, project: Path
    ) -> None:
        write(project, {"a.fake": "good\nbad\n"})  # (line 2 has a name to point at)
        client = await open_client(project)
        for tool, method, arguments in (
            ("get_hover_info", "textDocument/hover", {"line": 1, "character": 1}),
            ("get_symbols", "textDocument/documentSymbol", {}),
        ):
            with pytest.raises(RpcFailure) as info:
                await client.tool(tool, path="a.fake", **arguments)
            assert info.value.kind == "lsp_error"
            assert info.value.data["server"] == "odd" and info.value.data["method"] == method
            assert f"The odd language server answered {method}" in info.value.message
        # A call hierarchy item, or the calls of one, off the spec.
        for line, method in (
            (2, "textDocument/prepareCallHierarchy"),
            (1, "callHierarchy/incomingCalls"),
        ):
            with pytest.raises(RpcFailure) as info:
                await client.tool("call_hierarchy", path="a.fake", line=line, character=1)
            assert info.value.kind == "lsp_error", info.value.message
            assert info.value.data["server"] == "odd" and info.value.data["method"] == method
            assert f"The odd language server answered {method}" in info.value.message
        # The server is still there, and so are the others' answers.
        found = await client.tool("get_symbols", scope="workspace", query="good")
        assert [(s["name"], s["kind"], s["path"]) for s in found["symbols"]] == [
            ("good", "function", "a.fake")
        ]
        servers = (await client.call("session/list"))["sessions"][0]["servers"]
        assert [(s["name"], s["state"], s["restarts"]) for s in servers] == [
            ("odd", "running", 0),
            ("fine", "running", 0),
        ]

    async def test_edits_off_the_spec_write_nothing(
        self, open_client: OpenClient, project: Path
    ) -> None:
        write(project, {"a.fake": "good\n"})
        client = await open_client(project)
        found = await client.tool("get_code_actions", path="a.fake", line=1)
        assert [(a["title"], a["server"]) for a in found["actions"]] == [("Fix (by-spec)", "fine")]
        assert [e["server"] for e in found["errors"]] == ["odd"]
        assert "textDocument/codeAction" in found["errors"][0]["message"]
        applied = await client.tool("get_code_actions", path="a.fake", line=1, apply=0)
        assert (
            applied["files_changed"] == ["a.fake"] and (project / "a.fake").read_text() == "fine\n"
        )
        for tool, method, arguments in (
            ("rename_symbol", "textDocument/rename", {"line": 1, "character": 1, "new_name": "x"}),
            ("format_code", "textDocument/formatting", {}),
        ):
            with pytest.raises(RpcFailure) as info:
                await client.tool(tool, path="a.fake", **arguments)
            assert info.value.kind == "lsp_error" and info.value.data["method"] == method
            assert info.value.data["server"] == "odd"
        assert (project / "a.fake").read_text() == "fine\n"

    async def test_a_diagnostic_off_the_spec_costs_no_other_its_place(
        self, open_client: OpenClient, project: Path
    ) -> None:
        write(project, {"a.fake": "good\nbad\n"})
        client = await open_client(project)
        found = await client.tool("get_diagnostics", path="a.fake")
        assert [(d["message"], d["severity"]) for d in found["diagnostics"]] == [
            ("bad line 2", "error")
        ]  # from `fine`
        assert "errors" not in found  # `odd`'s one diagnostic off the spec is left out


def test_lenient_leaves_out_odd_entries_only() -> None:
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    items = [{"range": rng, "message": "kept"}, {"message": "no range"}, 3]
    report, wrong = lenient({"kind": "full", "items": items}, FULL, "items", lsp.Diagnostic)
    assert [d.message for d in report.items] == ["kept"] and len(wrong) == 2
    assert "required field missing @ $.range" in wrong[0]
    odd_envelope = {"kind": "full", "items": items, "relatedDocuments": 5}
    for envelope in (odd_envelope, {"kind": "full"}, {"kind": "full", "items": 3}, "full", None):
        with pytest.raises(OffSpec):
            lenient(envelope, FULL, "items", lsp.Diagnostic)


def test_code_actions_with_a_command_and_strict_strings() -> None:
    actions = answer(
        [
            {"title": "fix", "kind": "quickfix", "command": {"title": "", "command": "x"}},
            {"title": "run", "command": "y", "arguments": [1]},
        ],
        "fake",
        "textDocument/codeAction",
    )
    assert [type(a) for a in actions] == [lsp.CodeAction, lsp.Command]  # lsprotocol: 2 Commands
    assert actions[0].command == lsp.Command(title="", command="x")
    for data, type_ in (
        ({"contents": {"kind": "markdown", "value": {"a": 1}}}, lsp.Hover),  # str({...}) else
        ({"interFileDependencies": "yes", "workspaceDiagnostics": True}, lsp.DiagnosticOptions),
    ):
        with pytest.raises(OffSpec):
            structure(data, type_)


async def test_call_hierarchy_and_commands_by_the_spec(tmp_path: Path, doc: Path) -> None:
    """Call hierarchy items go back to the server as it sent them (its `data` included),
    and a command's params are an ExecuteCommandParams; its edit request off the spec is
    refused, with an `lsp_error` naming the server and the method."""
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fine": fake_server("by-spec", log)})) as (
        manager,
        _,
    ):
        session = SimpleNamespace(lsp=manager, root=manager.root, restricted=False)
        ctx = ToolContext(session, NoCaller())  # type: ignore[arg-type]
        for direction in ("incoming", "outgoing"):
            found = await call_hierarchy(
                ctx, CallsArgs(path="a.fake", line=1, character=1, direction=direction)
            )
            assert [(c["name"], c["kind"], c["line"]) for c in found["calls"]] == [
                ("good", "function", 1)
            ]
            assert found["item"]["name"] == "good" and found["status"] == "found"

        server = await manager.pool.started("fine")
        edits: list[Any] = []

        async def on_edit(edit: lsp.WorkspaceEdit, documents: Any) -> None:
            edits.append(edit)

        fine = {"changes": {doc.as_uri(): []}}
        capture = await server.execute_command("edit", [fine, {"changes": "odd"}], on_edit)
        assert edits == [structure(fine, lsp.WorkspaceEdit)]
        assert (capture.asked, capture.applied, capture.refused) == (1, 1, [])
        capture = await server.execute_command("edit", [{"changes": "odd"}], on_edit)
        assert capture.applied == 0 and len(edits) == 1
        (refused,) = capture.refused
        assert refused.kind is ErrorKind.LSP_ERROR
        assert refused.details == {"server": "fine", "method": "workspace/applyEdit"}
        assert "The fine language server sent workspace/applyEdit" in refused.message
    messages = logged(log)
    data = {"asked": [{"line": 0, "character": 0}, None]}
    follow_ups = [m for m in messages if m.get("method", "").startswith("callHierarchy/")]
    assert [m["params"]["item"]["data"] for m in follow_ups] == [data, data]
    commands = [m["params"] for m in messages if m.get("method") == "workspace/executeCommand"]
    assert commands[0] == {"command": "edit", "arguments": [fine, {"changes": "odd"}]}
    answers = [m["result"] for m in messages if "method" not in m and "result" in m]
    assert {"applied": True} in answers
    assert {"applied": False, "failureReason": refused.message} in answers
