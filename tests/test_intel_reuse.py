"""Tool inputs reuse the open document's text only while the file on disk is unchanged
(real basedpyright): a change between two calls is always seen by the second."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from codeward.daemon.intel.inputs import source_file
from codeward.daemon.lsp import texts as texts_module
from codeward.daemon.lsp.documents import UNTRUSTED
from codeward.daemon.lsp.positions import split_lines
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from codeward.daemon.tools.definitions import go_to_definition
from codeward.daemon.tools.positions import PositionArgs
from codeward.daemon.tools.registry import NoCaller, ToolContext
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import needs, real_config, running

pytestmark = needs("basedpyright")

CODE = "def f() -> int:\n    return 1\n\n\nvalue = f()\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    root.mkdir()
    (root / "a.py").write_text(CODE)
    return root


async def open_document(manager: LanguageService, path: Path) -> None:
    def params(doc: DocumentContext) -> dict[str, Any]:
        return {"textDocument": doc.text_document, "position": doc.position(1, 5)}

    with trio.fail_after(30):
        await manager.request(path, "textDocument/hover", params, wait_ready=False)


def document_lines(manager: LanguageService, path: Path) -> list[str]:
    doc = manager.pool.servers["basedpyright"].document(path.as_uri())
    assert doc is not None
    return doc.index.lines


async def test_open_text_is_reused_until_the_file_changes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(texts_module, "RACY_NS", 0)  # trust stats of files just written
    path = root / "a.py"
    async with running(root, real_config()) as (manager, _):
        await open_document(manager, path)
        source = source_file(manager, "a.py")
        assert source.lines is document_lines(manager, path)  # not read again
        # Changed on disk, no event, no request in between: read from disk.
        path.write_text(CODE + "extra = 2\n")
        changed = source_file(manager, "a.py")
        assert changed.lines == split_lines(CODE + "extra = 2\n")
        assert changed.lines is not document_lines(manager, path)
        # Replaced by a file of the same size (another inode): read from disk.
        (root / "new.py").write_text(CODE.replace("value", "other"))
        os.replace(root / "new.py", path)
        assert source_file(manager, "a.py").lines == split_lines(CODE.replace("value", "other"))
        # The next request syncs the document; its text is reused again.
        await open_document(manager, path)
        again = source_file(manager, "a.py")
        assert again.lines is document_lines(manager, path)
        assert "other = f()" in again.lines
        # After files_changed (git writes, edits) the same holds.
        path.write_text(CODE)
        manager.files_changed([path])
        await manager.flush()
        assert source_file(manager, "a.py").lines is document_lines(manager, path)
        assert source_file(manager, "a.py").lines == split_lines(CODE)


async def test_a_file_written_just_now_is_never_trusted(root: Path) -> None:
    """Within the racy window a same-size rewrite may keep the stat: the file is read."""
    path = root / "a.py"
    async with running(root, real_config()) as (manager, _):
        await open_document(manager, path)
        path.write_text(CODE.replace("1", "2"))
        await open_document(manager, path)  # synced from a file written just now
        doc = manager.pool.servers["basedpyright"].document(path.as_uri())
        assert doc is not None and "return 2" in doc.text
        path.write_text(CODE.replace("1", "3"))  # same size, maybe the same timestamps
        source = source_file(manager, "a.py")
        assert "    return 3" in source.lines
        if doc.stat is UNTRUSTED:
            assert source.lines is not doc.index.lines


async def test_text_that_is_not_utf8_is_refused_even_when_open(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(texts_module, "RACY_NS", 0)
    (root / "latin.py").write_bytes(b"x = '\xe9'\n")
    (root / "nul.py").write_bytes(b"x = 1\x00\n")
    async with running(root, real_config()) as (manager, _):
        for name in ("latin.py", "nul.py"):
            await open_document(manager, root / name)  # the server has it, decoded
            with pytest.raises(ToolError) as info:
                source_file(manager, name)
            assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE, name
            assert "not a UTF-8 text file" in info.value.message


async def test_bad_paths_keep_their_errors(root: Path, tmp_path: Path) -> None:
    (root / "pkg").mkdir()
    (root / "notes.txt").write_text("hello\n")
    (tmp_path / "secret.py").write_text("s = 1\n")
    (root / "link.py").symlink_to(tmp_path / "secret.py")
    async with running(root, real_config()) as (manager, _):
        cases = {
            "missing.py": ErrorKind.FILE_NOT_FOUND,
            "pkg": ErrorKind.INVALID_ARGUMENTS,
            ".": ErrorKind.INVALID_ARGUMENTS,
            "link.py": ErrorKind.PATH_OUTSIDE_PROJECT,
            "../secret.py": ErrorKind.PATH_OUTSIDE_PROJECT,
            "notes.txt": ErrorKind.UNSUPPORTED_FILE_TYPE,
            "": ErrorKind.INVALID_ARGUMENTS,
        }
        for name, kind in cases.items():
            with pytest.raises(ToolError) as info:
                source_file(manager, name)
            assert info.value.kind is kind, name
            assert str(tmp_path) not in info.value.message
        source = source_file(manager, "a.py")
        assert source.shown == "a.py" and source.language == "python"


async def test_definition_sees_an_edit_made_between_two_calls(root: Path) -> None:
    path = root / "a.py"
    async with running(root, real_config()) as (manager, _):
        ctx = ToolContext(SimpleNamespace(lsp=manager, root=root), NoCaller())  # type: ignore[arg-type]
        with trio.fail_after(30):
            first = await go_to_definition(ctx, PositionArgs(path="a.py", line=5, character=9))
        assert first["definition"]["line"] == 1
        path.write_text("# moved\n\n" + CODE)  # no watcher here, no files_changed
        with trio.fail_after(30):
            second = await go_to_definition(ctx, PositionArgs(path="a.py", line=7, character=9))
        assert second["definition"]["line"] == 3
        assert second["definition"]["preview"] == "def f() -> int:"
