"""The editor harness against real language servers started directly by each editor (no
codeward): Neovim 0.7's and eglot's own clients on basedpyright and on ruff's server, so
that a failure of the `codeward lsp` tests is codeward's, never the harness's."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.lsp.defaults import default_servers
from tests.editors import KINDS, LIB, MAIN, PRETTY, UGLY, EditorFailed, Kind, editor
from tests.lsp_support import needs
from tests.real_servers import write


@pytest.fixture
def python_project(project: Path) -> Path:
    write(project, {"lib.py": LIB, "main.py": MAIN})
    return project


@needs("basedpyright")
@pytest.mark.parametrize("kind", KINDS)
async def test_editor_on_basedpyright(kind: Kind, python_project: Path) -> None:
    """Diagnostics, hover, definition across files, completion, an unsaved edit and a
    rename across files, each through the editor's own LSP client."""
    main, lib = str(python_project / "main.py"), str(python_project / "lib.py")
    command = default_servers()["basedpyright"].command
    async with editor(kind, command, python_project) as ed:
        await ed.call("open", path=main)
        found = await ed.call("wait_diagnostics", path=main, contains='"int" is not assignable')
        assert [(d["line"], d["character"]) for d in found] == [(2, 13)]

        hover = await ed.call("hover", path=main, line=3, character=7)
        assert "def compute(value: int) -> int" in hover and "Double the value." in hover
        assert await ed.call("definition", path=main, line=3, character=7) == [
            {"path": lib, "line": 0, "character": 4}
        ]
        assert "compute" in await ed.call("completion", path=main, line=3, character=8)

        edited = await ed.call("edit", path=main, first=3, last=4, lines=["print(compute(3))"])
        assert edited.endswith("print(compute(3))\n")
        assert (await ed.call("text", path=main))["modified"] is True
        hover = await ed.call("hover", path=main, line=3, character=7)
        assert "def compute" in hover  # the server answers on the edited buffer

        renamed = await ed.call("rename", path=main, line=3, character=7, new_name="double")
        assert renamed[main] == MAIN.replace("compute", "double").replace("(2)", "(3)")
        assert renamed[lib] == LIB.replace("compute", "double")
        assert (python_project / "lib.py").read_text() == LIB  # buffers only, unsaved

        with pytest.raises(EditorFailed, match="no buffer"):
            await ed.call("hover", path=str(python_project / "nowhere.py"), line=0, character=0)


@needs("ruff")
@pytest.mark.parametrize("kind", KINDS)
async def test_editor_formats_with_ruff(kind: Kind, project: Path) -> None:
    write(project, {"ugly.py": UGLY})
    path = str(project / "ugly.py")
    async with editor(kind, default_servers()["ruff"].command, project) as ed:
        await ed.call("open", path=path)
        assert await ed.call("format", path=path) == PRETTY
        await ed.call("save", path=path)
        assert (project / "ugly.py").read_text() == PRETTY
        # a server's workspace/applyEdit (of a command run in the editor) edits the buffer
        await ed.call("edit", path=path, first=0, last=2, lines=UGLY.splitlines())
        await ed.call("execute", path=path, command="ruff.applyFormat")
        assert await ed.call("wait_text", path=path, contains="def f(a, b)") == {
            "text": PRETTY,
            "modified": True,
        }
