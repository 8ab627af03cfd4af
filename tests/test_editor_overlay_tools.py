"""Agents' tools on files an editor holds (a stand-in editor in the daemon's process, real
basedpyright and ruff): reads answer on the editor's text and say so; writes to a buffer
that equals the disk write the disk and send the editor the same edit; a buffer with
unsaved changes refuses the write (naming the editor), atomically across files."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.edits import Basis, RootWriter
from codeward.daemon.edits.actions import Action
from codeward.daemon.edits.follow import text_edits
from codeward.daemon.edits.text import apply_text_edits
from codeward.daemon.lsp.overlay import Buffer
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.shapes import structure
from codeward.daemon.server import Daemon
from codeward.daemon.tools.edits import _apply_action
from codeward.daemon.tools.registry import NoCaller, ToolContext
from codeward.protocol.render.tool_text import tool_text
from tests.intel_support import write
from tests.lsp_support import needs, real_config, running
from tests.rpc import RpcClient, RpcFailure

pytestmark = needs("basedpyright", "ruff")

A = "def on_disk(x: int) -> int:\n    return x\n"
B = "from a import on_disk\n\nprint(on_disk(1))\n"
# unsaved in the editor: a new function (line 5) with a type error on line 6
UNSAVED = A + "\n\ndef fresh(y: int) -> str:\n    return y\n"
UNUSED = "import os\nimport sys\n\nprint(sys.argv)\n"
FIXED = "import sys\n\nprint(sys.argv)\n"


class Editor:
    """The editor side of the seam (the editor dialect's stand-in): applies the edits it
    is sent to its buffers and tells the service, as an editor's didChange would (with a
    `nursery`: handed over by a task of its own after its answer, as the dialect does)."""

    def __init__(
        self, service: LanguageService, answer: bool = True, nursery: trio.Nursery | None = None
    ) -> None:
        self.service = service
        self.answer = answer
        self.nursery = nursery
        self.texts: dict[Path, tuple[str, int]] = {}
        self.edits: list[tuple[lsp.WorkspaceEdit, str]] = []

    @property
    def name(self) -> str:
        return "Neovim 0.7.2 (pid 4242)"

    async def open(self, path: Path, text: str, version: int = 1) -> None:
        self.texts[path] = (text, version)
        await self.service.editor_open(self, path, text, version)

    async def apply_edit(self, edit: lsp.WorkspaceEdit, label: str) -> bool:
        self.edits.append((edit, label))
        if not self.answer:
            return False
        for change in edit.document_changes or []:
            assert isinstance(change, lsp.TextDocumentEdit)
            path = Path(change.text_document.uri.removeprefix("file://"))
            text, version = self.texts[path]
            assert change.text_document.version == version  # computed on this buffer
            edits = [e for e in change.edits if isinstance(e, lsp.TextEdit)]
            text = apply_text_edits(text, edits, "utf-16")
            self.texts[path] = (text, version + 1)
            if self.nursery is None:
                await self.service.editor_change(self, path, text, version + 1)
            else:
                self.nursery.start_soon(self.service.editor_change, self, path, text, version + 1)
        return True


def service_of(daemon: Daemon, root: Path) -> LanguageService:
    (session,) = [s for s in daemon.sessions.sessions.values() if s.root == root]
    return session.lsp


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    return info.value


async def test_reads_answer_on_the_editors_text(
    client: RpcClient, project: Path, daemon: Daemon
) -> None:
    write(project, {"a.py": A, "b.py": B})
    await client.tool("get_symbols", path="a.py")
    editor = Editor(service_of(daemon, project))
    with trio.fail_after(60):
        await editor.open(project / "a.py", UNSAVED, 3)
        found = await client.tool("get_symbols", path="a.py")
        names = [s["name"] for s in found["symbols"]]
        assert names == ["on_disk", "fresh"]
        assert found["source"] == "editor" and found["editor_version"] == 3
        assert found["editor_files"] == [
            {"path": "a.py", "version": 3, "holder": "Neovim 0.7.2 (pid 4242)"}
        ]
        hover = await client.tool("get_hover_info", path="a.py", line=5, character=5)
        assert "fresh" in str(hover) and hover["source"] == "editor"
        # a name only the buffer has: found by name addressing, on the buffer's text
        arguments = {"path": "a.py", "symbol": "fresh"}
        named = await client.call(
            "tools/call", {"name": "go_to_definition", "arguments": arguments}
        )
        assert named["status"] == "found" and named["source"] == "editor"
        assert (named["definition"]["line"], named["at"]["line"]) == (5, 5)
        diagnostics = await client.tool("get_diagnostics", path="a.py", severity="error")
        assert [d["line"] for d in diagnostics["diagnostics"]] == [6]
        assert diagnostics["source"] == "editor" and diagnostics["editor_version"] == 3
        # an unheld file's answer says nothing of editors
        other = await client.tool("get_symbols", path="b.py")
        assert "source" not in other and "editor_files" not in other
        # the buffer saved: the same text as the disk, nothing to say
        (project / "a.py").write_text(UNSAVED)
        again = await client.tool("get_symbols", path="a.py")
        assert [s["name"] for s in again["symbols"]] == ["on_disk", "fresh"]
        assert "source" not in again


async def test_an_edit_of_a_clean_buffer_writes_the_disk_and_follows_in_the_editor(
    client: RpcClient, project: Path, daemon: Daemon, nursery: trio.Nursery
) -> None:
    write(project, {"a.py": A, "b.py": B})
    a, b = project / "a.py", project / "b.py"
    service = service_of(daemon, project)
    editor = Editor(service, nursery=nursery)  # its didChange comes after its answer
    with trio.fail_after(90):
        await editor.open(a, A, 7)
        done = await client.tool(
            "edit_file",
            path="a.py",
            edits=[{"line": 2, "character": 12, "end_line": 2, "end_character": 13,
                    "new_text": "x + 1"}],
            mode="apply",
        )  # fmt: skip
        assert done["written"] and a.read_text() == A.replace("return x", "return x + 1")
        assert done["editors"] == [
            {"holder": "Neovim 0.7.2 (pid 4242)", "files": ["a.py"], "applied": True}
        ]
        ((edit, label),) = editor.edits
        assert "a.py" in label
        (change,) = edit.document_changes or []
        assert isinstance(change, lsp.TextDocumentEdit)
        assert change.text_document.version == 7  # the buffer's version it was computed on
        assert editor.texts[a] == (a.read_text(), 8)  # the buffer followed
        # the write waited for the editor's change: what the servers see is the new text
        assert service.editor_buffer(a) == Buffer(a, a.read_text(), 8, editor)

        # a rename across the held file and an unheld one: both written, the editor gets
        # the held one's edit only, and its buffer follows
        renamed = await client.tool(
            "rename_symbol", path="a.py", line=1, character=5, new_name="moved"
        )
        assert sorted(renamed["files_changed"]) == ["a.py", "b.py"]
        assert "def moved" in a.read_text() and "moved(1)" in b.read_text()
        assert renamed["editors"] == [
            {"holder": "Neovim 0.7.2 (pid 4242)", "files": ["a.py"], "applied": True}
        ]
        assert editor.texts[a] == (a.read_text(), 9) and b not in editor.texts
        assert "source" not in renamed  # the buffer is the disk's text again


async def test_a_dirty_buffer_refuses_every_write_atomically(
    client: RpcClient, project: Path, daemon: Daemon
) -> None:
    write(project, {"a.py": A, "b.py": B})
    a, b = project / "a.py", project / "b.py"
    editor = Editor(service_of(daemon, project))
    with trio.fail_after(90):
        await editor.open(b, B + "print(on_disk(2))\n", 2)  # unsaved
        # a rename from the unheld file that reaches the held one: nothing written anywhere
        err = await failure(client, "rename_symbol", path="a.py", line=1, character=5, new_name="z")
        assert err.kind == "stale_edit"
        assert err.data["holder"] == "Neovim 0.7.2 (pid 4242)" and err.data["path"] == "b.py"
        assert "unsaved changes" in err.message and "b.py" in err.message
        assert a.read_text() == A and b.read_text() == B and editor.edits == []
        # the agent's own edit, and a formatting of it
        err = await failure(client, "edit_file", path="b.py", content="x = 1\n", mode="apply")
        assert err.kind == "stale_edit" and err.data["holder"] == "Neovim 0.7.2 (pid 4242)"
        err = await failure(client, "format_code", path="b.py")
        assert err.kind == "stale_edit" and err.data["holder"] == "Neovim 0.7.2 (pid 4242)"
        assert b.read_text() == B and editor.edits == []
        # from a Lua script: the same refusal, and the same answer on the buffer
        script = (
            "local ok, err = pcall(codeward.call, 'edit_file', "
            "{path = 'b.py', content = 'x = 1\\n', mode = 'apply'})\n"
            "local symbols = codeward.call('get_symbols', {path = 'b.py'})\n"
            "return {ok = ok, kind = err.kind, holder = err.holder, source = symbols.source}"
        )
        lua = (await client.call("lua/eval", {"source": script}))["result"]
        assert lua["ok"] is False and lua["kind"] == "stale_edit"
        assert lua["holder"] == editor.name
        assert lua["source"] == "editor" and b.read_text() == B
        # a preview is computed on the editor's text and writes nothing
        shown = await client.tool("edit_file", path="b.py", content=B, mode="preview")
        assert not shown["written"] and "-print(on_disk(2))" in shown["diff"]


async def test_an_editor_that_does_not_follow_is_said(
    client: RpcClient, project: Path, daemon: Daemon
) -> None:
    write(project, {"a.py": "x=1\n"})
    a = project / "a.py"
    editor = Editor(service_of(daemon, project), answer=False)
    with trio.fail_after(60):
        await editor.open(a, "x=1\n", 1)
        done = await client.tool("format_code", path="a.py")
        assert done["applied"] and a.read_text() == "x = 1\n"  # the disk was written
        (followed,) = done["editors"]
        assert followed["applied"] is False and followed["files"] == ["a.py"]
        assert "did not apply" in followed["reason"] and "disk was written" in followed["reason"]
        # the buffer kept its text: now unsaved against the disk, so the next write waits
        err = await failure(client, "edit_file", path="a.py", content="y = 2\n", mode="apply")
        assert err.kind == "stale_edit" and err.data["holder"] == editor.name
        assert a.read_text() == "x = 1\n"


async def test_a_moved_file_is_moved_and_its_editor_told_it_did_not_follow(
    client: RpcClient, project: Path, daemon: Daemon
) -> None:
    write(project, {"a.py": A, "b.py": B})
    a, b = project / "a.py", project / "b.py"
    editor = Editor(service_of(daemon, project))
    with trio.fail_after(90):
        await editor.open(a, A, 1)
        await editor.open(b, B, 1)
        moved = await client.tool("move_file", path="a.py", new_path="pkg/a2.py", mode="apply")
        assert moved["moved"] and (project / "pkg" / "a2.py").read_text() == A
        assert "a2 import on_disk" in b.read_text() and not a.exists()
        (followed,) = moved["editors"]
        assert followed["files"] == ["a.py", "b.py"] and followed["applied"] is False
        assert "a.py moved or deleted on disk" in followed["reason"]
        # b.py's import was still sent to the editor, which applied it
        ((edit, _),) = editor.edits
        assert [c.text_document.uri for c in edit.document_changes or []] == [b.as_uri()]  # type: ignore[union-attr]
        assert editor.texts[b][0] == b.read_text()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb", "a\nb\nc"),  # no final newline: the end of the last line, in UTF-16
        ("\U0001f600 x\r\ny\r\n", "\U0001f600 x\r\nz\r\nw\r\n"),
        ("", "new\n"),
        ("one\n\U0001f600two", "one\n"),
    ],
)
def test_the_editor_gets_line_edits_of_the_old_text_in_utf16(before: str, after: str) -> None:
    edits = text_edits(before, after)
    assert edits and apply_text_edits(before, edits, "utf-16") == after
    assert text_edits(after, after) == []


def test_the_text_says_what_editors_had_to_do_with_it() -> None:
    result = {
        "symbols": [],
        "source": "editor",
        "editor_version": 3,
        "editor_files": [{"path": "a.py", "version": 3, "holder": "Neovim"}],
        "editors": [
            {"holder": "Emacs", "files": ["b.py"], "applied": False, "reason": "it said no"}
        ],
    }
    text = tool_text("get_symbols", result)
    assert "(answered on an editor's unsaved text: a.py (version 3 in Neovim))" in text
    assert "(Emacs: it said no)" in text


async def test_a_servers_edit_during_a_command_follows_in_the_editor(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    """ruff's fix-all command asks codeward to apply its edit (in the server's task): the
    editor holding the file gets it, and the calling tool's `editors` says so."""
    root = Path(os.path.realpath(tmp_path))
    path = root / "m.py"
    path.write_text(UNUSED)
    async with running(root, real_config()) as (manager, _):
        writer = RootWriter(root, lambda paths, created: None, buffers=manager.editor_buffers)
        await nursery.start(writer.run)
        session = SimpleNamespace(root=root, lsp=manager, writer=writer)
        ctx = ToolContext(cast(Any, session), NoCaller())
        editor = Editor(manager)
        with trio.fail_after(60):
            await editor.open(path, UNUSED, 5)
            await manager.server_diagnostics(path)
            doc = manager.pool.servers["ruff"].document(path.as_uri())
            assert doc is not None and doc.text == UNUSED  # the buffer, as ruff has it
            arguments = [{"uri": doc.uri, "version": doc.version}]
            command = {"title": "Fix all", "command": "ruff.applyAutofix", "arguments": arguments}
            action = Action(0, "ruff", "Fix all", None, False, None, [],
                            structure(command, lsp.Command), command)  # fmt: skip
            done = await _apply_action(ctx, manager, action, Basis())
        assert done.applied and path.read_text() == FIXED
        assert editor.texts[path] == (FIXED, 6)
        assert ctx.followed == [{"holder": editor.name, "files": ["m.py"], "applied": True}]
