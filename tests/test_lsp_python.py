"""Real Python servers (basedpyright and ruff) through the LanguageService and get_diagnostics."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from codeward.daemon.edits.history import DiagnosticsHistory
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from codeward.daemon.tools.diagnostics import DiagnosticsArgs, get_diagnostics
from codeward.daemon.tools.registry import NoCaller, ToolContext
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import needs, real_config, running

pytestmark = needs("basedpyright", "ruff")

BROKEN = """import os

def f(x: int) -> str:
    return x

print(undefined_name)
"""


def project(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    root.mkdir()
    (root / "a.py").write_text(BROKEN)
    (root / "clean.py").write_text("def g() -> int:\n    return 1\n")
    (root / "syntax.py").write_text("def h(:\n    pass\n")
    return root


async def diagnostics(manager: LanguageService, **arguments: Any) -> dict[str, Any]:
    session = SimpleNamespace(
        lsp=manager, root=manager.root, diagnostics_history=DiagnosticsHistory()
    )
    ctx = ToolContext(session, NoCaller())  # type: ignore[arg-type]
    return await get_diagnostics(ctx, DiagnosticsArgs(**arguments))


def codes(result: dict[str, Any]) -> set[tuple[str, int, Any]]:
    return {(d["file"], d["line"], d["code"]) for d in result["diagnostics"]}


async def test_file_diagnostics_filters_and_edits(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(30):
            result = await diagnostics(manager, path="a.py")
        found = codes(result)
        assert ("a.py", 1, "F401") in found  # unused import, from ruff
        assert ("a.py", 4, "reportReturnType") in found  # basedpyright: type error
        assert ("a.py", 6, "reportUndefinedVariable") in found  # undefined name
        assert ("a.py", 6, "F821") in found
        assert result["count"] == len(result["diagnostics"]) and not result["truncated"]
        assert result["content_hash"].startswith("sha256:") and "partial" not in result
        severities = [d["severity"] for d in result["diagnostics"]]
        assert severities == sorted(
            severities, key=["error", "warning", "information", "hint"].index
        )
        first = next(d for d in result["diagnostics"] if d["code"] == "reportUndefinedVariable")
        assert (first["column"], first["end_column"], first["source"]) == (7, 21, "basedpyright")

        errors = await diagnostics(manager, path="a.py", severity="error")
        assert {d["severity"] for d in errors["diagnostics"]} == {"error"}
        assert errors["count"] < result["count"]
        limited = await diagnostics(manager, path="a.py", limit=2)
        assert len(limited["diagnostics"]) == 2 and limited["truncated"]
        assert limited["diagnostics"] == result["diagnostics"][:2]

        syntax = await diagnostics(manager, path="syntax.py")
        assert any(d["line"] == 1 and d["severity"] == "error" for d in syntax["diagnostics"])
        clean = await diagnostics(manager, path="clean.py")
        assert clean["diagnostics"] == [] and clean["count"] == 0

        # Edited on disk between two calls: the new error, not the old one.
        (root / "a.py").write_text("import os\n\nprint(os.sep + other_name)\n")
        after = await diagnostics(manager, path="a.py")
        assert after["content_hash"] != result["content_hash"]
        messages = " ".join(d["message"] for d in after["diagnostics"])
        assert "other_name" in messages and "undefined_name" not in messages
        assert not any(d["code"] == "F401" for d in after["diagnostics"])


async def test_workspace_diagnostics_cover_unopened_files(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("y: int = 'text'\n")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(40):
            result = await diagnostics(manager)
        files = {d["file"] for d in result["diagnostics"]}
        assert {"a.py", "syntax.py", "pkg/m.py"} <= files
        assert "clean.py" not in files and "content_hash" not in result
        folder = await diagnostics(manager, path="pkg")
        assert {d["file"] for d in folder["diagnostics"]} == {"pkg/m.py"}


async def test_a_changed_dependency_shows_in_the_next_answer(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "dep.py").write_text("def value() -> int:\n    return 1\n")
    (root / "use.py").write_text("from dep import value\n\nx: str = value()\n")
    async with running(root, real_config(), watch=True) as (manager, _):
        with trio.fail_after(30):
            before = await diagnostics(manager, path="use.py", severity="error")
        assert [d["line"] for d in before["diagnostics"]] == [3]
        server = manager.pool.servers["basedpyright"]
        world = server.world
        (root / "dep.py").write_text("def value() -> str:\n    return ''\n")
        with trio.fail_after(10):  # the watcher delivers the event; no sleeping
            await server.wait_for(lambda: server.world > world, 10)
            after = await diagnostics(manager, path="use.py", severity="error")
        assert after["diagnostics"] == []
        # The git/edit hook works the same way without the watcher's help.
        (root / "dep.py").write_text("def value() -> int:\n    return 1\n")
        manager.files_changed([Path("dep.py")])
        with trio.fail_after(10):
            again = await diagnostics(manager, path="use.py", severity="error")
        assert [d["line"] for d in again["diagnostics"]] == [3]


async def test_positions_with_non_ascii_lines(tmp_path: Path) -> None:
    root = project(tmp_path)
    line = 's = "é😀中"; value = 1; print(s, value, missing)\n'
    (root / "u.py").write_text(line)
    async with running(root, real_config()) as (manager, _):
        column = line.index("value") + 1  # code points, 1-based

        def hover(ctx: DocumentContext) -> dict[str, Any]:
            return {"textDocument": ctx.text_document, "position": ctx.position(1, column)}

        with trio.fail_after(30):
            answer = await manager.request(root / "u.py", "textDocument/hover", hover)
        assert answer.encoding == "utf-16" and answer.server == "basedpyright"
        assert "value" in answer.result["contents"]["value"] and not answer.partial
        assert answer.span((root / "u.py").as_uri(), answer.result["range"]) == (
            1,
            column,
            1,
            column + len("value"),
        )
        result = await diagnostics(manager, path="u.py")
        want = line.index("missing") + 1
        by_source = {d["source"]: d for d in result["diagnostics"] if "missing" in d["message"]}
        assert by_source["basedpyright"]["column"] == want  # utf-16 server
        assert by_source["Ruff"]["column"] == want  # utf-8 server
        assert manager.pool.servers["ruff"].encoding == "utf-8"


async def test_bad_inputs(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "notes.txt").write_text("text")
    async with running(root, real_config()) as (manager, _):
        for arguments, kind in [
            ({"path": "../outside.py"}, ErrorKind.PATH_OUTSIDE_PROJECT),
            ({"path": "nope.py"}, ErrorKind.FILE_NOT_FOUND),
            ({"path": "notes.txt"}, ErrorKind.UNSUPPORTED_FILE_TYPE),
            ({"path": "a.py", "limit": 0}, ErrorKind.INVALID_ARGUMENTS),
        ]:
            with pytest.raises(ToolError) as info:
                await diagnostics(manager, **arguments)
            assert info.value.kind is kind, arguments
            assert str(tmp_path) not in info.value.message


async def test_stop_leaves_no_process(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(30):
            await diagnostics(manager, path="a.py")
        status = {s["name"]: s for s in manager.status()}
        pids = [status["basedpyright"]["pid"], status["ruff"]["pid"]]
        assert all(pids) and {s["state"] for s in status.values()} == {"running"}
        assert "node" in Path(f"/proc/{pids[0]}/cmdline").read_text()
        tree = [p for pid in pids for p in _tree(pid)]
    alive = [pid for pid in tree if _alive(pid)]
    assert alive == []


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if ppid == pid:
                found += _tree(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
