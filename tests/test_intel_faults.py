"""Faults under the code-intelligence tools: missing servers, missing methods, crashes, silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, ServerConfig
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, needs
from tests.rpc import RpcFailure


class TestFakeServer:
    @pytest.fixture
    def daemon_config(self, request: pytest.FixtureRequest) -> Config:
        mode = getattr(request, "param", "ok")
        config = fake_config({"fake": fake_server(mode)}, request_timeout=1.0)
        return Config(
            daemon=DaemonConfig(idle_timeout=600.0),
            lsp=config.lsp,
            servers=config.servers,
            languages=config.languages,
        )

    async def test_hover_only_server(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        result = await client.tool("get_hover_info", path="a.fake", line=1, character=2)
        assert result["status"] == "found" and result["markdown"] == "hover"
        assert result["signature"] is None and result["docs"] == "hover"
        assert result["range"] == {"line": 1, "character": 2, "end_line": 1, "end_character": 2}
        for tool in ("go_to_definition", "find_references", "call_hierarchy"):
            with pytest.raises(RpcFailure) as info:
                await client.tool(tool, path="a.fake", line=1, character=1)
            assert info.value.kind == "lsp_unavailable", tool
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_symbols", path="a.fake")
        assert info.value.kind == "lsp_unavailable"
        result = await client.tool("get_symbols", scope="workspace", query="x")
        assert result["status"] == "not_found" and result["symbols"] == []

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
            assert info.value.kind == "lsp_unavailable" and "python" in info.value.message
