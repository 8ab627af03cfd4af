"""Faults under the code-intelligence tools: missing servers, missing methods, crashes, silence."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, ServerConfig
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, for_daemon, logged, needs
from tests.rpc import RpcFailure


class TestFakeServer:
    @pytest.fixture
    def daemon_config(self, request: pytest.FixtureRequest) -> Config:
        mode = getattr(request, "param", "ok")
        return for_daemon(fake_config({"fake": fake_server(mode)}, request_timeout=1.0))

    async def test_hover_only_server(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        result = await client.tool("get_hover_info", path="a.fake", line=1, character=2)
        assert result["status"] == "found" and result["markdown"] == "hover"
        assert result["signature"] is None and result["docs"] == "hover"
        assert result["range"] == {"line": 1, "character": 2, "end_line": 1, "end_character": 2}
        # What the server does not offer says so, naming it and the capability: never an
        # empty answer, never `lsp_unavailable` (nothing is missing to install).
        calls = [
            ("go_to_definition", {"line": 1, "character": 1}, "definitionProvider"),
            ("find_references", {"line": 1, "character": 1}, "referencesProvider"),
            ("call_hierarchy", {"line": 1, "character": 1}, "callHierarchyProvider"),
            ("get_symbols", {}, "documentSymbolProvider"),
            ("get_symbols", {"scope": "workspace", "query": "x"}, "workspaceSymbolProvider"),
            ("get_code_actions", {"line": 1}, "codeActionProvider"),
            ("format_code", {}, "documentFormattingProvider"),
            ("rename_symbol", {"line": 1, "character": 1, "new_name": "b"}, "renameProvider"),
        ]
        for tool, arguments, capability in calls:
            if "scope" not in arguments:
                arguments = {"path": "a.fake", **arguments}
            with pytest.raises(RpcFailure) as info:
                await client.tool(tool, **arguments)
            assert info.value.kind == "unsupported_by_server", tool
            assert info.value.data["servers"] == ["fake"], tool
            assert info.value.data["capability"] == capability, tool
            assert "fake language server fake does not offer" in info.value.message
        assert (project / "a.fake").read_text() == "hello\n"

    @pytest.mark.parametrize("daemon_config", ["failing-pull"], indirect=True)
    async def test_failing_diagnostic_pull(self, open_client: OpenClient, project: Path) -> None:
        """A server whose diagnostic pull fails still answers hover (its readiness wait
        pulls); get_diagnostics names the failure."""
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        result = await client.tool("get_hover_info", path="a.fake", line=1, character=2)
        assert result["status"] == "found" and result["markdown"] == "hover"
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_diagnostics", path="a.fake")
        assert info.value.kind == "lsp_error" and "analysis crashed" in info.value.message

    @pytest.mark.parametrize("daemon_config", ["crash-on-hover"], indirect=True)
    async def test_crash(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_hover_info", path="a.fake", line=1, character=1)
        assert info.value.kind == "lsp_error" and str(project.parent) not in info.value.message

    @pytest.mark.parametrize("daemon_config", ["silent-hover"], indirect=True)
    async def test_silence_times_out(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_hover_info", path="a.fake", line=1, character=1)
        assert info.value.kind == "timeout"


class TestSilentDefinition:
    """The hover tool sends the definition that names the module with the hover; it does
    not wait for it when the hover shows nothing or names the module itself."""

    @pytest.fixture
    def log(self, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return tmp_path_factory.mktemp("fake") / "log"

    @pytest.fixture
    def daemon_config(self, log: Path) -> Config:
        return for_daemon(
            fake_config(
                {"fake": fake_server("silent-definition", log)},
                request_timeout=600,
                method_timeouts={"textDocument/definition": 600},
            )
        )

    async def test_hover_naming_its_module(
        self, open_client: OpenClient, project: Path, log: Path
    ) -> None:
        write(project, {"a.fake": "pkg\nhello\n"})
        client = await open_client(project)
        with trio.fail_after(60):  # far less than the definition's 600 s timeout
            for _ in range(2):  # the second: the fake logged what came before it, in order
                named = await client.tool("get_hover_info", path="a.fake", line=1, character=1)
                assert named["status"] == "found" and named["module"] == "pkg.sub"
                assert named["kind"] == "module" and named["signature"] == "pkg.sub"
        messages = logged(log)  # (the second's own definition may not be logged yet)
        definitions = [m["id"] for m in messages if m.get("method") == "textDocument/definition"]
        cancels = [m["params"]["id"] for m in messages if m.get("method") == "$/cancelRequest"]
        assert definitions and cancels[:1] == definitions[:1]


class TestMissingServers:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(
            daemon=DaemonConfig(idle_timeout=600.0),
            servers={
                "gopls": ServerConfig(
                    command=["/nonexistent/gopls"],
                    languages=["go"],
                    install_hint="apt install gopls",
                )
            },
            languages={
                "python": LanguageConfig(patterns=["*.py"], servers=["ruff"], language_id="python")
            },
        )

    async def test_not_installed(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"main.go": "package main\n"})
        client = await open_client(project)
        with pytest.raises(RpcFailure) as info:
            await client.tool("go_to_definition", path="main.go", line=1, character=1)
        assert info.value.kind == "lsp_unavailable" and "apt install gopls" in info.value.message

    @needs("ruff")
    async def test_server_without_the_method(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.py": "import os\nx = os.sep\n"})
        client = await open_client(project)
        for tool in ("go_to_definition", "find_references", "get_type_definition"):
            with pytest.raises(RpcFailure) as info:
                await client.tool(tool, path="a.py", line=2, character=8)
            assert info.value.kind == "unsupported_by_server", tool
            assert info.value.data["servers"] == ["ruff"]
            assert "python language server ruff does not offer" in info.value.message
