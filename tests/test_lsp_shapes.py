"""Shapes off the LSP spec, sent by the scripted fake server: each is left out or gives a
clear `lsp_error` naming the server and the method; the server and the others go on."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, logged, running
from tests.rpc import RpcFailure


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\nbad line\n")
    return path


async def test_capabilities_and_registrations_off_the_spec(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("off-spec", log)})) as (
        manager,
        _,
    ):
        server = manager.server_for("fake")
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
        found = await manager.diagnostics(doc)  # it still answers
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
    answers = {m["id"]: m for m in logged(log) if "method" not in m}
    refused = answers[1001]["error"]  # registrations that are not a list
    assert refused["code"] == -32602 and "client/registerCapability" in refused["message"]
    assert answers[1002]["result"] is None


class TestTools:
    """Through the daemon: `odd` answers off the spec, `fine` by it; both serve `*.fake`."""

    @pytest.fixture
    def daemon_config(self) -> Config:
        config = fake_config(
            {"odd": fake_server("off-spec"), "fine": fake_server("by-spec")},
            order=["odd", "fine"],
        )
        return Config(
            daemon=DaemonConfig(idle_timeout=600.0),
            lsp=config.lsp,
            servers=config.servers,
            languages=config.languages,
        )

    async def test_an_answer_off_the_spec_is_an_lsp_error_naming_server_and_method(
        self, open_client: OpenClient, project: Path
    ) -> None:
        write(project, {"a.fake": "good\n"})
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
