"""Unified diffs with root-relative paths, as `git diff` shows them."""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n" + NO_NEWLINE  # kept apart from the next hunk line
    return lines


def unified_diff(shown: str, before: str | None, after: str | None, *, context: int = 3) -> str:
    """The diff of one file; None for `before` (created) or `after` (deleted)."""
    old = f"a/{shown}" if before is not None else "/dev/null"
    new = f"b/{shown}" if after is not None else "/dev/null"
    lines = difflib.unified_diff(
        _lines(before or ""), _lines(after or ""), old, new, n=context, lineterm="\n"
    )
    return "".join(lines)
