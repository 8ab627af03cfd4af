"""Real editors on `codeward lsp`: headless Neovim 0.7 and Emacs 28 with eglot start the
thin client's pump as their language server, on the test's daemon (the same one the agent,
this test, calls over its socket), and share the root's servers with the agent."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.editors import KINDS, LIB, MAIN, PRETTY, UGLY, Editor, Kind, descendants, editor
from tests.lsp_support import needs
from tests.real_servers import TIMEOUT, ask, refused, write

LAUNCH = "import sys; from codeward.client.entry import main; sys.exit(main())"
SERVERS = ("basedpyright", "ruff")


@pytest.fixture
def python_project(project: Path) -> Path:
    write(project, {"lib.py": LIB, "main.py": MAIN, "ugly.py": UGLY})
    return project


def codeward_lsp(daemon: Daemon) -> tuple[list[str], dict[str, str]]:
    """What an editor runs (`codeward lsp`, as the console script), on the test's daemon."""
    return [sys.executable, "-c", LAUNCH, "lsp"], {"CODEWARD_SOCKET": str(daemon.socket_path)}


def servers_running() -> dict[str, int]:
    """How many processes of each language server run under this test (the daemon is in
    this process; an editor and its `codeward lsp` are its children)."""
    commands = descendants(os.getpid()).values()
    return {
        "basedpyright": sum("langserver" in c and "basedpyright" in c for c in commands),
        "ruff": sum(c.endswith("ruff server") for c in commands),
    }


def one_set() -> bool:
    """One basedpyright and at most one ruff run, whoever asks (the editors start none)."""
    running = servers_running()
    return running["basedpyright"] == 1 and running["ruff"] <= 1


async def sessions_of(client: Any, root: Path) -> list[dict[str, Any]]:
    return [s for s in (await client.call("session/list"))["sessions"] if s["root"] == str(root)]


@needs(*SERVERS)
@pytest.mark.parametrize("kind", KINDS)
async def test_an_editor_on_codeward_lsp(kind: Kind, daemon: Daemon, python_project: Path) -> None:
    """Diagnostics of an open file, hover, definition across files, completion, rename and
    formatting, each through the editor's own client and `codeward lsp`."""
    main, lib, ugly = (str(python_project / n) for n in ("main.py", "lib.py", "ugly.py"))
    command, env = codeward_lsp(daemon)
    async with editor(kind, command, python_project, env) as ed:
        await ed.call("open", path=main)
        found = await ed.call("wait_diagnostics", path=main, contains='"int" is not assignable')
        assert (2, 13) in [(d["line"], d["character"]) for d in found]
        hover = await ed.call("hover", path=main, line=3, character=7)
        assert "def compute(value: int) -> int" in hover and "Double the value." in hover
        if kind == "emacs":  # eglot without markdown-mode takes plain text: no fences
            assert "```" not in hover
        assert await ed.call("definition", path=main, line=3, character=7) == [
            {"path": lib, "line": 0, "character": 4}
        ]
        assert "compute" in await ed.call("completion", path=main, line=3, character=8)
        renamed = await ed.call("rename", path=main, line=3, character=7, new_name="double")
        assert renamed[main] == MAIN.replace("compute", "double")
        assert renamed[lib] == LIB.replace("compute", "double")
        await ed.call("open", path=ugly)
        assert await ed.call("format", path=ugly) == PRETTY  # ruff's, beside basedpyright


async def symbols(agent: Any, path: str) -> tuple[set[str], dict[str, Any]]:
    result = await ask(agent, "get_symbols", path=path)
    return {s["name"] for s in result["symbols"]}, result


@needs(*SERVERS)
@pytest.mark.parametrize("kind", KINDS)
async def test_an_agent_beside_an_editor(
    kind: Kind, daemon: Daemon, open_client: OpenClient, python_project: Path
) -> None:
    """The agent's edit of a file the editor holds reaches the editor's buffer; the editor's
    unsaved change is what the agent reads, and the agent's write is then refused."""
    main = str(python_project / "main.py")
    agent = await open_client(python_project)
    command, env = codeward_lsp(daemon)
    async with editor(kind, command, python_project, env) as ed:
        await ed.call("open", path=main)
        await ed.call("wait_diagnostics", path=main, contains='"int" is not assignable')

        # buffer == disk: the disk is written and the same edit applied in the buffer
        four = {"line": 4, "character": 15, "end_line": 4, "end_character": 16, "new_text": "4"}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(ed.call, "wait_text", path=main, contains="compute(4)"))
            done = await ask(agent, "edit_file", path="main.py", edits=[four])
        (followed,) = done["editors"]
        holder = followed["holder"]  # the editor, by its process id (Neovim: and its name)
        assert f"pid {ed.hello['pid']}" in holder and (kind != "neovim" or "Neovim" in holder)
        assert followed["files"] == ["main.py"] and followed["applied"] is True
        assert (python_project / "main.py").read_text() == MAIN.replace("(2)", "(4)")
        assert (await ed.call("text", path=main))["text"] == MAIN.replace("(2)", "(4)")

        # an unsaved change in the editor: the agent reads the buffer, and is told so
        await ed.call("edit", path=main, first=4, last=4, lines=["def typed() -> None: ..."])
        names, result = await symbols(agent, "main.py")
        assert "typed" in names
        assert result["source"] == "editor"
        assert [(f["path"], f["holder"]) for f in result["editor_files"]] == [("main.py", holder)]
        assert (python_project / "main.py").read_text() == MAIN.replace("(2)", "(4)")

        # a dirty buffer: the agent's write is refused, naming the editor; nothing written
        eight = four | {"new_text": "8"}
        failure = await refused(agent, "edit_file", path="main.py", edits=[eight])
        assert failure.kind == "stale_edit"
        assert failure.data["holder"] == holder and failure.data["path"] == "main.py"
        assert (python_project / "main.py").read_text() == MAIN.replace("(2)", "(4)")
        assert "typed" in (await ed.call("text", path=main))["text"]


@needs(*SERVERS)
async def test_two_editors_and_an_agent_share_one_set_of_servers(
    daemon: Daemon, open_client: OpenClient, python_project: Path
) -> None:
    """Neovim, Emacs and an agent on one root: one session, one process per server; when
    the editor holding an unsaved change dies, the servers see the disk again."""
    main = str(python_project / "main.py")
    agent = await open_client(python_project)
    await ask(agent, "get_hover_info", path="main.py", line=4, character=7)
    command, env = codeward_lsp(daemon)
    async with editor("emacs", command, python_project, env) as emacs:
        await emacs.call("open", path=main)
        nvim: Editor
        async with editor("neovim", command, python_project, env) as nvim:
            await nvim.call("open", path=main)
            for each in (nvim, emacs):
                assert "def compute" in await each.call("hover", path=main, line=3, character=7)
            (session,) = await sessions_of(agent, python_project)
            names = [s["name"] for s in session["servers"]]
            assert "basedpyright" in names and len(names) == len(set(names))
            assert one_set()

            await nvim.call(
                "edit", path=main, first=4, last=4, lines=["def unsaved() -> None: ..."]
            )
            names, _ = await symbols(agent, "main.py")
            assert "unsaved" in names
            # Neovim dies with its change unsaved; its `codeward lsp` ends once the daemon
            # has let go of the editor's buffers
            (pump,) = [p for p, c in descendants(nvim.pid).items() if "client.entry" in c]
            await nvim.kill()
            with trio.fail_after(TIMEOUT):  # the orphaned pump is this process's child now
                await trio.to_thread.run_sync(os.waitpid, pump, 0, abandon_on_cancel=True)
        # the servers have the disk's text back
        names, result = await symbols(agent, "main.py")
        assert "unsaved" not in names and result.get("source") != "editor"
        hover = await emacs.call("hover", path=main, line=3, character=7)
        assert "def compute" in hover
    assert one_set()  # the daemon's, still warm
