"""Code actions as the tool shows them: indexed, filtered by kind, chosen by index or title."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from codeward.daemon.config import Config
from codeward.daemon.edits.actions import collect, in_lines, matches
from codeward.daemon.lsp.service import Answer, LanguageService
from codeward.daemon.lsp.shapes import structure, unstructure
from codeward.daemon.tools.code_action_choice import choose
from codeward.protocol.errors import ErrorKind, ToolError


def _range(line: int, char: int, end_line: int, end_char: int) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": char},
        "end": {"line": end_line, "character": end_char},
    }


@pytest.fixture
def manager(tmp_path: Path) -> LanguageService:
    root = Path(os.path.realpath(tmp_path))
    (root / "m.py").write_text("é = 1  # x\nimport os\n")
    return LanguageService(root, Config(), lambda _: None)


def test_collect_indexes_filters_and_shows_diagnostics(manager: LanguageService) -> None:
    uri = (manager.root / "m.py").as_uri()
    diagnostic = {"range": _range(0, 2, 0, 3), "message": "bad", "severity": 2, "code": "E1"}
    first = Answer(
        "one",
        [
            {
                "title": "Fix it",
                "kind": "quickfix",
                "isPreferred": True,
                "diagnostics": [diagnostic],
            },
            {"title": "Run", "command": "do.it", "arguments": []},  # a bare Command
            {"title": "Off", "kind": "refactor.extract", "disabled": {"reason": "no selection"}},
        ],
        False,
        "utf-8",
        manager,
    )
    second = Answer(
        "two",
        [{"title": "Organize", "kind": "source.organizeImports.two"}],
        False,
        "utf-16",
        manager,
    )
    nothing = Answer("three", None, False, "utf-16", manager)
    odd = Answer("four", ["garbage", {"kind": "quickfix"}], False, "utf-16", manager)
    actions, errors = collect([first, odd, second, nothing], uri, None)
    assert [(e.kind, e.details["server"], e.details["method"]) for e in errors] == [
        (ErrorKind.LSP_ERROR, "four", "textDocument/codeAction")
    ]
    assert [(a.index, a.title, a.kind, a.server) for a in actions] == [
        (0, "Fix it", "quickfix", "one"),
        (1, "Run", None, "one"),
        (2, "Off", "refactor.extract", "one"),
        (3, "Organize", "source.organizeImports.two", "two"),
    ]
    shown = actions[0].public()
    assert shown["preferred"] and "disabled" not in shown
    # UTF-8 units 2..3 of "é = 1" are the code points 1..2: 1-based columns 2..3.
    assert shown["diagnostics"] == [
        {
            "line": 1,
            "column": 2,
            "end_line": 1,
            "end_column": 3,
            "severity": "warning",
            "message": "bad",
            "code": "E1",
            "source": None,
        }
    ]
    assert actions[2].public()["disabled"] == "no selection"
    only, _ = collect([first, second], uri, ["source", "refactor.extract"])
    assert [(a.index, a.title) for a in only] == [(0, "Off"), (1, "Organize")]


def test_kind_matching() -> None:
    assert matches("source.fixAll.ruff", ["source.fixAll"])
    assert matches("quickfix", ["quickfix"]) and matches(None, None) and matches(None, [])
    assert not matches("source.fixAllX", ["source.fixAll"]) and not matches(None, ["quickfix"])


def test_diagnostics_in_lines() -> None:
    diagnostics = structure(
        [
            {"range": _range(0, 0, 0, 1), "message": "a", "severity": 1, "data": {"fix": 1}},
            {"range": _range(2, 0, 4, 1), "message": "b"},
            {"range": _range(6, 0, 6, 1), "message": "c"},
        ],
        list[lsp.Diagnostic],
    )
    found = in_lines(diagnostics, 3, 5)
    assert unstructure(found) == [{"range": _range(2, 0, 4, 1), "message": "b"}]  # no nulls
    assert unstructure(in_lines(diagnostics, 0, 0))[0]["data"] == {"fix": 1}


def test_choosing_an_action(manager: LanguageService) -> None:
    uri = (manager.root / "m.py").as_uri()
    answer = Answer(
        "one",
        [
            {"title": "A", "kind": "quickfix"},
            {"title": "B", "kind": "quickfix", "disabled": {"reason": "not here"}},
        ],
        False,
        "utf-16",
        manager,
    )
    actions, _ = collect([answer], uri, None)
    assert choose(actions, 0).title == "A" and choose(actions, "A").index == 0
    for choice, words in ((2, "0 to 1"), ("C", "'A'"), ("B", "disabled"), (1, "not here")):
        with pytest.raises(ToolError) as info:
            choose(actions, choice)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS and words in info.value.message
    with pytest.raises(ToolError) as info:
        choose([], 0)
    assert "no action is offered" in info.value.message
