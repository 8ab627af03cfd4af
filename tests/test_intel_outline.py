"""Everyday answers on a src-layout project, on real basedpyright: the symbol outline (and
all/kinds/depth), references without a standard-library stub's declaration, the hover's
module and kind, and typeshed stubs inside the project's `.venv` shown as the standard
library."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.intel.locations import Locator
from codeward.daemon.intel.symbols import Outline
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.shapes import result_type, structure
from codeward.daemon.tools.hover import module_of
from codeward.daemon.tools.references import DeclarationSites
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.lsp_support import needs
from tests.rpc import RpcFailure

CORE = '''\
import copy
import re


class Command:
    """A command."""

    def __init__(self, name: str) -> None:
        self.name = name

    def invoke(self, args: list[str]) -> str:
        local = copy.copy(args)
        found = re.match("a", "b")
        return str(len(local)) + str(found)


def helper(value: int) -> int:
    def inner(step: int) -> int:
        return step

    doubled = inner(value) * 2
    return doubled


LIMIT = 3
'''

APP = """\
from click.core import Command, helper

Command("x").invoke([])
helper(2)
"""

SITE = ".venv/lib/python3.11/site-packages"
TYPESHED = f"{SITE}/basedpyright/dist/typeshed-fallback"


def bundled_typeshed() -> Path:
    """The stdlib stubs basedpyright ships (copied into the project's `.venv`)."""
    spec = importlib.util.find_spec("basedpyright")
    if spec is not None and spec.origin is not None:
        typeshed = Path(spec.origin).parent / "dist" / "typeshed-fallback"
        if (typeshed / "stdlib" / "builtins.pyi").exists():
            return typeshed
    pytest.skip("basedpyright's bundled typeshed was not found")


@pytest.fixture
def src_project(project: Path) -> Path:
    write(
        project,
        {
            "pyproject.toml": '[project]\nname = "click"\nversion = "1"\n',
            "src/click/__init__.py": "",
            "src/click/core.py": CORE,
            "app.py": APP,
            "pyrightconfig.json": json.dumps({"extraPaths": ["src"], "typeshedPath": TYPESHED}),
        },
    )
    typeshed = bundled_typeshed()
    shutil.copytree(typeshed / "stdlib", project / TYPESHED / "stdlib")
    (project / TYPESHED / "stubs").mkdir()
    return project


def names(symbols: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for symbol in symbols:
        found.add(symbol["name"])
        found |= names(symbol.get("children") or [])
    return found


CORE_PATH = "src/click/core.py"


@needs("basedpyright")
async def test_symbols_default_to_the_outline(open_client: OpenClient, src_project: Path) -> None:
    client = await open_client(src_project)
    core = CORE_PATH
    # 9. The outline: classes, functions, methods, module names; no parameters or locals.
    result = await client.tool("get_symbols", path=core)
    tree = {s["name"]: s for s in result["symbols"]}
    assert {"Command", "helper", "LIMIT"} <= set(tree)
    # Methods and the instance attribute: what a reader of the class wants.
    assert [c["name"] for c in tree["Command"]["children"]] == ["__init__", "invoke", "name"]
    assert all(c["children"] == [] for c in tree["Command"]["children"])
    assert tree["helper"]["children"] == []
    hidden = {"self", "args", "local", "found", "value", "doubled", "inner", "step"}
    assert not names(result["symbols"]) & hidden
    assert result["count"] == len(names(result["symbols"])) or result["count"] >= 6
    everything = await client.tool("get_symbols", path=core, all=True)
    assert hidden - {"self"} <= names(everything["symbols"])
    assert everything["count"] > result["count"]
    classes = await client.tool("get_symbols", path=core, kinds=["class"])
    assert [(s["name"], s["children"]) for s in classes["symbols"]] == [("Command", [])]
    methods = await client.tool("get_symbols", path=core, kinds=["method"])
    assert [s["name"] for s in methods["symbols"]] == ["Command"]  # the container, kept
    assert [c["name"] for c in methods["symbols"][0]["children"]] == ["__init__", "invoke"]
    top = await client.tool("get_symbols", path=core, depth=1, all=True)
    assert all(s["children"] == [] for s in top["symbols"]) and "Command" in names(top["symbols"])
    two = await client.tool("get_symbols", path=core, depth=2, all=True)
    assert "invoke" in names(two["symbols"]) and "local" not in names(two["symbols"])
    for bad in ({"depth": 0}, {"kinds": ["bogus"]}, {"all": "yes"}):
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_symbols", path=core, **bad)
        assert info.value.kind == "invalid_arguments"
    # The same for workspace symbols: a local is found only when asked for everything.
    for query in ("doubled", "local", "step"):
        found = await client.tool("get_symbols", scope="workspace", query=query)
        assert query not in {s["name"] for s in found["symbols"]}, query
        found = await client.tool("get_symbols", scope="workspace", query=query, all=True)
        assert query in {s["name"] for s in found["symbols"]}, query
    found = await client.tool("get_symbols", scope="workspace", query="LIMIT")
    assert [(s["name"], s["path"]) for s in found["symbols"]] == [("LIMIT", core)]
    found = await client.tool("get_symbols", scope="workspace", query="invoke")
    assert [(s["name"], s["kind"]) for s in found["symbols"]] == [("invoke", "method")]
    found = await client.tool("get_symbols", scope="workspace", query="Com", kinds=["class"])
    assert [(s["name"], s["kind"]) for s in found["symbols"]] == [("Command", "class")]


@needs("basedpyright")
async def test_references_leave_out_stub_declarations(
    open_client: OpenClient, src_project: Path
) -> None:
    root, core = src_project, CORE_PATH
    client = await open_client(root)
    # 10. References without the declaration: neither the stub's (.pyi) nor the source's.
    for needle in ("copy(args", "match("):
        line, character = pos(root, core, needle)
        refs = await client.tool("find_references", path=core, line=line, character=character)
        assert [(r["path"], r["line"]) for r in refs["references"]] == [(core, line)], needle
        full = await client.tool(
            "find_references", path=core, line=line, character=character, include_declaration=True
        )
        assert len(full["references"]) > 1
        assert {r["path"] for r in full["references"]} - {core} <= {"python:copy", "python:re"}


@needs("basedpyright")
async def test_hover_module_and_kind_on_a_src_layout(
    open_client: OpenClient, src_project: Path
) -> None:
    root = src_project
    client = await open_client(root)
    # 11. The hover's module follows the package chain (src/ is no package); classes have a kind.
    line, character = pos(root, "app.py", "Command(")
    hover = await client.tool("get_hover_info", path="app.py", line=line, character=character)
    assert (hover["module"], hover["kind"]) == ("click.core", "class")
    line, character = pos(root, "app.py", "helper(2")
    hover = await client.tool("get_hover_info", path="app.py", line=line, character=character)
    assert (hover["module"], hover["kind"]) == ("click.core", "function")


@needs("basedpyright")
async def test_typeshed_in_the_project_venv_is_the_standard_library(
    open_client: OpenClient, src_project: Path
) -> None:
    root, core = src_project, CORE_PATH
    client = await open_client(root)
    # 12. Outgoing calls into typeshed inside the project's .venv: the standard library.
    line, character = pos(root, core, "invoke")
    calls = await client.tool(
        "call_hierarchy", path=core, line=line, character=character, direction="outgoing"
    )
    paths = {c["name"]: c["path"] for c in calls["calls"]}
    assert paths["copy"] == "python:copy" and paths["match"] == "python:re"
    assert paths["len"] == "python:builtins"
    assert ".venv" not in json.dumps(calls)
    line, character = pos(root, core, "len(")
    definition = await client.tool("go_to_definition", path=core, line=line, character=character)
    assert definition["definition"]["path"] == "python:builtins"


def test_outline_selects_trees_and_flat_lists() -> None:
    def symbol(name: str, kind: int, first: int, last: int, *children: Any) -> dict[str, Any]:
        rng = {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 9}}
        return {
            "name": name,
            "kind": kind,
            "range": rng,
            "selectionRange": rng,
            "children": list(children),
        }

    tree = [
        symbol("C", 5, 0, 9, symbol("m", 6, 1, 4, symbol("p", 13, 1, 1)), symbol("a", 13, 5, 5)),
        symbol("f", 12, 10, 12, symbol("x", 13, 11, 11)),
        symbol("V", 13, 13, 13),
    ]

    def shape(outline: Outline) -> list[Any]:
        return [(s.name, shape_children(s)) for s in outline.select(typed(tree))]

    def shape_children(s: Any) -> list[Any]:
        return [(c.name, shape_children(c)) for c in s.children]

    def typed(items: list[dict[str, Any]]) -> Any:
        return structure(items, result_type("textDocument/documentSymbol"))

    assert shape(Outline()) == [("C", [("m", []), ("a", [])]), ("f", []), ("V", [])]
    assert shape(Outline(all=True, depth=2)) == [
        ("C", [("m", []), ("a", [])]),
        ("f", [("x", [])]),
        ("V", []),
    ]
    assert shape(Outline(kinds=frozenset({"variable"}))) == [("C", [("a", [])]), ("V", [])]
    assert shape(Outline(kinds=frozenset({"variable"}), all=True)) == [
        ("C", [("m", [("p", [])]), ("a", [])]),
        ("f", [("x", [])]),
        ("V", []),
    ]
    assert shape(Outline(depth=1)) == [("C", []), ("f", []), ("V", [])]
    # Flat SymbolInformation: what lies inside a function's range is a parameter or a local.
    flat = [
        {"name": n, "kind": k, "location": {"uri": "file:///m.py", "range": s["range"]}}
        for n, k, s in (("f", 12, tree[1]), ("x", 13, tree[1]["children"][0]), ("V", 13, tree[2]))
    ]
    assert [s.name for s in Outline().select(typed(flat))] == ["f", "V"]
    assert [s.name for s in Outline(all=True).select(typed(flat))] == ["f", "x", "V"]
    assert [s.name for s in Outline(kinds=frozenset({"variable"})).select(typed(flat))] == ["V"]
    assert Outline(depth=1).select(None) == [] and Outline().select([]) == []


class _Lines:
    """A stand-in manager: positions convert one to one."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def to_client(self, uri: str, position: Any, encoding: str) -> tuple[int, int]:
        if isinstance(position, dict):
            return position["line"] + 1, position["character"] + 1
        return position.line + 1, position.character + 1


def test_declarations_never_match_across_files_under_one_indicator(tmp_path: Path) -> None:
    from codeward.daemon.lsp.types import Location, Position, Range

    stub = tmp_path / "typeshed" / "stdlib" / "copy.pyi"
    source = tmp_path / "lib" / "python3.11" / "copy.py"
    for path in (stub, source):
        path.parent.mkdir(parents=True)
        path.write_text("")

    def at(line: int) -> dict[str, Any]:
        return {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 8}}

    manager: Any = _Lines(tmp_path)
    declared = Answer("s", [{"uri": stub.as_uri(), "range": at(20)}], False, "utf-16", manager)
    defined = Answer("s", [{"uri": source.as_uri(), "range": at(60)}], False, "utf-16", manager)
    sites = DeclarationSites(manager, [declared, defined], Locator(manager))

    def ref(path: Path, line: int) -> Location:
        return Location(path.as_uri(), Range(Position(line, 4), Position(line, 8)))

    assert sites.holds(ref(stub, 20), "utf-16") and sites.holds(ref(source, 60), "utf-16")
    # Both files are `python:copy`, but line 60 of the stub and 20 of the source are uses.
    assert not sites.holds(ref(stub, 60), "utf-16")
    assert not sites.holds(ref(source, 20), "utf-16")
    assert not sites.holds(ref(tmp_path / "other.py", 20), "utf-16")


def test_module_of_follows_the_package_chain(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/click/__init__.py": "",
            "src/click/core.py": "",
            "src/click/sub/__init__.pyi": "",
            "src/click/sub/x.py": "",
            "scripts/run.py": "",
            "top.py": "",
        },
    )
    assert module_of("src/click/core.py", "python", tmp_path) == "click.core"
    assert module_of("src/click/__init__.py", "python", tmp_path) == "click"
    assert module_of("src/click/sub/x.py", "python", tmp_path) == "click.sub.x"
    assert module_of("scripts/run.py", "python", tmp_path) == "run"
    assert module_of("top.py", "python", tmp_path) == "top"
    assert module_of(f"{SITE}/inpkg/core.py", "python", tmp_path) == "inpkg.core"
    assert module_of("python:os.path", "python", tmp_path) == "os.path"


def test_typeshed_inside_the_root_is_the_standard_library(tmp_path: Path) -> None:
    manager: Any = type("M", (), {"root": tmp_path})()
    locator = Locator(manager)
    stub = tmp_path / TYPESHED / "stdlib" / "os" / "path.pyi"
    third = tmp_path / TYPESHED / "stubs" / "requests" / "requests" / "api.pyi"
    plain = tmp_path / SITE / "inpkg" / "core.py"
    for path in (stub, third, plain):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    assert locator.place(stub.as_uri()) == ("python:os.path", False)
    assert locator.place(third.as_uri()) == ("python:requests.api", False)
    assert locator.place(plain.as_uri()) == (f"{SITE}/inpkg/core.py", True)
