"""Bulk answers shaped in fewer steps give the answers a step per item gave: real paths with
each file's folder resolved once, workspace symbols read as msgspec Structs and shaped a
(rank, path) at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.config import Config
from codeward.daemon.intel.locations import Locator
from codeward.daemon.intel.symbols import at_name, best_first, information, rank, workspace_symbols
from codeward.daemon.lsp import texts
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.types import Location, Position, Range
from codeward.daemon.paths import real_path
from codeward.protocol.errors import ErrorKind, ToolError
from tests.intel_support import write


def test_real_paths_resolve_links_as_real_path_does_and_again_for_each_answer(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    write(root, {"pkg/a.py": "a = 1\n", "other/b.py": "b = 1\n"})
    write(tmp_path, {"outside/c.py": "c = 1\n"})
    (root / "linked").symlink_to(root / "pkg")  # a folder link inside the root
    (root / "out").symlink_to(tmp_path / "outside")  # a folder link out of it
    (root / "pkg" / "alias.py").symlink_to(root / "other" / "b.py")  # a file link
    manager = LanguageService(root, Config(), lambda _: None)
    paths = [
        root / "pkg" / "a.py",
        root / "linked" / "a.py",
        root / "linked" / "alias.py",
        root / "out" / "c.py",
        root / "pkg" / ".." / "other" / "b.py",
        root / "linked" / "gone.py",  # no such file
        root,
    ]
    locator = Locator(manager)
    assert [locator.real(p.as_uri()) for p in paths] == [real_path(p) for p in paths]
    assert locator.real("untitled:Untitled-1") is None
    assert locator.place((root / "linked" / "alias.py").as_uri()) == ("other/b.py", True)
    assert locator.place((root / "out" / "c.py").as_uri()) is None
    # the link points elsewhere: the next answer's locator follows it
    (root / "linked").unlink()
    (root / "linked").symlink_to(root / "other")
    write(root, {"other/a.py": "a = 2\n"})
    assert Locator(manager).place((root / "linked" / "a.py").as_uri()) == ("other/a.py", True)


def test_workspace_symbols_read_both_lsp_shapes_and_name_an_answer_off_the_spec() -> None:
    where = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}}
    info = {"name": "f", "kind": 12, "containerName": "m", "deprecated": False,
            "location": {"uri": "file:///r/a.py", "range": where}}  # fmt: skip
    bare = {"name": "x", "kind": 13, "location": {"uri": "file:///r/b.py"}, "data": {"k": 1}}
    first, second = workspace_symbols([info, bare], "s")
    assert (first.name, first.kind, first.container_name) == ("f", 12, "m")
    assert first.location.range is not None and first.location.range.start.character == 4
    assert second.location.range is None and second.container_name is None
    assert workspace_symbols(None, "s") == []
    with pytest.raises(ToolError) as info_:
        workspace_symbols([{**info, "kind": "function"}], "odd")
    error = info_.value
    assert error.kind is ErrorKind.LSP_ERROR and error.details["server"] == "odd"
    assert "The odd language server answered workspace/symbol" in error.message


def test_best_first_is_the_full_sort_of_every_shaped_symbol(tmp_path: Path) -> None:
    """Shaped a (rank, path) at a time, taken lazily: the order, the moves to the names and
    what is dropped are those of shaping all and sorting by (rank, path, line, character,
    name)."""
    root = tmp_path / "root"
    write(
        root,
        {
            "b.py": "@wrap\ndef Thing():\n    pass\n\nclass ThingMaker: ...\n",
            "a.py": "thing_b = 1\nThing = 2\nclass MyThing: ...\n# Thing\n",
            "c/d.py": "def other():\n    return 1\n",  # `Gone` is not in its range
        },
    )
    manager = LanguageService(root, Config(), lambda _: None)

    def at(path: str, line: int, end: int = -1) -> dict[str, Any]:
        rng = {"start": {"line": line, "character": 0},
               "end": {"line": end if end >= 0 else line, "character": 9}}  # fmt: skip
        return {"uri": (root / path).as_uri(), "range": rng}

    data = [
        {"name": "ThingMaker", "kind": 5, "location": at("b.py", 4)},
        {"name": "Thing", "kind": 12, "location": at("b.py", 0, 2)},  # moved to line 2
        {"name": "MyThing", "kind": 5, "location": at("a.py", 2)},
        {"name": "Thing", "kind": 13, "location": at("a.py", 1)},
        {"name": "thing_b", "kind": 13, "location": at("a.py", 0)},
        {"name": "Gone", "kind": 12, "location": at("c/d.py", 0, 1)},  # dropped
        {"name": "Thing", "kind": 13, "location": {"uri": (root / "a.py").as_uri()}},
        {"name": "Thing", "kind": 13, "location": at("../outside.py", 0)},  # dropped
        {"name": "Thing", "kind": 13, "location": at("a.py", 1)},  # a duplicate, kept here
    ]
    symbols = workspace_symbols(data, "s")

    def every(kinds: frozenset[str] | None) -> list[dict[str, Any]]:
        locator = Locator(manager)
        shaped = [(information(s, locator, "utf-16"), s.location.uri) for s in symbols]
        kept = [s for s, uri in shaped if s is not None and at_name(locator, uri, s)]
        kept = [s for s in kept if kinds is None or s["kind"] in kinds]
        return sorted(
            kept,
            key=lambda s: (
                rank("Thing", s["name"]),
                s["path"],
                s.get("line", 0),
                s.get("character", 0),
                s["name"],
            ),
        )

    for kinds in (None, frozenset({"variable"})):
        found = best_first([(s, "utf-16") for s in symbols], "Thing", Locator(manager), kinds)
        assert list(found) == every(kinds)
    ordered = [(s["name"], s["path"], s.get("line")) for s in every(None)]
    assert ordered == [
        ("Thing", "a.py", None), ("Thing", "a.py", 2), ("Thing", "a.py", 2), ("Thing", "b.py", 2),
        ("ThingMaker", "b.py", 5), ("thing_b", "a.py", 1), ("MyThing", "a.py", 3),
    ]  # fmt: skip


def test_a_files_text_is_read_again_once_its_stat_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stat `real` takes of a file that is no link is the one its kept text is checked
    against (no second stat): a changed file is read again by the next answer."""
    monkeypatch.setattr(texts, "RACY_NS", -(10**12))  # stats trusted at once (no wait)
    root = tmp_path / "root"
    write(root, {"a.py": "x = 1\n"})
    (root / "b.py").symlink_to(root / "a.py")
    manager = LanguageService(root, Config(), lambda _: None)
    rng = Range(Position(0, 0), Position(0, 1))

    def previews() -> list[str]:
        locator = Locator(manager)
        return [
            row.preview
            for row in locator.locations(
                [Location((root / name).as_uri(), rng) for name in ("a.py", "b.py")], "utf-16"
            )
        ]

    assert previews() == ["x = 1"]  # (b.py is a.py: one row)
    kept = manager.line_index(root / "a.py")
    assert previews() == ["x = 1"] and manager.line_index(root / "a.py") is kept  # unchanged
    (root / "a.py").write_text("longer = 2\n")
    assert previews() == ["longer = 2"]
