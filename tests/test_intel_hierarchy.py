"""signature_help and type_hierarchy on Python (basedpyright) and C++ (clangd), through the
socket and as MCP text: the signatures of a call being written, and "not supported" said as
such by a server without type hierarchy (basedpyright: not offered; clangd 14: offered, yet
answered "method not found")."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.protocol.render.tool_text import tool_text
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.lsp_support import needs
from tests.rpc import RpcFailure

PY = {
    "shapes.py": (
        "class Shape:\n"
        "    pass\n\n\n"
        "class Square(Shape):\n"
        "    pass\n\n\n"
        "def scale(value: int, factor: float = 2.0) -> float:\n"
        '    """Scale value by factor."""\n'
        "    return value * factor\n\n\n"
        "result = scale(3, )\n"
    ),
}


@needs("basedpyright")
async def test_python_signature_help_and_no_type_hierarchy(
    open_client: OpenClient, project: Path
) -> None:
    write(project, PY)
    client = await open_client(project)
    line, character = pos(project, "shapes.py", "scale(3, ", offset=len("scale(3, "))
    helped = await client.tool("signature_help", path="shapes.py", line=line, character=character)
    assert helped["status"] == "found" and not helped["partial"]
    (signature,) = helped["signatures"]
    assert signature["label"] == "(value: int, factor: float = 2) -> float"
    assert [p["label"] for p in signature["parameters"]] == ["value: int", "factor: float = 2"]
    assert helped["active_parameter"] == 1  # after the comma: the second parameter
    assert "Scale value by factor." in signature["docs"]
    text = tool_text("signature_help", helped)
    assert text.splitlines()[:2] == [
        "(value: int, factor: float = 2) -> float",
        "  at parameter 2: factor: float = 2",
    ]
    # Outside any call: nothing to show, said so.
    line, character = pos(project, "shapes.py", "class Square")
    nothing = await client.tool("signature_help", path="shapes.py", line=line, character=character)
    assert (nothing["status"], nothing["signatures"], nothing["partial"]) == (
        "not_found",
        [],
        False,
    )
    # basedpyright has no type hierarchy: an error that says so, never an empty answer.
    line, character = pos(project, "shapes.py", "Square")
    with pytest.raises(RpcFailure) as raised:
        await client.tool("type_hierarchy", path="shapes.py", line=line, character=character)
    assert raised.value.kind == "unsupported_by_server"
    assert raised.value.data["server"] == "basedpyright"
    assert "prepareTypeHierarchy" in raised.value.message
    # Bad input: a direction that does not exist, a position past the line.
    with pytest.raises(RpcFailure) as raised:
        await client.tool(
            "type_hierarchy", path="shapes.py", line=line, character=character, direction="up"
        )
    assert raised.value.kind == "invalid_arguments"
    with pytest.raises(RpcFailure) as raised:
        await client.tool("signature_help", path="shapes.py", line=line, character=500)
    assert raised.value.kind == "invalid_arguments"


@needs("clangd")
async def test_a_server_that_offers_a_method_it_lacks_is_unsupported(
    open_client: OpenClient, project: Path
) -> None:
    write(project, {"a.cpp": "struct Base {};\nstruct Leaf : Base {};\nint f(int a, int b);\n"
                             "int g() { return f(1, 2); }\n"})  # fmt: skip
    client = await open_client(project)
    line, character = pos(project, "a.cpp", "Leaf")
    with pytest.raises(RpcFailure) as raised:
        await client.tool("type_hierarchy", path="a.cpp", line=line, character=character)
    assert raised.value.kind == "unsupported_by_server"  # clangd 14: "method not found"
    assert raised.value.data["server"] == "clangd"
    line, character = pos(project, "a.cpp", "f(1, 2", offset=len("f(1, "))
    helped = await client.tool("signature_help", path="a.cpp", line=line, character=character)
    assert helped["signatures"][0]["label"] == "f(int a, int b) -> int"
    assert helped["active_parameter"] == 1


def test_type_hierarchy_text() -> None:
    result = {
        "status": "found",
        "direction": "subtypes",
        "item": {"name": "Shape", "path": "a.java", "line": 3, "character": 18},
        "types": [
            {"name": "Square", "kind": "class", "path": "b.java", "line": 3, "character": 14,
             "preview": "public class Square implements Shape {"},
        ],
        "count": 1,
        "partial": False,
    }  # fmt: skip
    assert tool_text("type_hierarchy", result).splitlines() == [
        "1 subtype of Shape",
        "b.java:3:14: class Square: public class Square implements Shape {",
    ]
