"""Edits a server asks for (`workspace/applyEdit`) while it runs a command: ruff's autofix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.edits import Basis, RootWriter, ServerEdits
from codeward.daemon.edits.actions import Action
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.shapes import structure
from codeward.daemon.tools.edits import _apply_action
from codeward.daemon.tools.registry import NoCaller, ToolContext
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import needs, real_config, running

pytestmark = needs("ruff")

SOURCE = "import os\nimport sys\n\nprint(sys.argv)\n"
FIXED = "import sys\n\nprint(sys.argv)\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    (path / "m.py").write_text(SOURCE)
    return path.resolve()


async def test_command_edits_go_through_the_layer(root: Path, nursery: trio.Nursery) -> None:
    path = root / "m.py"
    told: list[list[Path]] = []
    writer = RootWriter(root, lambda paths, created: told.append(list(paths)))
    await nursery.start(writer.run)
    async with running(root, real_config()) as (manager, _):
        await manager.server_diagnostics(path)  # opens it in ruff
        server = manager.pool.servers["ruff"]
        doc = server.document(path.as_uri())
        assert doc is not None
        command = {
            "command": "ruff.applyAutofix",
            "arguments": [{"uri": doc.uri, "version": doc.version}],
        }
        # The file changes on disk after the server computed its edit: refused as stale.
        taken = ServerEdits(writer)

        async def late_change(edit: Any, encoding: Any, versions: Any) -> None:
            path.write_text(SOURCE + "# changed\n")
            await taken.on_edit(edit, encoding, versions)

        await manager.execute_command("ruff", command, late_change)
        assert path.read_text() == SOURCE + "# changed\n" and not taken.result.applied
        assert [e.kind for e in taken.refused] == [ErrorKind.STALE_EDIT] and told == []
        # As the server saw it: applied, and the session told.
        path.write_text(SOURCE)
        taken = ServerEdits(writer)
        await manager.execute_command("ruff", command, taken.on_edit)
        assert path.read_text() == FIXED and taken.refused == []
        assert taken.result.applied and taken.result.files_changed == ["m.py"]
        assert "-import os\n" in taken.result.diff and told == [[path]]


@dataclass
class _Session:
    """The parts of a session the edit tools use."""

    root: Path
    lsp: LanguageService
    told: list[list[Path]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.writer = RootWriter(self.root, self.files_changed)

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        self.told.append(list(paths))


async def test_code_action_commands(root: Path, nursery: trio.Nursery) -> None:
    path = root / "m.py"
    async with running(root, real_config()) as (manager, _):
        await manager.server_diagnostics(path)
        doc = manager.pool.servers["ruff"].document(path.as_uri())
        assert doc is not None
        session = _Session(root, manager)
        await nursery.start(session.writer.run)
        ctx = ToolContext(cast(Any, session), NoCaller())
        arguments = [{"uri": doc.uri, "version": doc.version}]
        # A bare Command, as servers may offer instead of a CodeAction.
        command = {"title": "Fix all", "command": "ruff.applyAutofix", "arguments": arguments}
        item = structure(command, lsp.Command)
        action = Action(0, "ruff", "Fix all", None, False, None, [], item, command)
        done = await _apply_action(ctx, manager, action, Basis())
        assert done.applied and done.files_changed == ["m.py"] and path.read_text() == FIXED
        assert session.told == [[path]]
        # A CodeAction with an edit and a command: the edit first, then the command.
        path.write_text(SOURCE)
        await manager.flush()
        await manager.server_diagnostics(path)
        doc = manager.pool.servers["ruff"].document(path.as_uri())
        assert doc is not None and doc.text == SOURCE
        header = {"range": _range(0, 0, 0, 0), "newText": "# header\n"}
        both = {
            "title": "Header, then fix",
            "kind": "quickfix",
            "edit": {"changes": {doc.uri: [header]}},
            "command": {
                "title": "fix",
                "command": "ruff.applyAutofix",
                "arguments": [{"uri": doc.uri, "version": doc.version}],
            },
        }
        basis = Basis(manager.snapshot("ruff"))
        item = structure(both, lsp.CodeAction)
        action = Action(0, "ruff", "Header, then fix", "quickfix", False, None, [], item, both)
        done = await _apply_action(ctx, manager, action, basis)
        # The server is told of the header before the command, which fixes the new text.
        assert path.read_text() == "# header\n" + FIXED
        assert done.files_changed == ["m.py"] and done.edits == 2
        assert "+# header\n" in done.diff and "-import os\n" in done.diff
        # An edit computed from content the file no longer has is refused, the command unrun.
        path.write_text(SOURCE + "# x\n")
        with pytest.raises(ToolError) as info:
            await _apply_action(ctx, manager, action, basis)
        assert info.value.kind is ErrorKind.STALE_EDIT and path.read_text() == SOURCE + "# x\n"


def _range(line: int, char: int, end_line: int, end_char: int) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": char},
        "end": {"line": end_line, "character": end_char},
    }
