"""A file's document symbols are read again only when the text the servers see changed:
workspace symbols ask up to 50 files' outlines on every call (real basedpyright), and where
their functions lie (in client positions) is kept with them."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon import caches
from codeward.daemon.intel.inputs import source_file
from codeward.daemon.intel.outlines import OUTLINES
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
        path = root / "a.py"
        with trio.fail_after(60):
            first, answer = await _outline_of(manager, source_file(manager, "a.py"))
            again, _ = await _outline_of(manager, source_file(manager, "a.py"))
        assert names(first) == {"f", "C"} and again is first  # the same text: kept
        functions = OUTLINES.callables(path, first or [], answer)
        assert OUTLINES.callables(path, first or [], answer) is functions  # kept with it
        # `y` (2:5) and `x` (1:7) are inside `f`, `f` (1:5) is its name, `z` (7:5) a class's
        assert [functions.holds(p) for p in ((2, 5), (1, 7), (1, 5), (7, 5))] == [
            True, True, False, False,
        ]  # fmt: skip
        path.write_text(TEXT + "\n\ndef g() -> None:\n    pass\n")
        with trio.fail_after(60):
            changed, answer = await _outline_of(manager, source_file(manager, "a.py"))
        assert changed is not first and names(changed) == {"f", "C", "g"}
        moved = OUTLINES.callables(path, changed or [], answer)
        assert moved is not functions and moved.holds((11, 5)) and not moved.holds((10, 5))
        # a tree that is not the one kept (its file changed meanwhile): made for the call
        assert OUTLINES.callables(path, first or [], answer) is not functions
        caches.release()  # a session ended: nothing of this one kept
        with trio.fail_after(60):
            asked, _ = await _outline_of(manager, source_file(manager, "a.py"))
        assert asked is not changed and names(asked) == {"f", "C", "g"}
