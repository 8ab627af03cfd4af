"""The hunks of a change: which lines of the old text became which lines of the new one."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Hunk:
    """Lines `old_start`.. (`old_lines` of them) replaced by `new_start`.. (`new_lines`),
    1-based as git counts them: a side with no lines starts at the line before it."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int

    def public(self) -> dict[str, Any]:
        return {
            "old_start": self.old_start,
            "old_lines": self.old_lines,
            "new_start": self.new_start,
            "new_lines": self.new_lines,
        }

    def touches(self, start: int, end: int, *, new: bool) -> bool:
        """Whether the lines `start`..`end` of that side's text meet this hunk: hold one of
        its lines, or (a side with none) the place between two of their lines."""
        first, count = (self.new_start, self.new_lines) if new else (self.old_start, self.old_lines)
        if count == 0:
            return start <= first < end
        return start <= first + count - 1 and first <= end


def hunks(old: str, new: str) -> list[Hunk]:
    """The changed runs of lines turning `old` into `new`."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    found = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        found.append(Hunk(i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1, j2 - j1))
    return found


def touched(found: list[Hunk], start: int, end: int, *, new: bool) -> bool:
    return any(h.touches(start, end, new=new) for h in found)
