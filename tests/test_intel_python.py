"""The code-intelligence tools end to end on Python, with basedpyright and ruff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OpenClient
from tests.intel_support import leaks, pos, where, write
from tests.lsp_support import needs
from tests.rpc import RpcFailure

pytestmark = needs("basedpyright")

SHAPES = '''\
import abc


class Shape(abc.ABC):
    """A shape in the plane."""

    @abc.abstractmethod
    def area(self) -> float:
        """The area of the shape."""


class Square(Shape):
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side


class Circle(Shape):
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return 3.14 * self.radius**2


def helper(x: int) -> int:
    """Double x."""
    return x * 2
'''

UTIL = """\
from pkg.shapes import helper


def twice(x: int) -> int:
    return helper(helper(x))
"""

APP = """\
import os.path

import extpkg
import inpkg.core
import plainlib
from pkg import util
from pkg.shapes import Square, helper


def main() -> None:
    sq = Square(2.0)
    print(helper(3), sq.area(), util.twice(1))
    print(os.path.join("a", "b"))
    print(extpkg.ext_func(), inpkg.core.in_func(), plainlib.plain_func())
"""


@pytest.fixture
def py_project(project: Path, tmp_path: Path) -> dict[str, Path]:
    """A three-file package, a `.venv` inside the root, and libraries outside it."""
    outside_venv = tmp_path / "outside-venv" / "lib" / "python3.11" / "site-packages"
    plain = tmp_path / "plain-dir"
    write(
        project,
        {
            "pkg/__init__.py": "",
            "pkg/shapes.py": SHAPES,
            "pkg/util.py": UTIL,
            "app.py": APP,
            ".venv/lib/python3.11/site-packages/inpkg/__init__.py": "",
            ".venv/lib/python3.11/site-packages/inpkg/core.py": (
                "def in_func() -> int:\n    return 1\n"
            ),
            "pyrightconfig.json": json.dumps(
                {
                    "extraPaths": [
                        ".venv/lib/python3.11/site-packages",
                        str(outside_venv),
                        str(plain),
                    ]
                }
            ),
        },
    )
    write(outside_venv, {"extpkg/__init__.py": "def ext_func() -> int:\n    return 2\n"})
    write(plain, {"plainlib.py": "def plain_func() -> int:\n    return 3\n"})
    return {"outside": outside_venv, "plain": plain, "tmp": tmp_path}


async def call(client: Any, name: str, root: Path, file: str, needle: str, **extra: Any) -> Any:
    line, character = pos(root, file, needle, extra.pop("nth", 1), extra.pop("offset", 0))
    return await client.tool(name, path=file, line=line, character=character, **extra)


async def test_definitions_and_output_paths(
    open_client: OpenClient, project: Path, py_project: dict[str, Path]
) -> None:
    client = await open_client(project)
    # A function in another project file.
    result = await call(client, "go_to_definition", project, "app.py", "helper(3)")
    assert result["status"] == "found" and result["count"] == 1
    assert where(result["definition"]) == (
        "pkg/shapes.py",
        pos(project, "pkg/shapes.py", "def helper")[0],
    )
    assert result["definition"]["preview"] == "def helper(x: int) -> int:"
    assert result["definition"]["character"] == 5 and result["definition"]["end_character"] == 11
    # A module.
    result = await call(client, "go_to_definition", project, "app.py", "util.twice")
    assert [d["path"] for d in _all(result, "definition")] == ["pkg/util.py"]
    # The standard library becomes an indicator.
    result = await call(client, "go_to_definition", project, "app.py", "join(")
    assert result["status"] == "found"
    assert {d["path"] for d in _all(result, "definition")} <= {"python:posixpath", "python:ntpath"}
    assert "python:posixpath" in {d["path"] for d in _all(result, "definition")}
    assert all(d["preview"].startswith("def join") for d in _all(result, "definition"))
    # A package in a virtualenv outside the root: an indicator, its path never shown.
    result = await call(client, "go_to_definition", project, "app.py", "ext_func")
    assert [d["path"] for d in _all(result, "definition")] == ["python:extpkg"]
    # A package in `.venv` inside the root stays a relative path.
    result = await call(client, "go_to_definition", project, "app.py", "in_func")
    assert [where(d) for d in _all(result, "definition")] == [
        (".venv/lib/python3.11/site-packages/inpkg/core.py", 1)
    ]
    # Anything else outside the root is dropped without a trace.
    result = await call(client, "go_to_definition", project, "app.py", "plain_func")
    assert result == {"status": "not_found", "count": 0, "partial": False, "restricted": True}
    hover = await call(client, "get_hover_info", project, "app.py", "plain_func")
    assert hover["status"] == "found" and "plain_func" in hover["signature"]
    # Type definition of a variable.
    result = await call(client, "get_type_definition", project, "app.py", "sq =")
    assert where(result["type_definition"]) == ("pkg/shapes.py", 12)
    assert result["type_definition"]["preview"] == "class Square(Shape):"
    # A keyword names no symbol: the name beside it is answered for, and `at` says so.
    result = await call(client, "go_to_definition", project, "app.py", "def main")
    assert where(result["definition"]) == ("app.py", 10)
    assert result["at"] == {"name": "main", "path": "app.py", "line": 10, "character": 5,
                            "by": "nearest"}  # fmt: skip
    outside = [py_project["outside"], py_project["plain"], py_project["tmp"]]
    for name in ("ext_func", "plain_func", "join("):
        for tool in ("go_to_definition", "get_hover_info", "find_references"):
            assert not leaks(await call(client, tool, project, "app.py", name), *outside)


def _all(result: dict[str, Any], one: str) -> list[dict[str, Any]]:
    return result.get(one + "s") or ([result[one]] if one in result else [])


async def test_references_and_implementations(
    open_client: OpenClient, project: Path, py_project: dict[str, Path]
) -> None:
    client = await open_client(project)
    helper_def = pos(project, "pkg/shapes.py", "def helper")[0]
    # From the definition: uses in three files, the declaration left out by default.
    result = await call(client, "find_references", project, "pkg/shapes.py", "helper(x")
    found = [where(r) for r in result["references"]]
    assert ("pkg/shapes.py", helper_def) not in found
    assert found == [
        ("app.py", 7),
        ("app.py", 12),
        ("pkg/util.py", 1),
        ("pkg/util.py", 5),
        ("pkg/util.py", 5),
    ]
    assert result["count"] == 5 and result["status"] == "found"
    assert result["references"][0]["preview"] == "from pkg.shapes import Square, helper"
    # From a use: the same set (basedpyright alone would only drop the cursor's occurrence).
    from_use = await call(client, "find_references", project, "app.py", "helper(3)")
    assert [where(r) for r in from_use["references"]] == found
    with_decl = await call(
        client, "find_references", project, "app.py", "helper(3)", include_declaration=True
    )
    assert [where(r) for r in with_decl["references"]] == sorted(
        [*found, ("pkg/shapes.py", helper_def)]
    )
    assert with_decl["count"] == 6
    # Implementations of an abstract method.
    result = await call(client, "find_implementations", project, "pkg/shapes.py", "area")
    lines = {where(i) for i in result["implementations"]}
    overrides = {("pkg/shapes.py", pos(project, "pkg/shapes.py", "def area", n)[0]) for n in (2, 3)}
    assert overrides <= lines
    assert result["count"] == len(result["implementations"])
    assert all(i["preview"] == "def area(self) -> float:" for i in result["implementations"])
    # A symbol used nowhere.
    result = await call(client, "find_references", project, "app.py", "main")
    assert result == {
        "status": "not_found",
        "references": [],
        "count": 0,
        "partial": False,
        "restricted": True,
    }


async def test_hover_symbols_and_calls(
    open_client: OpenClient, project: Path, py_project: dict[str, Path]
) -> None:
    client = await open_client(project)
    # Hover on a project function: signature, docs, module and range.
    result = await call(client, "get_hover_info", project, "app.py", "helper(3)")
    assert result["status"] == "found"
    assert result["signature"] == "def helper(x: int) -> int"
    assert result["kind"] == "function" and result["docs"] == "Double x."
    assert result["module"] == "pkg.shapes"
    line, character = pos(project, "app.py", "helper(3)")
    assert result["range"] == {
        "line": line,
        "character": character,
        "end_line": line,
        "end_character": character + 6,
    }
    assert "```python" in result["markdown"]
    # Hover on a stdlib function.
    result = await call(client, "get_hover_info", project, "app.py", "join(")
    assert result["signature"].startswith("def join(") and result["module"] in (
        "posixpath",
        "ntpath",
    )
    assert "pathname components" in result["docs"]
    # A variable's type.
    result = await call(client, "get_hover_info", project, "app.py", "sq =")
    assert (result["kind"], result["type"]) == ("variable", "Square")
    # Blank space names nothing: an error that says so, never an empty answer.
    with pytest.raises(RpcFailure) as blank:
        await client.tool("get_hover_info", path="app.py", line=2, character=1)
    assert blank.value.kind == "invalid_arguments"
    assert "on no identifier" in blank.value.message and "line has none" in blank.value.message
    # Document symbols: a tree with kinds, name positions and ranges.
    result = await client.tool("get_symbols", path="pkg/shapes.py")
    tree = {s["name"]: s for s in result["symbols"]}
    assert list(tree) == ["abc", "Shape", "Square", "Circle", "helper"] or list(tree) == [
        "Shape",
        "Square",
        "Circle",
        "helper",
    ]
    assert tree["Shape"]["kind"] == "class" and (
        tree["Shape"]["line"],
        tree["Shape"]["character"],
    ) == (4, 7)
    assert tree["Shape"]["range"]["line"] == 4 and tree["Shape"]["range"]["end_line"] == 9
    assert [(c["name"], c["kind"]) for c in tree["Square"]["children"]][:2] == [
        ("__init__", "method"),
        ("area", "method"),
    ]
    assert tree["helper"]["kind"] == "function"
    assert result["count"] >= 9 and result["truncated"] is False
    limited = await client.tool("get_symbols", path="pkg/shapes.py", limit=2)
    assert limited["count"] == 2 and limited["truncated"] is True
    # Workspace symbols: path, container, kind.
    result = await client.tool("get_symbols", scope="workspace", query="area")
    found = {(s["path"], s["line"], s["kind"], s["container"]) for s in result["symbols"]}
    square_area = pos(project, "pkg/shapes.py", "def area", 2)[0]
    assert ("pkg/shapes.py", square_area, "method", "Square") in found
    # a decorator before the name and a docstring after it: found at the name
    shape_area = pos(project, "pkg/shapes.py", "area")
    assert [
        (s["line"], s["character"]) for s in result["symbols"] if s["container"] == "Shape"
    ] == [shape_area]
    assert result["symbols"][0]["name"] == "area"
    result = await client.tool("get_symbols", scope="workspace", query="Circle", limit=1)
    assert [(s["name"], s["path"], s["kind"]) for s in result["symbols"]] == [
        ("Circle", "pkg/shapes.py", "class")
    ]
    # Incoming calls: every call site, named after its caller.
    result = await call(client, "call_hierarchy", project, "pkg/shapes.py", "helper(x")
    assert result["status"] == "found" and result["direction"] == "incoming"
    assert [(c["name"], c["path"], c["line"]) for c in result["calls"]] == [
        ("main", "app.py", 12),
        ("twice", "pkg/util.py", 5),
        ("twice", "pkg/util.py", 5),
    ]
    assert result["calls"][0]["preview"].startswith("print(helper(3)")
    assert result["item"]["name"] == "helper"
    # Outgoing calls from `twice`: helper, at its definition, with the call sites.
    result = await call(
        client, "call_hierarchy", project, "pkg/util.py", "twice", direction="outgoing"
    )
    callees = {c["name"]: c for c in result["calls"]}
    assert where(callees["helper"]) == (
        "pkg/shapes.py",
        pos(project, "pkg/shapes.py", "def helper")[0],
    )
    assert [s["line"] for s in callees["helper"]["call_sites"]] == [5, 5]
