"""get_diagnostics end to end: a client, the in-process daemon, real servers."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

pytestmark = needs("basedpyright", "ruff")


async def test_get_diagnostics_through_the_daemon(client: RpcClient, project: Path) -> None:
    # The session's very first request, server not started: workspace symbols are not
    # answered empty while basedpyright loads its workspace (it answers [] until then).
    (project / "lib.py").write_text("def compute(x: int) -> int:\n    return x\n")
    with trio.fail_after(40):
        first = await client.tool("get_symbols", scope="workspace", query="compute")
    assert [(s["name"], s["path"]) for s in first["symbols"]] == [("compute", "lib.py")]
    (project / "lib.py").unlink()
    (project / "a.py").write_text("import os\n\nprint(undefined_name)\n")
    with trio.fail_after(40):
        result = await client.tool("get_diagnostics", path="a.py", severity="error")
    assert {d["code"] for d in result["diagnostics"]} == {"F821", "reportUndefinedVariable"}
    assert all(d["file"] == "a.py" and d["line"] == 3 for d in result["diagnostics"])
    assert result["content_hash"].startswith("sha256:")
    sessions = (await client.call("session/list"))["sessions"]
    servers = {s["name"]: s for s in sessions[0]["servers"]}
    assert servers["basedpyright"]["state"] == "running" and servers["basedpyright"]["pid"]
    assert servers["ruff"]["restarts"] == 0
    with pytest.raises(RpcFailure) as info:
        await client.tool("get_diagnostics", path="/etc/passwd")
    assert info.value.kind == "path_outside_project"
    with pytest.raises(RpcFailure) as info:
        await client.tool("get_diagnostics", severity="fatal")
    assert info.value.kind == "invalid_arguments"
    # ruff reports only files it has open: a folder or project request opens them
    (project / "a.py").unlink()
    files = {"pkg/a.py": "import os\n", "pkg/b.py": "x: int = 'a'\n", "c.py": "import sys\n"}
    for name, text in files.items():
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(text)
    with trio.fail_after(60):
        folder = await client.tool("get_diagnostics", path="pkg")
        whole = await client.tool("get_diagnostics")
    seen = {(d["file"], d["source"], d["code"]) for d in folder["diagnostics"]}
    assert ("pkg/a.py", "Ruff", "F401") in seen
    assert ("pkg/a.py", "basedpyright", "reportUnusedImport") in seen
    assert ("pkg/b.py", "basedpyright", "reportAssignmentType") in seen
    assert {f for f, _, _ in seen} == {"pkg/a.py", "pkg/b.py"}
    assert "partial" not in folder and "unchecked_files" not in folder
    assert folder["servers"] == [
        {"name": n, "files_checked": 2, "files_total": 2, "complete": True}
        for n in ("basedpyright", "ruff")
    ]
    assert [(s["name"], s["files_total"], s["complete"]) for s in whole["servers"]] == [
        ("basedpyright", 3, True), ("ruff", 3, True)
    ]  # fmt: skip
    ruff = {(d["file"], d["code"]) for d in whole["diagnostics"] if d["source"] == "Ruff"}
    assert ruff == {("pkg/a.py", "F401"), ("c.py", "F401")}
