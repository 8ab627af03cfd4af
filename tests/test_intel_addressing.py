"""Names instead of columns: a position tool's `symbol` (a name path, with or without
`path`), `line` + `name`, and a character on no identifier snapped to the nearest one (said
in `at`), with errors that name the candidates; the resolution rules first, then real
basedpyright through the socket and MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.intel.addressing import (
    Candidate,
    at_position,
    choose,
    document_candidates,
    on_line,
)
from codeward.daemon.intel.inputs import SourceFile
from codeward.daemon.server import Daemon
from codeward.protocol.errors import ToolError
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcFailure
from tests.test_mcp import agent, git, text_of

TEXT = """\
class HelpFormatter:
    def write(self, text: str) -> None:
        self.buffer.append(text)

    async def indent(self) -> None:
        self.write(  "x")


def write(x: int) -> int:
    return x
"""


def source(text: str = TEXT) -> SourceFile:
    return SourceFile(Path("/r/f.py"), "f.py", "python", text.splitlines(keepends=True))


# -- a line and character ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "character", "name", "at", "by"),
    [
        (2, 9, "write", 9, "position"),  # exact
        (2, 11, "write", 9, "inside"),  # inside the name, not at its start
        (2, 8, "write", 9, "nearest"),  # the space before it
        (2, 5, "write", 9, "nearest"),  # the `def` keyword
        (2, 1, "write", 9, "nearest"),  # the indentation of a declaration's line
        (5, 3, "indent", 15, "nearest"),  # `async def`
        (6, 13, "write", 14, "nearest"),  # `self.write`: the `.` goes with the name after it
        (6, 19, "write", 14, "nearest"),  # `write(`: the bracket goes with the name before it
        (6, 20, "write", 14, "nearest"),  # whitespace inside the call, nearer the name
        (9, 1, "write", 5, "nearest"),
    ],
)
def test_a_character_snaps_to_the_nearest_identifier(
    line: int, character: int, name: str, at: int, by: str
) -> None:
    resolved = at_position(source(), line, character)
    shown = resolved.public()
    assert (shown["name"], shown["line"], shown["character"], shown["by"]) == (name, line, at, by)
    # the servers are asked at the name's start, or inside it where the character was
    assert resolved.character == (character if by == "inside" else at)


def test_a_character_far_from_any_identifier_is_an_error_naming_the_nearest() -> None:
    text = 'x = "' + " " * 30 + '"  # far\n\n'
    with pytest.raises(ToolError) as far:
        at_position(source(text), 1, 20)
    assert far.value.kind.value == "invalid_arguments"
    assert "x (character 1)" in far.value.message and "far (character" in far.value.message
    assert far.value.details["candidates"][0]["name"] in ("x", "far")
    with pytest.raises(ToolError) as blank:
        at_position(source(text), 2, 1)
    assert "the line has none" in blank.value.message


# -- a line and name -----------------------------------------------------------------------------


def test_a_name_on_its_line() -> None:
    found = on_line(source(), 6, "write", None)
    assert (found.line, found.character, found.by) == (6, 14, "name")
    twice = source("a = b(a)\n")
    assert on_line(twice, 1, "a", None).character == 1
    assert on_line(twice, 1, "a", 7).character == 7  # the occurrence nearest `character`
    assert on_line(source(), 2, "def", None).character == 5  # asked for by name: meant
    with pytest.raises(ToolError) as missing:
        on_line(source(), 3, "write", None)
    message = missing.value.message
    assert "its identifiers: self, buffer, append, text" in message
    assert "it is on lines 2, 6, 9" in message
    assert [c["line"] for c in missing.value.details["candidates"]] == [2, 6, 9]


# -- name paths ----------------------------------------------------------------------------------

TREE: list[dict[str, Any]] = [
    {"name": "HelpFormatter", "kind": "class", "line": 1, "character": 7, "children": [
        {"name": "write", "kind": "method", "line": 2, "character": 9, "children": []},
        {"name": "indent", "kind": "method", "line": 5, "character": 15, "children": []},
    ]},
    {"name": "write", "kind": "function", "line": 9, "character": 5, "children": []},
]  # fmt: skip


def test_a_name_path_in_a_file() -> None:
    found = list(document_candidates(TREE, "f.py"))
    assert choose("HelpFormatter.write", found, "here").line == 2
    assert choose("write", found, "here").line == 9  # the top-level one: its whole path
    assert choose("indent", found, "here").line == 5  # the only one ending so
    assert choose("HelpFormatter::indent", found, "here").line == 5
    with pytest.raises(ToolError) as missing:
        choose("HelpFormater.write", found, "in 'f.py'")
    assert "No symbol 'HelpFormater.write' in 'f.py'" in missing.value.message
    assert "HelpFormatter.write" in missing.value.message  # the close ones


def test_an_ambiguous_name_path_lists_the_candidates_and_guesses_nothing() -> None:
    found = [
        Candidate(("A", "run"), "a.py", 3, 9, "method"),
        Candidate(("B", "run"), "b.py", 7, 9, "method"),
    ]
    with pytest.raises(ToolError) as ambiguous:
        choose("run", found, "in the project")
    message = ambiguous.value.message
    assert "'run' names 2 symbols in the project" in message
    assert "A.run (method, a.py:3:9)" in message and "B.run (method, b.py:7:9)" in message
    assert {c["symbol"] for c in ambiguous.value.details["candidates"]} == {"A.run", "B.run"}
    assert choose("B.run", found, "in the project").path == "b.py"


def test_flat_symbols_and_server_spellings() -> None:
    flat = [{"name": "Run", "kind": "method", "line": 4, "character": 2, "container": "Server"}]
    assert [c.chain for c in document_candidates(flat, "s.go")] == [("Server", "Run")]
    go = [{"name": "(*Server).Run", "kind": "method", "line": 4, "character": 18}]
    assert [c.chain for c in document_candidates(go, "s.go")] == [("Server", "Run")]
    java = [{"name": "run(String)", "kind": "method", "line": 4, "character": 17}]
    assert [c.chain for c in document_candidates(java, "A.java")] == [("run",)]


# -- real basedpyright, through the socket, MCP and the CLI --------------------------------------

APP = """\
import abc


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> int: ...


class Impl(Base):
    def run(self) -> int:
        return compute(1)


def compute(value: int) -> int:
    \"\"\"Double the value.\"\"\"
    return value * 2


def caller() -> int:
    return compute(3)+compute(4)
"""
USE = """\
from app import Impl, compute


def main() -> int:
    return Impl().run() + compute(2)
"""


@needs("basedpyright")
async def test_names_through_the_socket(open_client: OpenClient, project: Path) -> None:
    write(project, {"app.py": APP, "use.py": USE})
    client = await open_client(project)
    # a name path with the file: through its document symbols
    found = await client.tool("go_to_definition", path="use.py", symbol="main")
    assert found["definition"]["line"] == 4
    assert found["at"] == {"name": "main", "path": "use.py", "line": 4, "character": 5,
                           "by": "symbol"}  # fmt: skip
    refs = await client.tool("find_references", path="app.py", symbol="compute")
    assert [(r["path"], r["line"]) for r in refs["references"]] == [
        ("app.py", 11), ("app.py", 20), ("app.py", 20), ("use.py", 1), ("use.py", 5)]  # fmt: skip
    # without a file: through the workspace symbols
    hover = await client.tool("get_hover_info", symbol="Impl.run")
    assert hover["at"]["path"] == "app.py" and hover["at"]["line"] == 10
    assert "def run(self: Self@Impl) -> int" in hover["signature"]
    with pytest.raises(RpcFailure) as ambiguous:
        await client.tool("go_to_definition", symbol="run")
    assert ambiguous.value.kind == "invalid_arguments"
    assert "Base.run" in ambiguous.value.message and "Impl.run" in ambiguous.value.message
    with pytest.raises(RpcFailure) as missing:
        await client.tool("go_to_definition", symbol="Impl.walk")
    assert "No symbol 'Impl.walk' in the project" in missing.value.message
    # a line and the name on it
    named = {"path": "use.py", "line": 5, "name": "compute"}
    calls = await client.call("tools/call", {"name": "call_hierarchy", "arguments": named})
    assert calls["item"]["name"] == "compute" and calls["at"]["by"] == "name"
    run = {"path": "app.py", "line": 6, "name": "run"}
    impls = await client.call("tools/call", {"name": "find_implementations", "arguments": run})
    assert ("app.py", 10) in [(i["path"], i["line"]) for i in impls["implementations"]]
    # a column 3 left of a name: the name, said so; never the enclosing call
    snapped = await client.tool("go_to_definition", path="use.py", line=5, character=24)
    assert snapped["definition"]["line"] == 14 and snapped["at"]["by"] == "nearest"
    typed = await client.tool("get_type_definition", path="use.py", line=5, character=11)
    assert typed["at"]["name"] == "Impl"
    with pytest.raises(RpcFailure) as both:
        await client.tool("go_to_definition", path="use.py", symbol="main", line=4)
    assert "not both" in both.value.message
    with pytest.raises(RpcFailure) as nothing:
        await client.tool("go_to_definition", path="use.py", line=4)
    assert "`character` or `name`" in nothing.value.message
    # a rename and a code-action range by name
    renamed = await client.tool("rename_symbol", symbol="caller", new_name="call_it",
                                apply=False)  # fmt: skip
    assert "+def call_it() -> int:" in renamed["diff"] and renamed["at"]["by"] == "symbol"
    actions = await client.tool("get_code_actions", path="app.py", symbol="Impl.run")
    assert isinstance(actions["actions"], list)


@needs("basedpyright")
async def test_names_through_mcp(daemon: Daemon, project: Path) -> None:
    git(project, "init", "-q", "-b", "main")
    write(project, {"app.py": APP, "use.py": USE})
    async with agent(daemon, project) as (session, _):
        with trio.fail_after(60):
            by_name = await session.call_tool("go_to_definition", {"symbol": "compute"})
            snapped = await session.call_tool(
                "find_references", {"path": "use.py", "line": 5, "character": 24}
            )
            far = await session.call_tool(
                "get_hover_info", {"path": "use.py", "line": 3, "character": 1}
            )
    assert not by_name.is_error, text_of(by_name)
    assert text_of(by_name).startswith("app.py:14:5: def compute(value: int) -> int:")
    assert "(at compute app.py:14:5 (the symbol given))" in text_of(by_name)
    assert "(at compute use.py:5:27 (the identifier nearest the character given))" in text_of(
        snapped
    )
    assert far.is_error and "on no identifier" in text_of(far)
    assert text_of(far).endswith("[invalid_arguments]")
