"""Answers that say what they left out: the files a scoped server does not analyse, the
mentions of a renamed symbol its edit did not reach, and a refused `safe` edit that says so
first (an error on MCP, no hash of text it did not write); real basedpyright and git."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import trio

from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.test_mcp import agent, git, text_of

PYPROJECT = '[project]\nname = "p"\nversion = "0"\n\n[tool.basedpyright]\ninclude = ["src"]\n'
FMT = """\
def wrap_text(text: str) -> str:
    return text.strip()


def use() -> str:
    return wrap_text(" x ")
"""
TESTS = """\
from pkg.fmt import wrap_text


def test_wrap() -> None:
    assert wrap_text(" a ") == "a"
"""
DOCS = "# API\n\n`wrap_text(text)` strips the text.\n"


@pytest.fixture
def scoped(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    files = {"pyproject.toml": PYPROJECT, "src/pkg/__init__.py": "", "src/pkg/fmt.py": FMT,
             "tests/test_fmt.py": TESTS, "docs/api.md": DOCS}  # fmt: skip
    write(project, files)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first")
    return project


@needs("basedpyright")
async def test_a_rename_names_what_it_did_not_reach(daemon: Daemon, scoped: Path) -> None:
    async with agent(daemon, scoped) as (session, _):
        with trio.fail_after(90):
            renamed = await session.call_tool(
                "rename_symbol",
                {"path": "src/pkg/fmt.py", "symbol": "wrap_text", "new_name": "wrap",
                 "apply": True},
            )  # fmt: skip
    assert not renamed.is_error, text_of(renamed)
    result = renamed.structured_content or {}
    assert result["files_changed"] == ["src/pkg/fmt.py"]
    (scope,) = result["unanalysed"]
    assert scope["server"] == "basedpyright" and scope["include"] == ["src"]
    assert scope["files"] == ["tests/test_fmt.py"] and scope["count"] == 1
    mentions = {(m["path"], m["line"]) for m in result["unanalysed_mentions"]}
    assert {("docs/api.md", 3), ("tests/test_fmt.py", 1), ("tests/test_fmt.py", 5)} <= mentions
    text = text_of(renamed)
    assert "not analysed by basedpyright (include: src): 1 file" in text
    assert 'tests/test_fmt.py:5: assert wrap_text(" a ") == "a"' in text
    assert "docs/api.md:3: `wrap_text(text)` strips the text." in text


@needs("basedpyright")
async def test_a_dry_run_rename_leaves_out_the_files_it_edits(
    open_client: OpenClient, scoped: Path
) -> None:
    client = await open_client(scoped)
    arguments = {"path": "src/pkg/fmt.py", "line": 1, "name": "wrap_text", "new_name": "wrap",
                 "apply": False}  # fmt: skip
    result = await client.call("tools/call", {"name": "rename_symbol", "arguments": arguments})
    paths = {m["path"] for m in result["unanalysed_mentions"]}
    assert paths == {"docs/api.md", "tests/test_fmt.py"}  # src/pkg/fmt.py: the edit's own
    assert "unanalysed" not in result  # nothing written, nothing checked
    assert (scoped / "src/pkg/fmt.py").read_text() == FMT


@needs("basedpyright")
async def test_a_refused_safe_edit_says_so_first(daemon: Daemon, scoped: Path) -> None:
    broken = FMT.replace('wrap_text(" x ")', "wrap_text(1)")
    async with agent(daemon, scoped) as (session, _):
        with trio.fail_after(90):
            refused = await session.call_tool(
                "edit_file", {"path": "src/pkg/fmt.py", "content": broken, "mode": "safe"}
            )
    assert refused.is_error
    text = text_of(refused)
    assert text.startswith("refused: the edit introduces 1 diagnostic of severity error")
    result = refused.structured_content or {}
    assert result["refused"] is True and result["written"] is False
    assert "content_hash" not in result  # no hash of text that was not written
    on_disk = "sha256:" + hashlib.sha256(FMT.encode()).hexdigest()
    assert result["unchanged_hash"] == on_disk
    assert f"(unchanged, content_hash: {on_disk})" in text
    assert (scoped / "src/pkg/fmt.py").read_text() == FMT
