"""The edit loop on Python with basedpyright and ruff: edit_file's delta, cross-file breaks,
previews, safe mode, stale hashes, get_diagnostics since."""

from __future__ import annotations

from typing import Any

import pytest

from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_client, shared_daemon
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

__all__ = ["no_leaked_processes", "shared_client", "shared_daemon"]  # the module's fixtures
pytestmark = needs("basedpyright", "ruff")

LIB = "def greet(name: str) -> str:\n    return 'hi ' + name\n"
USE = "from lib import greet\n\nprint(greet(name='x'))\n"


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    return info.value


async def create(client: RpcClient, files: dict[str, str]) -> None:
    """New files through edit_file, so the servers hear of them at once (a file written
    behind their back reaches them with the watcher's event, a moment later)."""
    for path, text in files.items():
        result = await client.tool("edit_file", path=path, content=text, create=True)
        assert result["written"], result


def by_file(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["file"]: f for f in result["diagnostics_after"]}


def messages(report: dict[str, Any]) -> list[str]:
    return [d["message"] for d in report["introduced"]]


async def test_edit_loop(shared_client: RpcClient, shared_daemon: SharedDaemon) -> None:
    client, project = shared_client, shared_daemon.root
    await create(client, {"lib.py": LIB, "use.py": USE})
    first = await client.tool("get_diagnostics", path="use.py")
    assert first["diagnostics"] == []

    # An error introduced: named, with its position in the new text.
    result = await client.tool(
        "edit_file",
        path="lib.py",
        edits=[
            {
                "line": 2,
                "character": 5,
                "end_line": 2,
                "end_character": 11,
                "new_text": "return 1 +",
            }
        ],
    )
    assert result["written"] and result["changed"]
    assert (
        project / "lib.py"
    ).read_text() == "def greet(name: str) -> str:\n    return 1 + 'hi ' + name\n"
    lib = by_file(result)["lib.py"]
    assert lib["changed"] and lib["introduced"], result
    assert all(d["file"] == "lib.py" and d["line"] == 2 for d in lib["introduced"])
    assert lib["remaining"]["error"] >= 1 and lib["resolved"]["count"] == 0
    broken_hash = result["content_hash"]

    # Lines inserted above only move it: nothing introduced, nothing resolved.
    result = await client.tool(
        "edit_file",
        path="lib.py",
        expected_hash=broken_hash,
        edits=[
            {
                "line": 1,
                "character": 1,
                "end_line": 1,
                "end_character": 1,
                "new_text": "import os\n\nprint(os.sep)\n\n\n",
            }
        ],
    )
    lib = by_file(result)["lib.py"]
    assert lib["introduced"] == [] and lib["resolved"]["count"] == 0, result
    assert lib["remaining"]["error"] >= 1

    # Fixed: the error is resolved.
    fixed = "import os\n\nprint(os.sep)\n\n\n" + LIB
    result = await client.tool("edit_file", path="lib.py", content=fixed)
    lib = by_file(result)["lib.py"]
    assert lib["introduced"] == [] and lib["resolved"]["count"] >= 1, result
    assert lib["remaining"]["error"] == 0

    # A cross-file break: the parameter renamed makes use.py's keyword call an error.
    result = await client.tool("edit_file", path="lib.py", content=fixed.replace("name", "who"))
    files = by_file(result)
    assert files["lib.py"]["introduced"] == []
    assert "use.py" in files, result
    assert not files["use.py"]["changed"] and files["use.py"]["introduced"]
    assert any("name" in m for m in messages(files["use.py"]))

    # get_diagnostics since: the delta against the hash it reported first.
    delta = await client.tool("get_diagnostics", path="use.py", since=first["content_hash"])
    assert delta["since"] == first["content_hash"] and delta["introduced"]
    assert delta["resolved"] == {"count": 0, "diagnostics": []}
    err = await failure(client, "get_diagnostics", path="use.py", since="sha256:unknown")
    assert err.kind == "invalid_arguments" and "since" in err.message


async def test_preview_and_safe(shared_client: RpcClient, shared_daemon: SharedDaemon) -> None:
    client, project = shared_client, shared_daemon.root
    await create(client, {"plib.py": LIB, "puse.py": USE.replace("from lib", "from plib")})
    await client.tool("get_diagnostics", path="puse.py")
    broken = LIB.replace("name: str", "name: str, extra: int")  # use.py misses `extra`
    result = await client.tool("edit_file", path="plib.py", content=broken, mode="preview")
    assert not result["written"] and (project / "plib.py").read_text() == LIB
    assert by_file(result)["puse.py"]["introduced"], result
    # the servers have the disk's content again: nothing is reported for the preview
    after = await client.tool("get_diagnostics", path="puse.py")
    assert after["diagnostics"] == []
    # safe refuses, naming what it would break, and writes nothing
    result = await client.tool("edit_file", path="plib.py", content=broken, mode="safe")
    assert result["refused"] and not result["written"]
    assert (project / "plib.py").read_text() == LIB
    # safe writes an edit that breaks nothing
    harmless = LIB + "\n\nVALUE = 1\n"
    result = await client.tool("edit_file", path="plib.py", content=harmless, mode="safe")
    assert result["written"] and (project / "plib.py").read_text() == harmless


async def test_bad_inputs(shared_client: RpcClient, shared_daemon: SharedDaemon) -> None:
    client, project = shared_client, shared_daemon.root
    write(project, {"blib.py": LIB})
    (project / "blob.py").write_bytes(b"\x00\x01\x02")

    def edit(line: int, character: int, end_line: int, end_character: int) -> dict[str, Any]:
        return {
            "line": line,
            "character": character,
            "end_line": end_line,
            "end_character": end_character,
            "new_text": "x",
        }

    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"path": "blib.py"}, "invalid_arguments", "either"),
        ({"path": "blib.py", "content": "", "edits": []}, "invalid_arguments", "either"),
        ({"path": "blib.py", "edits": [edit(9, 1, 9, 1)]}, "invalid_arguments", "outside the text"),
        ({"path": "blib.py", "edits": [edit(1, 99, 1, 99)]}, "invalid_arguments", "outside line 1"),
        ({"path": "blib.py", "edits": [edit(1, 5, 1, 2)]}, "invalid_arguments", "before it starts"),
        (
            {"path": "blib.py", "edits": [edit(1, 1, 1, 6), edit(1, 3, 1, 4)]},
            "invalid_arguments",
            "overlaps",
        ),
        ({"path": "blob.py", "content": "x"}, "invalid_arguments", "UTF-8"),
        ({"path": "new.py", "content": "x"}, "file_not_found", "create"),
        ({"path": "nodir/new.py", "content": "x", "create": True}, "invalid_arguments", "folder"),
        ({"path": ".git/config", "content": "x", "create": True}, "path_outside_project", ".git"),
        (
            {"path": "../elsewhere.py", "content": "x", "create": True},
            "path_outside_project",
            "outside",
        ),
        (
            {"path": "blib.py", "content": "x", "expected_hash": "sha256:0"},
            "stale_edit",
            "no longer",
        ),
    ]
    for arguments, kind, words in cases:
        err = await failure(client, "edit_file", **arguments)
        assert err.kind == kind and words in err.message, (arguments, err.message)
    assert (project / "blib.py").read_text() == LIB
    # create: a new file, and its diagnostics
    result = await client.tool("edit_file", path="new.py", content="x: int = 'a'\n", create=True)
    assert result["written"] and (project / "new.py").read_text() == "x: int = 'a'\n"
    assert result["diff"].startswith("--- /dev/null\n+++ b/new.py\n")
    assert by_file(result)["new.py"]["introduced"]
    # an edit that changes nothing writes nothing
    result = await client.tool("edit_file", path="blib.py", content=LIB)
    assert result == {
        "path": "blib.py",
        "content_hash": result["content_hash"],
        "diff": "",
        "written": False,
        "changed": False,
        "diagnostics_after": [],
        "restricted": True,
    }


async def test_apply_preferred_fixes_and_fix_all(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, project = shared_client, shared_daemon.root
    write(project, {"m.py": "import os\nimport sys\n\nprint(sys.argv)\n"})
    result = await client.tool("get_code_actions", path="m.py", apply="preferred")
    titles = [a["title"] for a in result["applied_actions"]]
    assert any("os" in t for t in titles), result
    assert (project / "m.py").read_text() == "import sys\n\nprint(sys.argv)\n"
    (report,) = result["diagnostics_after"]
    assert report["file"] == "m.py" and report["resolved"]["count"] >= 1
    assert report["introduced"] == []
    # fix-all kinds, asked for by kind: every fix of the file in one write
    write(project, {"f.py": "import os\nimport json\nx = 1\n"})
    result = await client.tool(
        "get_code_actions", path="f.py", kinds=["source.fixAll"], apply="preferred"
    )
    assert result["applied_actions"] and (project / "f.py").read_text() == "x = 1\n"
    # nothing to fix: said, nothing written
    err = await failure(client, "get_code_actions", path="f.py", apply="preferred")
    assert err.kind == "invalid_arguments" and "No preferred quick fix" in err.message
    err = await failure(client, "get_code_actions", path="f.py", end_line=1)
    assert err.kind == "invalid_arguments" and "`line`" in err.message


async def test_format_and_rename_report_the_delta(shared_client: RpcClient) -> None:
    client = shared_client
    await create(
        client,
        {
            "rlib.py": "def helper(x: int) -> int:\n    return x\n",
            "ruse.py": "from rlib import helper\n\nVALUE: str = helper(1)\n",
            "ugly.py": "x=[1,\n  2]\n",
        },
    )
    await client.tool("get_diagnostics", path="ruse.py")
    result = await client.tool("format_code", path="ugly.py")
    assert [f["file"] for f in result["diagnostics_after"]] == ["ugly.py"]
    assert result["diagnostics_after"][0]["introduced"] == []
    result = await client.tool(
        "rename_symbol", path="rlib.py", line=1, character=5, new_name="assist"
    )
    files = by_file(result)
    assert files["rlib.py"]["changed"] and files["ruse.py"]["changed"], result
    assert files["rlib.py"]["introduced"] == [] and files["ruse.py"]["introduced"] == []
    # the type error in ruse.py was there before and only moved with the rename
    assert files["ruse.py"]["remaining"]["error"] == 1
    assert files["ruse.py"]["resolved"]["count"] == 0
    err = await failure(client, "get_diagnostics", path=".", since="sha256:0")
    assert err.kind == "invalid_arguments" and "one file" in err.message
