"""A file's document symbols are read again only when the text the servers see changed:
workspace symbols ask up to 50 files' outlines on every call (real basedpyright)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon import caches
from codeward.daemon.intel.inputs import source_file
from codeward.daemon.lsp import texts
from codeward.daemon.tools.symbols import _outline_of
from tests.lsp_support import needs, real_config, running

TEXT = "def f(x: int) -> int:\n    y = x\n    return y\n\n\nclass C:\n    z = 1\n"


def names(tree: object) -> set[str]:
    return {symbol.name for symbol in tree or []}  # type: ignore[attr-defined]


@needs("basedpyright")
async def test_an_outline_is_asked_again_only_when_its_text_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(texts, "RACY_NS", -(10**12))  # stats trusted at once (no wait)
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(TEXT)
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            first, _ = await _outline_of(manager, source_file(manager, "a.py"))
            again, _ = await _outline_of(manager, source_file(manager, "a.py"))
        assert names(first) == {"f", "C"} and again is first  # the same text: kept
        (root / "a.py").write_text(TEXT + "\n\ndef g() -> None:\n    pass\n")
        with trio.fail_after(60):
            changed, _ = await _outline_of(manager, source_file(manager, "a.py"))
        assert changed is not first and names(changed) == {"f", "C", "g"}
        caches.release()  # a session ended: nothing of this one kept
        with trio.fail_after(60):
            asked, _ = await _outline_of(manager, source_file(manager, "a.py"))
        assert asked is not changed and names(asked) == {"f", "C", "g"}
