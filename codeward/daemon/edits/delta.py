"""What an edit did to the diagnostics (sans IO): introduced, resolved, remaining.

A diagnostic is the same before and after an edit when its message, code and source are
equal and its position, mapped through the edit, is where the new one is: a diagnostic that
only moved (lines inserted above it, a word changed before it on its line) is neither
introduced nor resolved. Positions are the tools' 1-based lines and code-point columns.

    mapping = PositionMap.between(old_text, new_text)   # or PositionMap(old, new, changes)
    found = delta(before, after, mapping)               # Delta(introduced, resolved, remaining)
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from codeward.daemon.lsp.positions import line_starts
from codeward.daemon.lsp.types import SEVERITY_NAMES

CHAR_DIFF_LIMIT = 20_000  # code points of a changed block diffed character by character


class Diag(Protocol):
    """A diagnostic in the tools' terms (what `get_diagnostics` returns)."""

    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_column(self) -> int: ...
    @property
    def severity(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def code(self) -> str | int | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def server(self) -> str: ...  # the server that reported it


D = TypeVar("D", bound=Diag)


@dataclass(frozen=True)
class Change:
    """The code points `start`..`end` of the old text replaced by `length` new ones."""

    start: int
    end: int
    length: int


def to_offset(starts: Sequence[int], text_length: int, line: int, column: int) -> int:
    """The offset of a 1-based (line, column), clamped to the text and to its line."""
    if line < 1:
        return 0
    if line > len(starts):
        return text_length
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else text_length
    return start + min(max(column - 1, 0), end - start)


def to_position(starts: Sequence[int], offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of an offset."""
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index] + 1


def changes_between(old: str, new: str) -> list[Change]:
    """The changed spans that turn `old` into `new`: lines first, then characters within a
    changed block (so a word changed on a line moves only what follows it on that line)."""
    if old == new:
        return []
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    old_at = _offsets(old_lines)
    new_at = _offsets(new_lines)
    found: list[Change] = []
    blocks = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in blocks:
        if tag == "equal":
            continue
        start, end = old_at[i1], old_at[i2]
        new_start, new_end = new_at[j1], new_at[j2]
        before, after = old[start:end], new[new_start:new_end]
        if tag != "replace" or len(before) + len(after) > CHAR_DIFF_LIMIT:
            found.append(Change(start, end, len(after)))
            continue
        chars = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        for ctag, c1, c2, d1, d2 in chars:
            if ctag != "equal":
                found.append(Change(start + c1, start + c2, d2 - d1))
    return found


def _offsets(lines: Sequence[str]) -> list[int]:
    at = [0]
    for line in lines:
        at.append(at[-1] + len(line))
    return at


class PositionMap:
    """Maps positions of the old text to the new one, through non-overlapping changes."""

    def __init__(self, old: str, new: str, changes: Sequence[Change]) -> None:
        self.old = old
        self.changes = sorted(changes, key=lambda c: (c.start, c.end))
        self._old_starts = line_starts(old)
        self._new_starts = line_starts(new)
        self._new_length = len(new)

    @classmethod
    def between(cls, old: str, new: str) -> PositionMap:
        return cls(old, new, changes_between(old, new))

    def offset(self, offset: int, *, end: bool = False) -> int:
        """The new offset of an old one. Text inserted exactly there comes before a start
        (`end` False) and after an end; an offset strictly inside a replaced span goes to
        the replacement's start (a start) or end (an end)."""
        shift = 0
        for change in self.changes:
            if change.start > offset:
                break
            if change.start == change.end == offset:  # an insert exactly here
                if end:
                    break
                shift += change.length
                continue
            if change.start == offset:  # the replaced text begins here
                break
            if change.end > offset:  # strictly inside the replaced span
                new_start = change.start + shift
                return new_start + change.length if end else new_start
            shift += change.length - (change.end - change.start)
        return offset + shift

    def position(self, line: int, column: int, *, end: bool = False) -> tuple[int, int]:
        """The new 1-based (line, column) of an old one."""
        old = to_offset(self._old_starts, len(self.old), line, column)
        new = min(self.offset(old, end=end), self._new_length)
        return to_position(self._new_starts, new)

    def range(self, d: Diag) -> tuple[int, int, int, int]:
        """Where the old diagnostic `d` lies in the new text."""
        empty = (d.line, d.column) == (d.end_line, d.end_column)
        start = self.position(d.line, d.column)
        end = start if empty else self.position(d.end_line, d.end_column, end=True)
        return (*start, *max(start, end))


@dataclass
class Delta(Generic[D]):
    introduced: list[D]  # in the new text
    resolved: list[D]  # as they were in the old text
    remaining: list[D]  # every diagnostic of the new text


def _identity(d: Diag) -> tuple[str, str | int | None, str | None]:
    return (d.message, d.code, d.source)


def delta(before: Sequence[D], after: Sequence[D], mapping: PositionMap | None = None) -> Delta[D]:
    """Compare one file's diagnostics before and after an edit.

    Each new diagnostic is matched to at most one old one with the same message, code and
    source: first by the whole mapped range, then by the mapped start, then by the mapped
    start line (a server may recompute a range the edit touched). The unmatched new ones
    are introduced, the unmatched old ones resolved. `mapping` None: the text did not change.
    """
    old_spans = [mapping.range(d) if mapping is not None else _span(d) for d in before]
    new_spans = [_span(d) for d in after]
    old_left = list(range(len(before)))
    new_left = list(range(len(after)))
    for cut in (_whole, _start, _start_line):
        old_keys = [(_identity(d), cut(span)) for d, span in zip(before, old_spans, strict=True)]
        new_keys = [(_identity(d), cut(span)) for d, span in zip(after, new_spans, strict=True)]
        old_left, new_left = _match(old_left, new_left, old_keys, new_keys)
    return Delta(
        introduced=[after[j] for j in new_left],
        resolved=[before[i] for i in old_left],
        remaining=list(after),
    )


Span = tuple[int, int, int, int]


def _span(d: Diag) -> Span:
    return (d.line, d.column, d.end_line, d.end_column)


def _whole(span: Span) -> Hashable:
    return span


def _start(span: Span) -> Hashable:
    return span[:2]


def _start_line(span: Span) -> Hashable:
    return span[0]


def _match(
    old: list[int], new: list[int], old_keys: Sequence[Hashable], new_keys: Sequence[Hashable]
) -> tuple[list[int], list[int]]:
    """Pair old and new items with equal keys (each at most once, in order); the unpaired."""
    waiting: dict[Hashable, list[int]] = {}
    for i in old:
        waiting.setdefault(old_keys[i], []).append(i)
    paired: set[int] = set()
    unmatched_new: list[int] = []
    for j in new:
        candidates = waiting.get(new_keys[j])
        if candidates:
            paired.add(candidates.pop(0))
        else:
            unmatched_new.append(j)
    return [i for i in old if i not in paired], unmatched_new


def severity_counts(found: Iterable[Diag]) -> dict[str, int]:
    """How many diagnostics of each severity (every level named, zeros included)."""
    counts = Counter(SEVERITY_NAMES.get(d.severity, "error") for d in found)
    return {name: counts.get(name, 0) for name in SEVERITY_NAMES.values()}


def entry(d: Diag) -> dict[str, Any]:
    """A diagnostic as the tools return it."""
    return {
        "file": d.file,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "severity": SEVERITY_NAMES.get(d.severity, "error"),
        "message": d.message,
        "code": d.code,
        "source": d.source,
    }
