"""Workspace symbols start only the servers the question needs: the languages already
running for the root and the project's main languages by file count, never a
configuration file's server; `language` narrows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.lsp.project import main_languages
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

CONFIG_FILES = {
    "pyproject.toml": '[project]\nname = "p"\nversion = "0.1"\n',
    "ci.yaml": "on: push\n",
    "data.json": '{"a": [1, 2]}\n',
    "tsconfig.json": "{// comment\n}\n",
    "Dockerfile": "FROM scratch\n",
    "run.sh": "echo hi\n",  # one script beside twelve modules: not a main language
}
PYTHON_FILES = {f"pkg/mod{i}.py": f"class Widget{i}:\n    size: int = {i}\n" for i in range(12)}


async def started(client: RpcClient) -> set[str]:
    sessions = (await client.call("session/list"))["sessions"]
    return {s["name"] for session in sessions for s in session["servers"]}


def test_main_languages_are_those_with_a_share_of_the_files_configuration_never() -> None:
    files: dict[str, Any] = {
        "python": [Path("a")] * 100,
        "go": [Path("b")] * 40,
        "sh": [Path("c")] * 3,
        "yaml": [Path("d")] * 500,
        "toml": [Path("e")],
    }
    assert main_languages(files) == ["go", "python"]
    assert main_languages({"json": [Path("x")]}) == []


@needs("basedpyright")
async def test_a_python_query_starts_basedpyright_only(
    open_client: OpenClient, project: Path
) -> None:
    """A Python project with YAML, JSON, TOML, Dockerfile files and a shell script: the
    workspace query asks Python only, and starts basedpyright alone (not ruff, which
    offers no workspace symbols, nor any configuration file's server)."""
    write(project, {**CONFIG_FILES, **PYTHON_FILES})
    client = await open_client(project)
    with trio.fail_after(120):
        result = await client.tool("get_symbols", scope="workspace", query="Widget1")
        assert result["languages"] == ["python"]
        assert ("Widget1", "pkg/mod1.py") in {(s["name"], s["path"]) for s in result["symbols"]}
        assert await started(client) == {"basedpyright"}
        narrowed = await client.tool(
            "get_symbols", scope="workspace", query="Widget2", language="python"
        )
        assert narrowed["languages"] == ["python"]
        assert [s["path"] for s in narrowed["symbols"] if s["name"] == "Widget2"] == ["pkg/mod2.py"]
        assert await started(client) == {"basedpyright"}
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_symbols", scope="workspace", query="x", language="cobol")
        assert info.value.kind == "invalid_arguments" and "python" in info.value.message
        with pytest.raises(RpcFailure) as info:
            await client.tool(
                "get_symbols", scope="workspace", query="x", path="pkg/mod1.py", language="go"
            )
        assert info.value.kind == "invalid_arguments"
    await client.aclose()


@needs("basedpyright", "gopls")
async def test_a_go_and_python_project_asks_both_main_languages(
    open_client: OpenClient, project: Path
) -> None:
    """`language: go` starts gopls alone; without it, both main languages are asked."""
    go = {f"g{i}.go": f"package demo\n\ntype Gadget{i} struct{{}}\n" for i in range(8)}
    write(project, {"go.mod": "module example.com/demo\n\ngo 1.19\n", **go, **PYTHON_FILES})
    write(project, {"ci.yaml": "on: push\n"})
    client = await open_client(project)
    with trio.fail_after(120):
        only_go = await client.tool("get_symbols", scope="workspace", query="Gadget", language="go")
        assert only_go["languages"] == ["go"]
        assert {s["path"] for s in only_go["symbols"]} >= {"g0.go", "g7.go"}
        assert await started(client) == {"gopls"}
        both = await client.tool("get_symbols", scope="workspace", query="G")
        assert both["languages"] == ["go", "python"]
        paths = {s["path"] for s in both["symbols"]}
        assert "g3.go" in paths
        widgets = await client.tool("get_symbols", scope="workspace", query="Widget3")
        assert "pkg/mod3.py" in {s["path"] for s in widgets["symbols"]}
        assert await started(client) == {"gopls", "basedpyright"}
    await client.aclose()
