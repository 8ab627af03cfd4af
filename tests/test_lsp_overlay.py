"""Editor buffers as an overlay over the disk, through the LanguageService with real
basedpyright and ruff: the servers see an open buffer's text (diagnostics, hover, symbols),
a disk change of a held file does not override it, a restarted server reopens it, a
preview of it gives the buffer back, two holders hand it to each other, and closing or
releasing gives the servers the disk's text back (in a root of its own, and on servers
shared by the roots of one repository)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.lsp.overlay import Buffer
from codeward.daemon.lsp.service import LanguageService, SharedServers
from tests.lsp_support import needs, real_config, running

pytestmark = needs("basedpyright", "ruff")

DISK = "def on_disk(x: int) -> int:\n    return x\n"
# unsaved: a new function, and a new type error on line 4
BUFFER = "def on_disk(x: int) -> int:\n    return x\n\ndef fresh(y: int) -> str:\n    return y\n"


OPTIONS = {"tabSize": 4, "insertSpaces": True}


class FakeEditor:
    """The editor side of the seam (the editor dialect's stand-in): records its edits."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.edits: list[tuple[lsp.WorkspaceEdit, str]] = []

    @property
    def name(self) -> str:
        return self._name

    async def apply_edit(self, edit: lsp.WorkspaceEdit, label: str) -> bool:
        self.edits.append((edit, label))
        return True


def project(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    root.mkdir()
    (root / "a.py").write_text(DISK)
    (root / "b.py").write_text("from a import on_disk\n\nprint(on_disk(1))\n")
    return root


def seen(manager: LanguageService, path: Path) -> dict[str, str]:
    """The text each running server has for `path`."""
    found: dict[str, str] = {}
    for name, server in manager.pool.servers.items():
        doc = server.document(path.as_uri())
        if doc is not None:
            found[name] = doc.text
    return found


async def errors(manager: LanguageService, path: Path) -> set[tuple[int, str]]:
    result = await manager.diagnostics(path)
    return {(d.line, str(d.code)) for d in result.diagnostics if d.severity == 1}


async def symbols(manager: LanguageService, path: Path) -> set[str]:
    answer = await manager.request(
        path,
        "textDocument/documentSymbol",
        lambda ctx: {"textDocument": ctx.text_document},
    )
    return {item["name"] for item in answer.result}


async def hover(manager: LanguageService, path: Path, line: int, character: int) -> str:
    answer = await manager.request(
        path,
        "textDocument/hover",
        lambda ctx: {"textDocument": ctx.text_document, "position": ctx.position(line, character)},
    )
    return str((answer.result or {}).get("contents", ""))


async def test_the_servers_see_an_unsaved_buffer_until_it_is_released(tmp_path: Path) -> None:
    root = project(tmp_path)
    a = root / "a.py"
    editor = FakeEditor("Neovim 0.7.2 (pid 1)")
    async with running(root, real_config(), watch=True) as (manager, _):
        with trio.fail_after(60):
            assert await errors(manager, a) == set()
            await manager.editor_open(editor, a, BUFFER, 3)
            buffer = manager.editor_buffer(a)
            assert buffer == Buffer(a, BUFFER, 3, editor)
            # both servers of the language were sent the buffer at once
            assert seen(manager, a) == {"basedpyright": BUFFER, "ruff": BUFFER}
            result = await manager.diagnostics(a)
            assert result.text == BUFFER
            assert (5, "reportReturnType") in await errors(manager, a)
            assert "fresh" in await symbols(manager, a)
            assert "fresh" in await hover(manager, a, 4, 6)

            # the disk changes under the buffer: the servers keep the buffer's text
            server = manager.pool.servers["basedpyright"]
            a.write_text("def other() -> None:\n    pass\n")
            manager.files_changed([a])
            await manager.flush()
            assert seen(manager, a)["basedpyright"] == BUFFER
            assert "fresh" in await symbols(manager, a)
            index = manager.line_index(a)
            assert index is not None and index.line(3) == "def fresh(y: int) -> str:"

            # a change of the buffer: its whole new text
            changed = BUFFER.replace("-> str", "-> int")
            await manager.editor_change(editor, a, changed, 4)
            assert manager.editor_buffer(a) == Buffer(a, changed, 4, editor)
            assert seen(manager, a)["basedpyright"] == changed
            assert (5, "reportReturnType") not in await errors(manager, a)

            # a server restarted reopens the document with the buffer's text
            pid = server.status()["pid"]
            server.halt("restarted by the test")
            await server.connection()
            assert server.status()["pid"] != pid
            assert seen(manager, a)["basedpyright"] == changed
            assert "fresh" in await symbols(manager, a)

            # released: the disk's text again, for every server that has it open
            await manager.editor_release(editor)
            assert manager.editor_buffer(a) is None
            disk = a.read_text()
            assert seen(manager, a) == {"basedpyright": disk, "ruff": disk}
            assert await symbols(manager, a) == {"other"}
            assert (await manager.diagnostics(a)).text == disk


async def held_hover(manager: LanguageService, path: Path, line: int, character: int) -> str:
    """A hover the editor dialect's way (`request_held`)."""
    answer = await manager.request_held(
        path,
        "textDocument/hover",
        lambda ctx: {"textDocument": ctx.text_document, "position": ctx.position(line, character)},
    )
    return str((answer.result or {}).get("contents", ""))


async def test_an_editors_request_about_its_buffer_reads_no_disk(tmp_path: Path) -> None:
    """An editor's request about a file it holds is answered on its buffer with nothing
    read from the disk: neither the file, changed behind the editor's back, nor another
    open document (the watcher tells the servers of those); a request about a file no
    editor holds syncs it, and the other open documents, from the disk first; a server
    that stopped is started again with the buffer."""
    root = project(tmp_path)
    a, b = root / "a.py", root / "b.py"
    editor = FakeEditor("Neovim 0.7.2 (pid 1)")
    async with running(root, real_config()) as (manager, _):  # no watcher: nothing told
        with trio.fail_after(60):
            assert "on_disk" in await hover(manager, b, 3, 8)  # b.py open, from the disk
            await manager.editor_open(editor, a, BUFFER, 1)
            assert "fresh" in await held_hover(manager, a, 4, 6)
            a.write_text("def other() -> None:\n    pass\n")
            b.write_text("print(2)\n")
            seen_b = seen(manager, b)
            assert "fresh" in await held_hover(manager, a, 4, 6)  # the buffer's text
            assert seen(manager, a)["basedpyright"] == BUFFER
            assert seen(manager, b) == seen_b  # not looked at
            # a file no editor holds: synced from the disk first (the file asked about
            # and the other open documents alike)
            assert "print" in await held_hover(manager, b, 1, 2)
            assert seen(manager, b)["basedpyright"] == "print(2)\n"
            # a buffer the editor changed: the new text at once
            changed = BUFFER.replace("fresh", "renamed")
            await manager.editor_change(editor, a, changed, 2)
            assert "renamed" in await held_hover(manager, a, 4, 6)
            # its server stopped: started again, the buffer opened again, and answered
            server = manager.pool.servers["basedpyright"]
            pid = server.status()["pid"]
            server.halt("stopped by the test")
            assert "renamed" in await held_hover(manager, a, 4, 6)
            assert server.status()["pid"] != pid
            assert seen(manager, a)["basedpyright"] == changed
            # routed as `request` routes: formatting to ruff, the first server offering it
            formatting = await manager.request_held(
                a, "textDocument/formatting",
                lambda ctx: {"textDocument": ctx.text_document, "options": OPTIONS},
            )  # fmt: skip
            assert formatting.server == "ruff"


async def test_two_editors_hand_a_file_to_each_other(tmp_path: Path) -> None:
    root = project(tmp_path)
    a = root / "a.py"
    first, second = FakeEditor("first"), FakeEditor("second")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            await manager.editor_open(first, a, BUFFER, 1)
            theirs = DISK + "\ndef theirs() -> None:\n    pass\n"
            await manager.editor_open(second, a, theirs, 7)
            # the last one to open or change it is what the servers see
            assert manager.editor_buffer(a) == Buffer(a, theirs, 7, second)
            assert "theirs" in await symbols(manager, a)
            await manager.editor_change(first, a, BUFFER + "\nz = 1\n", 2)
            assert "z" in await symbols(manager, a)
            # the first one closes: the second one's buffer
            await manager.editor_close(first, a)
            assert manager.editor_buffer(a) == Buffer(a, theirs, 7, second)
            assert seen(manager, a)["basedpyright"] == theirs
            assert "fresh" not in await symbols(manager, a)
            # closing a file it does not hold changes nothing
            await manager.editor_close(first, a)
            assert seen(manager, a)["basedpyright"] == theirs
            # the second one closes it too: the disk
            await manager.editor_close(second, a)
            assert manager.editor_buffer(a) is None
            assert seen(manager, a)["basedpyright"] == DISK
            assert await symbols(manager, a) == {"on_disk"}


async def test_a_preview_of_a_held_file_gives_the_buffer_back(tmp_path: Path) -> None:
    root = project(tmp_path)
    a = root / "a.py"
    editor = FakeEditor("emacs")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            await manager.editor_open(editor, a, BUFFER, 1)
            shown = "def shown() -> int:\n    return ''\n"
            async with manager.previewing() as preview, preview.show(a, shown.encode()):
                assert seen(manager, a)["basedpyright"] == shown
                assert (await manager.diagnostics(a)).text == shown
            assert seen(manager, a) == {"basedpyright": BUFFER, "ruff": BUFFER}
            assert "fresh" in await symbols(manager, a)


async def test_servers_started_anew_for_a_new_trust_get_the_buffer(tmp_path: Path) -> None:
    root = project(tmp_path)
    a = root / "a.py"
    editor = FakeEditor("kakoune")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            await manager.editor_open(editor, a, BUFFER, 1)
            old = manager.pool.servers["basedpyright"]
            await manager.set_restricted(True)
            assert manager.pool.servers["basedpyright"] is not old
            assert seen(manager, a) == {"basedpyright": BUFFER, "ruff": BUFFER}
            assert "fresh" in await symbols(manager, a)


async def test_files_outside_the_root_or_of_no_language_are_kept(tmp_path: Path) -> None:
    root = project(tmp_path)
    notes, outside = root / "notes.txt", tmp_path / "elsewhere.py"
    notes.write_text("disk\n")
    editor = FakeEditor("helix")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(30):
            await manager.editor_open(editor, notes, "unsaved\n", 1)
            await manager.editor_open(editor, outside, "x = 1\n", 1)
            assert manager.editor_buffer(notes) == Buffer(notes, "unsaved\n", 1, editor)
            assert manager.editor_buffer(outside) == Buffer(outside, "x = 1\n", 1, editor)
            assert manager.pool.servers == {}  # no server started for either
            await manager.editor_release(editor)
            assert manager.editor_buffer(notes) is None
            assert manager.editor_buffer(outside) is None


@asynccontextmanager
async def shared_servers() -> AsyncIterator[SharedServers]:
    shared = SharedServers()
    async with trio.open_nursery() as nursery:
        await nursery.start(shared.run)
        yield shared
        nursery.cancel_scope.cancel()


def git(*args: Any) -> None:
    subprocess.run(["git", *map(str, args)], check=True, capture_output=True)


async def test_a_buffer_on_servers_shared_by_a_repository(tmp_path: Path) -> None:
    """The roots of one repository share the processes: a buffer held through the
    repository's root is what the nested root's requests see too, a linked worktree's
    same-named file keeps its own disk text, and release gives the disk back to both."""
    repo = project(tmp_path)
    (repo / "sub").mkdir()
    (repo / "sub" / "c.py").write_text(DISK)
    git("init", "-q", repo)
    git("-C", repo, "add", ".")
    git("-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    tree = Path(os.path.realpath(tmp_path / "tree"))
    git("-C", repo, "worktree", "add", "-q", tree)
    c, tree_c = repo / "sub" / "c.py", tree / "sub" / "c.py"
    editor = FakeEditor("vscode")
    async with (
        shared_servers() as shared,
        running(repo, real_config(), shared=shared) as (manager, _),
        running(repo / "sub", real_config(), shared=shared) as (nested, _),
        running(tree, real_config(), shared=shared) as (other, _),
    ):
        with trio.fail_after(90):
            assert await symbols(other, tree_c) == {"on_disk"}
            await manager.editor_open(editor, c, BUFFER, 1)
            server = manager.pool.servers["basedpyright"]
            assert server is other.pool.servers["basedpyright"]  # one process
            assert "fresh" in await symbols(manager, c)
            # the nested root's requests of the same file: the buffer (its flush never
            # puts the disk back), and its diagnostics are the buffer's
            assert nested.editor_buffer(c) == Buffer(c, BUFFER, 1, editor)
            assert "fresh" in await symbols(nested, c)
            assert (await nested.diagnostics(c)).text == BUFFER
            # the worktree's file of the same name is its own, on disk
            assert await symbols(other, tree_c) == {"on_disk"}
            assert other.editor_buffer(tree_c) is None
            await manager.editor_release(editor)
            assert server.document(c.as_uri()).text == DISK  # type: ignore[union-attr]
            assert await symbols(nested, c) == {"on_disk"}
