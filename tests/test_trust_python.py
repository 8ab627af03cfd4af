"""Workspace trust with the real basedpyright: a repository-shipped interpreter (a canary that
leaves a marker when run) runs in a trusted root, never in an untrusted one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.lsp.restricted import codeward_python
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient

pytestmark = needs("basedpyright")

SOURCE = "import os\n\nx = os.sep\nprint(undefined_name)\n"


def canary(path: Path, marker: Path) -> None:
    """An executable at `path` that appends a line to `marker`, then runs a real Python."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0" >> "{marker}"\nexec "{codeward_python()}" "$@"\n')
    path.chmod(0o755)


def ran(marker: Path) -> list[str]:
    return marker.read_text().splitlines() if marker.exists() else []


async def servers(client: RpcClient) -> dict[str, dict[str, Any]]:
    (session,) = (await client.call("session/list"))["sessions"]
    return {s["name"]: s for s in session["servers"]}


async def hover_and_diagnose(client: RpcClient) -> tuple[dict[str, Any], dict[str, Any]]:
    with trio.fail_after(60):
        hover = await client.tool("get_hover_info", path="a.py", line=3, character=9)
        diags = await client.tool("get_diagnostics", path="a.py", severity="error")
    return hover, diags


async def test_a_project_interpreter_runs_only_once_the_root_is_trusted(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    canary(project / ".venv" / "bin" / "python", marker)
    write(project, {"a.py": SOURCE})
    client = await open_client()
    opened = await client.call("session/open", {"root": str(project)})
    assert opened["trusted"] is False

    hover, diags = await hover_and_diagnose(client)
    assert "sep" in (hover["signature"] or hover["markdown"]) and hover["restricted"] is True
    codes = {d["code"] for d in diags["diagnostics"]}
    assert "reportUndefinedVariable" in codes and diags["restricted"] is True
    with trio.fail_after(60):
        symbols = await client.tool("get_symbols", path="a.py")
        formatted = await client.tool("format_code", path="a.py", apply=False)
        source = "return codeward.call('get_hover_info', {path='a.py', line=3, character=9})"
        lua = await client.call("lua/eval", {"source": source})
    assert symbols["restricted"] and formatted["restricted"] and lua["result"]["restricted"]
    assert ran(marker) == []  # untrusted: the repository's interpreter never ran
    before = (await servers(client))["basedpyright"]["pid"]
    (listed,) = (await client.call("session/list"))["sessions"]
    assert listed["trusted"] is False

    changed = await client.call("trust/set", {"root": str(project)})
    assert (
        changed["changed"] and changed["trusted"] and changed["restarted"] == [opened["session_id"]]
    )
    hover, diags = await hover_and_diagnose(client)
    assert "restricted" not in hover and "restricted" not in diags
    assert ran(marker), "the canary is armed: a trusted root runs its .venv/bin/python"
    after = (await servers(client))["basedpyright"]
    assert after["pid"] and after["pid"] != before  # trusting restarted the server

    changed = await client.call("trust/set", {"root": str(project), "trusted": False})
    assert changed["changed"] and not changed["trusted"]
    marker.unlink()
    hover, diags = await hover_and_diagnose(client)
    assert hover["restricted"] is True and diags["restricted"] is True
    assert ran(marker) == []  # revoked: restricted again
    assert (await servers(client))["basedpyright"]["pid"] not in (after["pid"], None)


async def test_config_files_cannot_name_an_interpreter(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    """pyrightconfig.json and pyproject.toml naming a venv, and `.venv`, all canaries: none
    runs in an untrusted root, and the server still answers."""
    marker = tmp_path / "ran"
    for folder in (".venv", "venv", "env", "other"):
        canary(project / folder / "bin" / "python", marker)
    write(
        project,
        {
            "a.py": SOURCE,
            "pyrightconfig.json": '{"venvPath": ".", "venv": "env"}\n',
            "sub/pyproject.toml": '[tool.basedpyright]\nvenvPath = ".."\nvenv = "other"\n',
            "sub/b.py": SOURCE,
        },
    )
    client = await open_client(project)
    hover, diags = await hover_and_diagnose(client)
    assert hover["restricted"] and "reportUndefinedVariable" in {
        d["code"] for d in diags["diagnostics"]
    }
    with trio.fail_after(60):
        await client.tool("get_diagnostics", path="sub/b.py")
        await client.tool("get_diagnostics")
    assert ran(marker) == []


async def test_a_subdirectory_and_a_symlink_of_a_trusted_root_are_trusted(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    sub = project / "pkg"
    canary(sub / ".venv" / "bin" / "python", marker)
    write(sub, {"a.py": SOURCE})
    link = tmp_path / "link"
    os.symlink(project, link)
    control = await open_client()
    await control.call("trust/set", {"root": str(link)})  # kept as the real path
    assert (await control.call("trust/list"))["roots"] == [str(project)]
    client = await open_client()
    opened = await client.call("session/open", {"root": str(link / "pkg")})
    assert opened["trusted"] is True and opened["root"] == str(sub)
    hover, _ = await hover_and_diagnose(client)
    assert "restricted" not in hover
    assert ran(marker), "the subdirectory inherits the trust of its parent"
