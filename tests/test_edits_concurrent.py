"""Concurrent edits on a real basedpyright, through the daemon's socket: every reply is either
applied (and its change is in the file) or `stale_edit`, and no other writer's line is lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.lsp.connection import CONTENT_MODIFIED
from codeward.daemon.lsp.service import LanguageService
from codeward.protocol.errors import ErrorKind, ToolError
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

pytestmark = needs("basedpyright")

CORE = "def compute(x: int) -> int:\n    return x + 1\n"
USE = "from core import compute\n\nprint(compute(1))\n"
DEFINITION = (1, 5)  # where the function's name starts, whatever it is called by then


def renamed(diff: str, path: str) -> tuple[str, str]:
    """(old name, new name) of the function's definition line in a rename's diff."""
    lines = diff.split(f"+++ b/{path}\n", 1)[1].splitlines()
    old = next(line for line in lines if line.startswith("-def "))
    new = next(line for line in lines if line.startswith("+def "))
    return old[5 : old.index("(")], new[5 : new.index("(")]


async def rename(client: RpcClient, new_name: str) -> dict[str, Any] | str:
    """The rename's result, or the kind of its error."""
    line, character = DEFINITION
    try:
        return await client.tool(
            "rename_symbol", path="core.py", line=line, character=character, new_name=new_name
        )
    except RpcFailure as failure:
        return str(failure.kind)


async def one(replies: dict[str, Any], client: RpcClient, name: str) -> None:
    replies[name] = await rename(client, name)


async def test_concurrent_renames_never_lose_an_update(
    open_client: OpenClient, project: Path
) -> None:
    write(project, {"core.py": CORE, "use.py": USE})
    first, second = await open_client(project), await open_client(project)
    current = "compute"
    outcomes: list[str] = []
    with trio.fail_after(120):
        for round_ in range(12):
            replies: dict[str, dict[str, Any] | str] = {}
            async with trio.open_nursery() as nursery:
                for i, client in enumerate((first, second)):
                    nursery.start_soon(one, replies, client, f"f{round_}_{i}")
            applied = {n: r for n, r in replies.items() if isinstance(r, dict)}
            for name, reply in replies.items():
                assert isinstance(reply, dict) or reply == "stale_edit", (name, reply)
            # The applied renames form one chain from the name before the round: no two of
            # them were computed from the same content (that is the lost update).
            steps = {}
            for name, reply in applied.items():
                assert reply["applied"] and reply["files_changed"] == ["core.py", "use.py"]
                old, new = renamed(reply["diff"], "core.py")
                assert new == name and old not in steps, (old, steps)
                steps[old] = new
            while current in steps:
                current = steps.pop(current)
            assert steps == {}
            core, use = (project / "core.py").read_text(), (project / "use.py").read_text()
            assert core == CORE.replace("compute", current)
            assert use == USE.replace("compute", current)
            outcomes += ["applied"] * len(applied) + ["stale"] * (len(replies) - len(applied))
    assert "applied" in outcomes


APPENDER = """
import os, sys, time
path, stop, total = sys.argv[1:]
n = burst = 0
while not os.path.exists(stop):
    for _ in range(5):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, f"# line {n}\\n".encode())
        os.close(fd)
        n += 1
        time.sleep(0.002)
    burst += 1
    time.sleep(0.15 if burst % 2 else 0.05)
with open(total, "w") as f:
    f.write(str(n))
"""


async def test_a_writer_appending_during_renames_loses_no_line(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    """Another program appends lines to the file while renames run: each rename is applied
    or stale, and every appended line is in the file, once, in order."""
    write(project, {"core.py": CORE, "use.py": USE})
    client = await open_client(project)
    assert isinstance(await rename(client, "warm"), dict)  # the server is ready
    stop, total = tmp_path / "stop", tmp_path / "total"
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            appender = await trio.lowlevel.open_process(
                [sys.executable, "-c", APPENDER, str(project / "core.py"), str(stop), str(total)],
                stdout=subprocess.DEVNULL,
            )
            nursery.start_soon(appender.wait)
            try:
                for count in range(16):
                    reply = await rename(client, f"name{count}")
                    assert isinstance(reply, dict) or reply == "stale_edit", reply
            finally:
                stop.touch()  # the appender ends even when the test fails
    assert appender.returncode == 0
    written = int(total.read_text())
    lines = [line for line in (project / "core.py").read_text().splitlines() if line[:2] == "# "]
    assert written > 0 and lines == [f"# line {n}" for n in range(written)]


async def test_a_rename_answered_for_changed_content_is_stale(
    open_client: OpenClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server (or the daemon) says the content changed while the rename was computed:
    that is a stale edit to run again, not "nothing to rename" (for prepareRename too)."""
    write(project, {"core.py": CORE, "use.py": USE})
    client = await open_client(project)
    real = LanguageService.request
    for method in ("textDocument/prepareRename", "textDocument/rename"):

        async def modified(
            self: LanguageService, path: Path, asked: str, *args: Any, **kw: Any
        ) -> Any:
            if asked == method:  # noqa: B023  (each round patches anew)
                raise ToolError(ErrorKind.LSP_ERROR, "Content modified.", code=CONTENT_MODIFIED)
            return await real(self, path, asked, *args, **kw)

        monkeypatch.setattr(LanguageService, "request", modified)
        assert await rename(client, "other") == "stale_edit", method
    monkeypatch.setattr(LanguageService, "request", real)
    assert (project / "core.py").read_text() == CORE
    assert isinstance(await rename(client, "other"), dict)
