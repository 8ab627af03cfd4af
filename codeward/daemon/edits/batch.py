"""Several code actions' edits as one WorkspaceEdit (sans IO), for one atomic write.

Each action's edit is given in 0-based lines and code points (UTF-32, the same for every
server whatever its own encoding); an action is taken whole, in the order given, unless
one of its replacements overlaps one already taken (then it is skipped, with the reason):
ranges may touch, but two inserts at one place, or an insert at the start of a replaced
range, have no order and count as overlapping. An action whose edit is the same as one
already taken (two servers offering one fix) is skipped too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Point = tuple[int, int]  # 0-based line, code point


@dataclass(frozen=True)
class Replacement:
    uri: str
    start: Point
    end: Point
    new_text: str


def _overlap(a: Replacement, b: Replacement) -> bool:
    if a.uri != b.uri:
        return False
    if a.start < b.end and b.start < a.end:
        return True
    return a.start == b.start and (a.start == a.end or b.start == b.end)


@dataclass
class Combined:
    taken: list[int]  # indices of the actions taken
    skipped: dict[int, str]  # index -> why it was left out
    edit: dict[str, Any]  # the WorkspaceEdit of every action taken, in UTF-32

    @property
    def empty(self) -> bool:
        return not self.edit["changes"]


def combine(actions: Sequence[Sequence[Replacement]]) -> Combined:
    taken: list[int] = []
    skipped: dict[int, str] = {}
    accepted: list[Replacement] = []
    seen: list[frozenset[Replacement]] = []
    for index, replacements in enumerate(actions):
        key = frozenset(replacements)
        if not replacements:
            skipped[index] = "its edit changes nothing"
            continue
        if key in seen:
            skipped[index] = "the same edit as an action already applied"
            continue
        clash = next(
            (i for i in taken if any(_overlap(r, o) for r in replacements for o in actions[i])),
            None,
        )
        if clash is not None:
            skipped[index] = f"its edit overlaps the one of action {clash}"
            continue
        taken.append(index)
        seen.append(key)
        accepted.extend(replacements)
    changes: dict[str, list[dict[str, Any]]] = {}
    for replacement in accepted:
        changes.setdefault(replacement.uri, []).append(
            {
                "range": {
                    "start": {"line": replacement.start[0], "character": replacement.start[1]},
                    "end": {"line": replacement.end[0], "character": replacement.end[1]},
                },
                "newText": replacement.new_text,
            }
        )
    return Combined(taken, skipped, {"changes": changes})
