"""The text of a symbol-level edit: where a symbol's definition and body lie in a file's
text, and the file's new text once one is replaced or text is put before or after it.

A symbol is known by its range as the language server gives it (`Span`, 1-based code
points, end excluded) and the line of its name. The agent's text is re-indented to the
symbol: its common indentation is removed and each non-blank line gets the symbol's own
(its body's, for `replace_body`), so it may be given at the top level or already indented.

- `replace`: the server's range (decorators and doc comments when the range holds them).
- `replace_body`: in Python, the lines after the header (`def f(...) -> T:`, over several
  lines too, found with the tokenizer) to the end of the range, the docstring included; a
  one-line body (`def f(): pass`) is replaced by an indented block. In brace languages, the
  text between the range's last top-level `{ ... }` (strings and comments skipped), put on
  lines of their own.
- `insert_before` / `insert_after`: whole lines before the range's first line or after its
  last, as given (blank lines included).
"""

from __future__ import annotations

import re
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Literal

from codeward.protocol.errors import ErrorKind, ToolError

Action = Literal["replace_body", "replace", "insert_before", "insert_after"]
ACTIONS: tuple[Action, ...] = ("replace_body", "replace", "insert_before", "insert_after")

# Languages whose `'` opens a string (elsewhere it opens a character literal, or a Rust
# lifetime, which must not hide the braces after it).
_QUOTED_STRINGS = frozenset(
    {"javascript", "javascriptreact", "typescript", "typescriptreact", "php", "svelte", "vue"}
)
_CHAR_LITERAL = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.[^']{0,8}|[^\\'])'")


@dataclass(frozen=True)
class Span:
    line: int
    character: int
    end_line: int
    end_character: int


@dataclass(frozen=True)
class Place:
    """A symbol in a file's text: its range and the line of its name (1-based)."""

    span: Span
    name_line: int
    description: str  # how errors name it: `'Greeter.hello' (method, lines 3-5)`


def new_text(
    text: str, place: Place, action: Action, given: str, language: str
) -> str:  # fmt: skip
    """`text` with `given` put where `action` says about `place`."""
    lines = text.splitlines(keepends=True)
    start = _offset(lines, place.span.line, place.span.character)
    end = _trimmed_end(text, start, _offset(lines, place.span.end_line, place.span.end_character))
    indent = _indentation(lines[place.span.line - 1])
    if action == "replace":
        return text[:start] + _block(given, indent, first=False).rstrip("\r\n") + text[end:]
    if action == "insert_before":
        at = _offset(lines, place.span.line, 1)
        return text[:at] + _lines(_block(given, indent)) + text[at:]
    if action == "insert_after":
        newline = text.find("\n", end)
        at = len(text) if newline < 0 else newline + 1
        head = text[:at] if text[:at].endswith("\n") or not at else text[:at] + "\n"
        return head + _lines(_block(given, indent)) + text[at:]
    if language == "python":
        return _python_body(text, lines, place, end, indent, given)
    return _brace_body(text, lines, place, start, end, indent, given, language)


def _offset(lines: list[str], line: int, character: int) -> int:
    """The index in the text of 1-based (`line`, `character`), clamped to the text."""
    if line > len(lines):
        return sum(map(len, lines))
    before = sum(len(item) for item in lines[: line - 1])
    own = lines[line - 1].rstrip("\r\n")
    return before + min(character - 1, len(own))


def _trimmed_end(text: str, start: int, end: int) -> int:
    """A range's end without the line break(s) it may take in (a server whose range ends at
    the start of the next line)."""
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    return end


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _block(given: str, indent: str, *, first: bool = True) -> str:
    """`given` without its common indentation, each non-blank line indented by `indent`
    (the first one too unless `first` is false: it goes where the old text began)."""
    lines = textwrap.dedent(given.replace("\r\n", "\n")).split("\n")
    shaped = [indent + line if line.strip() else "" for line in lines]
    if not first and shaped:
        shaped[0] = shaped[0][len(indent) :] if shaped[0].startswith(indent) else shaped[0]
    return "\n".join(shaped)


def _lines(block: str) -> str:
    """`block` as whole lines: ending with one line break."""
    return block if block.endswith("\n") else block + "\n"


def _indent_unit(lines: list[str]) -> str:
    """One level of the file's indentation: a tab if its lines are indented with tabs, else
    the fewest spaces a line is indented with (4 when none is)."""
    widths: list[int] = []
    for line in lines:
        if not line.strip():
            continue
        if line.startswith("\t"):
            return "\t"
        width = len(line) - len(line.lstrip(" "))
        if width:
            widths.append(width)
    return " " * min(min(widths, default=4), 8)


def _body_indent(lines: list[str], first: int, last: int, indent: str) -> str:
    """The indentation of the first non-blank line of lines `first`..`last` (1-based) when
    deeper than `indent`, else `indent` and one level more."""
    for number in range(first, min(last, len(lines)) + 1):
        line = lines[number - 1]
        if line.strip():
            own = _indentation(line)
            if len(own) > len(indent) and own.startswith(indent):
                return own
            break
    return indent + _indent_unit(lines)


# -- Python ---------------------------------------------------------------------------------


def _python_body(
    text: str, lines: list[str], place: Place, end: int, indent: str, given: str
) -> str:
    line, column = _python_header_end(lines, place)
    colon = _offset(lines, line, column + 1) + 1  # just after the header's `:`
    rest = text[colon:].split("\n", 1)[0]
    if rest.strip() and not rest.strip().startswith("#"):  # `def f(): return 1`
        body_indent = indent + _indent_unit(lines)
        return text[:colon] + "\n" + _block(given, body_indent).rstrip("\r\n") + text[end:]
    body_start = _offset(lines, line + 1, 1)
    if body_start >= end:
        raise _no_body(place, "its body is not inside the range the language server gives")
    body_indent = _body_indent(lines, line + 1, place.span.end_line, indent)
    return text[:body_start] + _block(given, body_indent).rstrip("\r\n") + text[end:]


def _python_header_end(lines: list[str], place: Place) -> tuple[int, int]:
    """The 1-based line and 0-based column of the `:` that ends the `def` or `class`
    header on the symbol's name line (brackets may carry it over several lines)."""
    name_line = place.name_line
    while name_line < place.span.end_line and lines[name_line - 1].lstrip().startswith("@"):
        name_line += 1  # a flat symbol's range starts at its decorators
    if not re.match(r"(async\s+)?(def|class)\b", lines[name_line - 1].lstrip()):
        raise _no_body(place, "it is not a `def` or `class`")
    source = iter(lines[name_line - 1 :])
    depth = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(source, "")):
            if token.type != tokenize.OP:
                continue
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
            elif token.string == ":" and depth == 0:
                return name_line + token.start[0] - 1, token.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    raise _no_body(place, "its header has no closing `:`")


# -- brace languages ------------------------------------------------------------------------


def _brace_body(
    text: str, lines: list[str], place: Place, start: int, end: int, indent: str, given: str,
    language: str,
) -> str:  # fmt: skip
    pair = _last_top_level_braces(text, start, end, language)
    if pair is None:
        raise _no_body(place, "its range holds no `{ ... }` block")
    opening, closing = pair
    opening_line = text.count("\n", 0, opening) + 1
    closing_line = text.count("\n", 0, closing) + 1
    body_indent = _body_indent(lines, opening_line + 1, closing_line - 1, indent)
    before_close = text[text.rfind("\n", 0, closing) + 1 : closing]
    close_indent = before_close if not before_close.strip() else indent
    body = _block(given, body_indent).strip("\r\n")
    return text[: opening + 1] + "\n" + body + "\n" + close_indent + text[closing:]


def _last_top_level_braces(
    text: str, start: int, end: int, language: str
) -> tuple[int, int] | None:  # fmt: skip
    """The offsets of the last `{` and its `}` at the top level of `text[start:end]`, with
    strings, character literals and comments skipped."""
    quoted = language in _QUOTED_STRINGS
    stack: list[int] = []
    found: tuple[int, int] | None = None
    index = start
    while index < end:
        char = text[index]
        if text.startswith("//", index):
            newline = text.find("\n", index)
            index = end if newline < 0 else newline
            continue
        if text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = end if close < 0 else close + 2
            continue
        if char in '"`' or (char == "'" and quoted):
            index = _string_end(text, index, end)
            continue
        if char == "'":
            literal = _CHAR_LITERAL.match(text, index)
            index = literal.end() if literal else index + 1
            continue
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            opening = stack.pop()
            if not stack:
                found = (opening, index)
        index += 1
    return found


def _string_end(text: str, index: int, end: int) -> int:
    """The index just after the string that opens at `index` (a backslash escapes)."""
    quote = text[index]
    index += 1
    while index < end:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index + 1
        if char == "\n" and quote != "`":  # an unclosed one-line string: stop at the line
            return index
        index += 1
    return end


def _no_body(place: Place, why: str) -> ToolError:
    return ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"{place.description} has no body to replace ({why}); use action `replace` to "
        "replace the whole definition.",
    )


def check_text(given: str, action: Action) -> None:
    """`invalid_arguments` for text no action can use."""
    if not given.strip():
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"Give `text` for {action}: it is empty (to delete a definition, use edit_file "
            "with its lines).",
        )
    if "\x00" in given:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "`text` may not hold NUL characters.")
