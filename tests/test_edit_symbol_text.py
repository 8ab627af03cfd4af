"""The text of symbol edits without a server: brace bodies past lifetimes, strings and
comments, re-indentation, and a symbol with no body."""

from __future__ import annotations

import pytest

from codeward.daemon.edits.symbol_text import Place, Span, new_text
from codeward.protocol.errors import ToolError


def place(text: str, first: int, last: int) -> Place:
    """The symbol over lines `first`..`last` (whole lines) of `text`."""
    lines = text.splitlines()
    return Place(Span(first, 1, last, len(lines[last - 1]) + 1), first, "'f' (function)")


def test_rust_lifetime_and_char_literals_do_not_hide_braces() -> None:
    text = "fn f<'a>(x: &'a str) -> char {\n    let c = '{';\n    c\n}\n"
    new = new_text(text, place(text, 1, 4), "replace_body", "'}'", "rust")
    assert new == "fn f<'a>(x: &'a str) -> char {\n    '}'\n}\n"


def test_typescript_strings_comments_and_type_literals() -> None:
    text = (
        "  function f(x: {a: number}): {b: string} {\n"
        "    // a { in a comment\n"
        "    return {b: '}' + `${x.a}`};\n"
        "  }\n"
    )
    new = new_text(text, place(text, 1, 4), "replace_body", "return {b: ''};", "typescript")
    assert new == "  function f(x: {a: number}): {b: string} {\n    return {b: ''};\n  }\n"


def test_python_insert_after_at_the_end_without_newline() -> None:
    text = "def f():\n    return 1"
    new = new_text(text, place(text, 1, 2), "insert_after", "\n\ndef g():\n    pass", "python")
    assert new == "def f():\n    return 1\n\n\ndef g():\n    pass\n"


def test_a_variable_has_no_body() -> None:
    text = "X = 1\n"
    with pytest.raises(ToolError) as info:
        new_text(text, place(text, 1, 1), "replace_body", "2", "python")
    assert "no body" in info.value.message and "replace" in info.value.message
    with pytest.raises(ToolError):
        new_text("int x = 1;\n", place("int x = 1;\n", 1, 1), "replace_body", "2", "c")
