"""A change larger than `lsp.folder_diagnostics_files`: the files past it are counted in
`unchecked_files` and the answer is `partial` (basedpyright and ruff, a real repository)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec
import pytest

from codeward.daemon.config import Config, DaemonConfig, LspConfig
from codeward.protocol.render.tool_text import tool_text
from tests.conftest import OpenClient
from tests.lsp_support import needs

pytestmark = needs("basedpyright", "ruff")


@pytest.fixture
def daemon_config() -> Config:
    lsp = msgspec.structs.replace(LspConfig(), folder_diagnostics_files=1)
    return Config(daemon=DaemonConfig(idle_timeout=600.0), lsp=lsp)


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


async def test_files_past_the_limit_are_unchecked(open_client: OpenClient, project: Path) -> None:
    git(project, "init", "-q", "-b", "main")
    for name in ("a.py", "b.py", "notes.txt"):
        (project / name).write_text("X = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "start")
    for name in ("a.py", "b.py", "notes.txt"):
        (project / name).write_text("X: int = 'x'\n")
    client = await open_client(project)
    result = await client.tool("get_diagnostics", since="HEAD")
    assert [f["file"] for f in result["files"]] == ["a.py"]  # notes.txt: no language
    assert result["unchecked_files"] == 1 and result["partial"] is True
    assert "(1 file not checked" in tool_text("get_diagnostics", result)
    review = await client.tool("review_changes")
    assert [f["file"] for f in review["files"]] == ["a.py", "b.py", "notes.txt"]
    assert review["unchecked_files"] == 1 and "symbols" not in review["files"][1]
    assert review["files"][2]["hunks"] == [
        {"old_start": 1, "old_lines": 1, "new_start": 1, "new_lines": 1}
    ]
