"""The edit tools end to end on Python: ruff formats and fixes, basedpyright renames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import codeward.daemon.tools.edits as edit_tools
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

UGLY = "import os\nx=[1,2,\n  3]\ndef f( a ):\n    return a*2\n"
PRETTY = "import os\n\nx = [1, 2, 3]\n\n\ndef f(a):\n    return a * 2\n"


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    return info.value


@needs("ruff")
async def test_format_with_ruff(client: RpcClient, project: Path) -> None:
    write(project, {"ugly.py": UGLY, "pretty.py": PRETTY})
    # A dry run shows the diff and writes nothing.
    result = await client.tool("format_code", path="ugly.py", apply=False)
    assert result["changed"] and not result["applied"]
    assert result["diff"].startswith("--- a/ugly.py\n+++ b/ugly.py\n")
    assert "-x=[1,2,\n" in result["diff"] and "+x = [1, 2, 3]\n" in result["diff"]
    assert (project / "ugly.py").read_text() == UGLY
    # Range formatting touches only those lines.
    result = await client.tool("format_code", path="ugly.py", start_line=4, end_line=5)
    assert result["changed"] and result["applied"]
    text = (project / "ugly.py").read_text()
    assert "def f(a):\n    return a * 2\n" in text and "x=[1,2," in text
    # The whole file; the diff is the one of the change made.
    result = await client.tool("format_code", path="ugly.py")
    assert result["changed"] and result["applied"] and "+x = [1, 2, 3]" in result["diff"]
    assert (project / "ugly.py").read_text() == PRETTY
    # Formatted already: nothing to do.
    result = await client.tool("format_code", path="pretty.py")
    assert result == {"changed": False, "diff": "", "applied": False, "restricted": True}
    # Bad ranges.
    err = await failure(client, "format_code", path="ugly.py", start_line=5, end_line=2)
    assert err.kind == "invalid_arguments" and "before" in err.message
    err = await failure(client, "format_code", path="ugly.py", start_line=1, end_line=99)
    assert err.kind == "invalid_arguments" and "Line 99" in err.message


@needs("ruff")
async def test_stale_between_compute_and_apply(
    client: RpcClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone writes the file after the server computed the edit and before it is written."""
    write(project, {"ugly.py": UGLY})
    real = edit_tools.apply_workspace_edit

    async def meddle(*args: Any, **kwargs: Any) -> Any:
        (project / "ugly.py").write_text(UGLY + "y = 2\n")
        return await real(*args, **kwargs)

    monkeypatch.setattr(edit_tools, "apply_workspace_edit", meddle)
    err = await failure(client, "format_code", path="ugly.py")
    assert err.kind == "stale_edit" and err.data["path"] == "ugly.py"
    assert (project / "ugly.py").read_text() == UGLY + "y = 2\n"


@needs("ruff", "basedpyright")
async def test_code_actions_remove_unused_import(client: RpcClient, project: Path) -> None:
    source = "import os\nimport sys\n\nprint(sys.argv)\n"
    write(project, {"m.py": source})
    result = await client.tool("get_code_actions", path="m.py", line=1)
    actions = result["actions"]
    assert [a["index"] for a in actions] == list(range(len(actions)))
    titles = [a["title"] for a in actions]
    remove = next(a for a in actions if "Remove unused import" in a["title"])
    assert remove["kind"] == "quickfix" and remove["server"] == "ruff"
    assert [(d["code"], d["line"], d["column"]) for d in remove["diagnostics"]] == [("F401", 1, 8)]
    assert any(a["server"] == "basedpyright" for a in actions)
    # Only quick fixes; sub-kinds match their parent kind.
    fixes = await client.tool("get_code_actions", path="m.py", line=1, kinds=["quickfix"])
    assert {a["kind"] for a in fixes["actions"]} == {"quickfix"}
    sources = await client.tool("get_code_actions", path="m.py", line=1, kinds=["source.fixAll"])
    assert [a["kind"] for a in sources["actions"]] == ["source.fixAll.ruff"]
    # Wrong choices.
    err = await failure(client, "get_code_actions", path="m.py", line=1, apply="No such fix")
    assert err.kind == "invalid_arguments" and "No such fix" in err.message
    assert titles[0] in err.message
    err = await failure(client, "get_code_actions", path="m.py", line=1, apply=len(actions))
    assert err.kind == "invalid_arguments" and f"0 to {len(actions) - 1}" in err.message
    err = await failure(client, "get_code_actions", path="m.py", line=1, apply=-1)
    assert err.kind == "invalid_arguments"
    err = await failure(client, "get_code_actions", path="m.py", line=9)
    assert err.kind == "invalid_arguments"
    assert (project / "m.py").read_text() == source
    # Apply by exact title.
    result = await client.tool("get_code_actions", path="m.py", line=1, apply=remove["title"])
    assert result["applied"] and result["files_changed"] == ["m.py"]
    assert result["action"] == {"index": remove["index"], "title": remove["title"]}
    assert "-import os\n" in result["diff"]
    assert (project / "m.py").read_text() == "import sys\n\nprint(sys.argv)\n"
    # A source action that the server resolves before it has an edit: by index.
    (project / "m.py").write_text("import os\nimport sys\nprint(sys.argv)\n")
    listed = await client.tool("get_code_actions", path="m.py", line=1, kinds=["source.fixAll"])
    index = listed["actions"][0]["index"]
    result = await client.tool(
        "get_code_actions", path="m.py", line=1, kinds=["source.fixAll"], apply=index
    )
    assert result["applied"] and result["files_changed"] == ["m.py"]
    assert (project / "m.py").read_text() == "import sys\n\nprint(sys.argv)\n"
    diagnostics = await client.tool("get_diagnostics", path="m.py")
    assert [d for d in diagnostics["diagnostics"] if d["code"] == "F401"] == []


RENAME_FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def compute(x: int) -> int:\n    return x + 1\n",
    "pkg/use_one.py": "from pkg.core import compute\n\nprint(compute(1))\n",
    "pkg/use_two.py": "from pkg import core\n\nVALUE = core.compute(2) + core.compute(3)\n",
}


@needs("basedpyright")
async def test_rename_across_files(client: RpcClient, project: Path) -> None:
    write(project, RENAME_FILES)
    line, character = pos(project, "pkg/core.py", "compute")
    # A dry run first.
    result = await client.tool(
        "rename_symbol",
        path="pkg/core.py",
        line=line,
        character=character,
        new_name="calculate",
        apply=False,
    )
    assert result["files_changed"] == ["pkg/core.py", "pkg/use_one.py", "pkg/use_two.py"]
    assert result["edits"] == 5 and not result["applied"]
    assert (project / "pkg/core.py").read_text() == RENAME_FILES["pkg/core.py"]
    result = await client.tool(
        "rename_symbol", path="pkg/core.py", line=line, character=character, new_name="calculate"
    )
    assert result["applied"] and result["edits"] == 5
    assert result["files_changed"] == ["pkg/core.py", "pkg/use_one.py", "pkg/use_two.py"]
    assert "+++ b/pkg/use_two.py" in result["diff"]
    assert "+VALUE = core.calculate(2) + core.calculate(3)" in result["diff"]
    for name in result["files_changed"]:
        text = (project / name).read_text()
        assert "calculate" in text and "compute" not in text, name
    for name in ("pkg/use_one.py", "pkg/use_two.py"):
        found = await client.tool("get_diagnostics", path=name, severity="error")
        assert found["diagnostics"] == [], found
    # Nothing to rename on a blank line: said before any server is asked.
    (project / "pkg/blank.py").write_text("x = 1\n\nprint(x)\n")
    err = await failure(
        client, "rename_symbol", path="pkg/blank.py", line=2, character=1, new_name="y"
    )
    assert err.kind == "invalid_arguments" and "on no identifier" in err.message
    assert (project / "pkg/blank.py").read_text() == "x = 1\n\nprint(x)\n"


async def test_bad_inputs_write_nothing(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    write(project, {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n", "data.py": ""})
    (project / "data.py").write_bytes(b"\x00\xff binary")
    (tmp_path / "outside.py").write_text("z = 3\n")
    client = await open_client(project)
    cases: list[tuple[str, dict[str, Any], str]] = [
        (
            "rename_symbol",
            {"path": "a.py", "line": 1, "character": 1, "new_name": ""},
            "invalid_arguments",
        ),
        (
            "rename_symbol",
            {"path": "a.py", "line": 1, "character": 1, "new_name": "a\nb"},
            "invalid_arguments",
        ),
        (
            "rename_symbol",
            {"path": "a.py", "line": 1, "character": 1, "new_name": "  "},
            "invalid_arguments",
        ),
        ("rename_symbol", {"path": "a.py", "line": 1, "character": 1}, "invalid_arguments"),
        (
            "rename_symbol",
            {"path": "a.py", "line": "1", "character": 1, "new_name": "b"},
            "invalid_arguments",
        ),
        (
            "rename_symbol",
            {"path": "a.py", "line": 1, "character": 40, "new_name": "b"},
            "invalid_arguments",
        ),
        ("format_code", {}, "invalid_arguments"),
        ("format_code", {"path": "a.py", "apply": "yes"}, "invalid_arguments"),
        ("format_code", {"path": "a.py", "surprise": 1}, "invalid_arguments"),
        ("format_code", {"path": str(tmp_path / "outside.py")}, "path_outside_project"),
        ("format_code", {"path": "../outside.py"}, "path_outside_project"),
        ("format_code", {"path": "pkg"}, "invalid_arguments"),
        ("format_code", {"path": "missing.py"}, "file_not_found"),
        ("format_code", {"path": "data.py"}, "unsupported_file_type"),
        ("get_code_actions", {"path": "a.py", "end_line": 1}, "invalid_arguments"),
        ("get_code_actions", {"path": "a.py", "line": 1, "apply": True}, "invalid_arguments"),
        ("get_code_actions", {"path": "a.py", "line": 1, "apply": ""}, "invalid_arguments"),
        ("get_code_actions", {"path": "a.py", "line": 1, "kinds": "quickfix"}, "invalid_arguments"),
        ("get_code_actions", {"path": "a.py", "line": 1, "end_line": 0}, "invalid_arguments"),
        ("get_code_actions", {"path": "pkg", "line": 1}, "invalid_arguments"),
        (
            "rename_symbol",
            {"path": "data.py", "line": 1, "character": 1, "new_name": "b"},
            "unsupported_file_type",
        ),
    ]
    for tool, arguments, kind in cases:
        err = await failure(client, tool, **arguments)
        assert err.kind == kind, (tool, arguments, err.message)
        assert str(tmp_path) not in err.message
    assert (project / "a.py").read_text() == "x = 1\n"
    assert (tmp_path / "outside.py").read_text() == "z = 3\n"
    listed = await client.call("tools/list")
    names = {t["name"] for t in listed["tools"]}
    assert {"format_code", "get_code_actions", "rename_symbol"} <= names
