"""Bad input to every code-intelligence tool: refused before any language server starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.tools.registry import REGISTRY
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.rpc import RpcClient, RpcFailure

POSITION_TOOLS = (
    "get_hover_info",
    "go_to_definition",
    "find_references",
    "find_implementations",
    "get_type_definition",
    "call_hierarchy",
)


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    assert info.value.code == -32000
    return info.value


@pytest.fixture
def files(project: Path, tmp_path: Path) -> Path:
    write(project, {"a.py": "x = 1\ny = 'é'\n", "notes.txt": "hello\n", "pkg/b.py": "z = 2\n"})
    (project / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (project / "latin.py").write_bytes(b"x = '\xe9'\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "s.py").write_text("s = 1\n")
    (project / "link.py").symlink_to(secret / "s.py")
    (project / "linkdir").symlink_to(secret)
    (project / "inner.py").symlink_to(project / "a.py")
    return secret


async def test_bad_positions_and_paths(open_client: OpenClient, project: Path, files: Path) -> None:
    client = await open_client(project)
    secret = str(files)
    for tool in POSITION_TOOLS:
        # Missing arguments and wrong types.
        error = await failure(client, tool, path="a.py", line=1)
        assert error.kind == "invalid_arguments" and "character" in error.message
        error = await failure(client, tool, path="a.py", line="1", character=1)
        assert error.kind == "invalid_arguments"
        error = await failure(client, tool, path=5, line=1, character=1)
        assert error.kind == "invalid_arguments"
        error = await failure(client, tool, path="a.py", line=1, character=1, bogus=True)
        assert error.kind == "invalid_arguments"
        error = await failure(client, tool, path="a.py", line=True, character=1)
        assert error.kind == "invalid_arguments"
        # Positions: at least 1 and within the file; the message says how long the file is.
        error = await failure(client, tool, path="a.py", line=0, character=1)
        assert error.kind == "invalid_arguments" and "has 2 lines" in error.message
        error = await failure(client, tool, path="a.py", line=9, character=1)
        assert error.kind == "invalid_arguments" and "has 2 lines" in error.message
        error = await failure(client, tool, path="a.py", line=1, character=0)
        assert error.kind == "invalid_arguments" and "5 characters" in error.message
        error = await failure(client, tool, path="a.py", line=2, character=9)
        assert error.kind == "invalid_arguments" and "7 characters" in error.message
        # Paths.
        for path in ("/etc/passwd", "../outside.py", secret + "/s.py", "link.py", "linkdir/s.py"):
            error = await failure(client, tool, path=path, line=1, character=1)
            assert error.kind == "path_outside_project", (tool, path)
            assert secret not in error.message and "/etc" not in error.message
        error = await failure(client, tool, path="missing.py", line=1, character=1)
        assert error.kind == "file_not_found"
        error = await failure(client, tool, path="pkg", line=1, character=1)
        assert error.kind == "invalid_arguments" and "directory" in error.message
        error = await failure(client, tool, path="notes.txt", line=1, character=1)
        assert error.kind == "unsupported_file_type"
        assert "python" in error.message and "go" in error.message
        for path in ("blob.py", "latin.py"):
            error = await failure(client, tool, path=path, line=1, character=1)
            assert (
                error.kind == "unsupported_file_type" and "not a UTF-8 text file" in error.message
            )
        error = await failure(client, tool, path="", line=1, character=1)
        assert error.kind == "invalid_arguments"
    error = await failure(client, "find_references", path="a.py", line=1, character=1,
                          include_declaration="no")  # fmt: skip
    assert error.kind == "invalid_arguments"
    error = await failure(client, "call_hierarchy", path="a.py", line=1, character=1,
                          direction="sideways")  # fmt: skip
    assert error.kind == "invalid_arguments"
    # No session has been asked to start a server for any of it.
    sessions = (await client.call("session/list"))["sessions"]
    assert [s["state"] for s in sessions[0]["servers"]] == []


async def test_bad_symbol_arguments(open_client: OpenClient, project: Path, files: Path) -> None:
    client = await open_client(project)
    error = await failure(client, "get_symbols")
    assert error.kind == "invalid_arguments" and "path" in error.message
    error = await failure(client, "get_symbols", path="a.py", scope="galaxy")
    assert error.kind == "invalid_arguments"
    for limit in (0, -1, 10001):
        error = await failure(client, "get_symbols", path="a.py", limit=limit)
        assert error.kind == "invalid_arguments" and "limit" in error.message
    error = await failure(client, "get_symbols", path="a.py", limit="many")
    assert error.kind == "invalid_arguments"
    error = await failure(client, "get_symbols", path="a.py", query=3)
    assert error.kind == "invalid_arguments"
    for scope in ("document", "workspace"):
        error = await failure(client, "get_symbols", path="link.py", scope=scope)
        assert error.kind == "path_outside_project"
        error = await failure(client, "get_symbols", path="notes.txt", scope=scope)
        assert error.kind == "unsupported_file_type"
        error = await failure(client, "get_symbols", path="blob.py", scope=scope)
        assert error.kind == "unsupported_file_type"
        error = await failure(client, "get_symbols", path="pkg", scope=scope)
        assert error.kind == "invalid_arguments"


async def test_schemas_in_every_format(open_client: OpenClient) -> None:
    client = await open_client()
    native = {t["name"]: t for t in (await client.call("tools/list"))["tools"]}
    for name in (*POSITION_TOOLS, "get_symbols"):
        schema = native[name]["input"]
        assert schema["additionalProperties"] is False
        assert len(native[name]["description"]) > 80
        if name != "get_symbols":  # a position, a line and name, or a name path: none required
            assert {"path", "line", "character", "name", "symbol"} <= set(schema["properties"])
            assert schema["required"] == []
            assert schema["properties"]["line"]["minimum"] == 1
    refs = native["find_references"]["input"]["properties"]["include_declaration"]
    assert refs["type"] == "boolean" and refs["default"] is False
    calls = native["call_hierarchy"]["input"]["properties"]["direction"]
    assert set(calls["enum"]) == {"incoming", "outgoing"}
    symbols = native["get_symbols"]["input"]
    assert symbols["required"] == [] and set(symbols["properties"]["scope"]["enum"]) == {
        "document",
        "workspace",
    }
    for fmt, key in (("openai", None), ("anthropic", "input_schema"), ("mcp", "inputSchema")):
        tools = (await client.call("tools/list", {"format": fmt}))["tools"]
        for item in tools:
            name = item["function"]["name"] if key is None else item["name"]
            schema = item["function"]["parameters"] if key is None else item[key]
            if name in native and REGISTRY.get(name).write_switch is None:
                assert schema == native[name]["input"]
    assert "get_hover_info" in REGISTRY
