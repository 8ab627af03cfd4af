"""The diagnostics delta (sans IO): positions mapped through an edit, introduced/resolved,
and the bounded history `get_diagnostics since` answers from."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from codeward.daemon.edits.batch import Replacement, combine
from codeward.daemon.edits.delta import (
    Change,
    PositionMap,
    changes_between,
    delta,
    entry,
    severity_counts,
    to_offset,
    to_position,
)
from codeward.daemon.edits.history import DiagnosticsHistory
from codeward.daemon.lsp.positions import line_starts


@dataclass(frozen=True)
class D:
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    severity: int
    message: str
    code: str | int | None = None
    source: str | None = None


def at(text: str, needle: str, message: str = "m", severity: int = 1, nth: int = 1) -> D:
    """A diagnostic spanning the `nth` occurrence of `needle` in `text` (one line)."""
    offset = -1
    for _ in range(nth):
        offset = text.index(needle, offset + 1)
    starts = line_starts(text)
    line, column = to_position(starts, offset)
    end_line, end_column = to_position(starts, offset + len(needle))
    return D("f.py", line, column, end_line, end_column, severity, message, "c1", "src")


def spanned(text: str, d: D) -> str:
    starts = line_starts(text)
    a = to_offset(starts, len(text), d.line, d.column)
    b = to_offset(starts, len(text), d.end_line, d.end_column)
    return text[a:b]


# -- positions ----------------------------------------------------------------------------


def test_offsets_and_positions_round_trip_with_every_line_ending() -> None:
    text = "ab\r\ncd\ref\ngh"
    starts = line_starts(text)
    assert starts == [0, 4, 7, 10]
    for offset in range(len(text) + 1):
        line, column = to_position(starts, offset)
        assert to_offset(starts, len(text), line, column) == offset
    # clamped: past the line's end, past the last line, before the first
    assert to_offset(starts, len(text), 1, 99) == 4
    assert to_offset(starts, len(text), 9, 1) == len(text)
    assert to_offset(starts, len(text), 0, 5) == 0


def test_lines_inserted_above_move_a_diagnostic_down() -> None:
    old = "import os\nx = undefined_name\n"
    new = "import os\nimport sys\n\nx = undefined_name\n"
    mapping = PositionMap.between(old, new)
    before = at(old, "undefined_name")
    assert mapping.range(before) == (4, 5, 4, 19)
    after = at(new, "undefined_name")
    found = delta([before], [after], mapping)
    assert found.introduced == [] and found.resolved == [] and found.remaining == [after]


def test_a_word_changed_earlier_on_the_line_moves_only_what_follows() -> None:
    old = "value = compute(a, b) + missing\n"
    new = "value = compute_all(a, b, c) + missing\n"
    mapping = PositionMap.between(old, new)
    assert spanned(new, replace(at(old, "missing"), **_mapped(mapping, at(old, "missing")))) == (
        "missing"
    )
    assert mapping.position(1, 1) == (1, 1)


def _mapped(mapping: PositionMap, d: D) -> dict[str, int]:
    line, column, end_line, end_column = mapping.range(d)
    return {"line": line, "column": column, "end_line": end_line, "end_column": end_column}


def test_inserts_exactly_at_a_position_go_before_a_start_and_after_an_end() -> None:
    mapping = PositionMap("abcdef", "abXcdef", [Change(2, 2, 1)])
    assert mapping.offset(2) == 3  # a start at the insert point moves after it
    assert mapping.offset(2, end=True) == 2  # an end stays before it
    assert mapping.offset(1) == 1 and mapping.offset(5) == 6


def test_offsets_inside_a_replaced_span_go_to_its_start_or_end() -> None:
    # "abcdef" -> "aXYZf": "bcde" (1..5) replaced by "XYZ"
    mapping = PositionMap("abcdef", "aXYZf", [Change(1, 5, 3)])
    assert mapping.offset(1) == 1  # the replaced text begins there: it stays
    assert mapping.offset(3) == 1 and mapping.offset(3, end=True) == 4
    assert mapping.offset(5) == 4 and mapping.offset(6) == 5


def test_an_empty_range_maps_to_one_point() -> None:
    old = "a\nb\n"
    new = "z\na\nb\n"
    mapping = PositionMap.between(old, new)
    d = D("f", 2, 1, 2, 1, 1, "m")
    assert mapping.range(d) == (3, 1, 3, 1)


def test_changes_between_equal_texts_is_empty() -> None:
    assert changes_between("same\n", "same\n") == []


def test_large_changed_blocks_are_one_change() -> None:
    old = "keep\n" + "a" * 30_000 + "\nkeep\n"
    new = "keep\n" + "b" * 30_000 + "\nkeep\n"
    changes = changes_between(old, new)
    assert changes == [Change(5, 30_006, 30_001)]


# -- the delta ----------------------------------------------------------------------------


def test_a_new_error_is_introduced_and_a_fixed_one_resolved() -> None:
    old = "x = 1\ny = undefined\n"
    new = "x = 1 +\ny = 2\n"
    gone = at(old, "undefined", "undefined name")
    syntax = at(new, "+", "Expected expression")
    found = delta([gone], [syntax], PositionMap.between(old, new))
    assert found.introduced == [syntax] and found.resolved == [gone]


def test_the_same_message_at_another_place_is_new() -> None:
    text = "a = b\nc = b\n"
    first, second = at(text, "b", "undefined b"), at(text, "b", "undefined b", nth=2)
    found = delta([first], [first, second])
    assert found.introduced == [second] and found.resolved == []


def test_code_and_source_are_part_of_the_identity() -> None:
    text = "a = b\n"
    d = at(text, "b")
    for other in (replace(d, code="c2"), replace(d, source="other"), replace(d, message="x")):
        found = delta([d], [other])
        assert found.introduced == [other] and found.resolved == [d]


def test_duplicates_are_matched_one_for_one() -> None:
    text = "a = b\n"
    d = at(text, "b")
    found = delta([d], [d, d])
    assert found.introduced == [d] and found.resolved == []
    found = delta([d, d], [d])
    assert found.introduced == [] and found.resolved == [d]


def test_a_recomputed_range_on_the_same_line_is_not_new() -> None:
    old = "call(a, b)\n"
    new = "call(a, bb)\n"
    d_old = D("f", 1, 1, 1, 11, 1, "wrong arguments", "args", "pyright")
    d_new = D("f", 1, 1, 1, 12, 1, "wrong arguments", "args", "pyright")
    assert delta([d_old], [d_new], PositionMap.between(old, new)).introduced == []
    # moved to the start of another line: new, even with the same message
    d_far = replace(d_new, line=2, end_line=2)
    found = delta([d_old], [d_far], PositionMap.between(old, new))
    assert found.introduced == [d_far] and found.resolved == [d_old]


def test_counts_and_entries() -> None:
    text = "a\n"
    ds = [replace(at(text, "a"), severity=s) for s in (1, 1, 2, 4)]
    assert severity_counts(ds) == {"error": 2, "warning": 1, "information": 0, "hint": 1}
    assert entry(ds[0]) == {
        "file": "f.py",
        "line": 1,
        "column": 1,
        "end_line": 1,
        "end_column": 2,
        "severity": "error",
        "message": "m",
        "code": "c1",
        "source": "src",
    }


# -- properties ---------------------------------------------------------------------------

WORDS = st.text(alphabet="abcxyz (),=+é\t", min_size=0, max_size=12)


@st.composite
def edited(draw: st.DrawFn) -> tuple[str, str, int]:
    """A text of unique lines, the same with lines inserted, removed or rewritten away from
    one marked line, and the marked line's index in the old text."""
    count = draw(st.integers(min_value=1, max_value=12))
    lines = [f"L{i}:{draw(WORDS)}" for i in range(count)]
    mark = draw(st.integers(min_value=0, max_value=count - 1))
    new = list(lines)
    offset = 0
    for i in range(count):
        if abs(i - mark) <= 1:
            continue  # lines next to the marked one stay: the diff aligns it unambiguously
        action = draw(st.sampled_from(["keep", "insert", "delete", "rewrite"]))
        at_new = i + offset
        if action == "insert":
            new.insert(at_new, f"N{i}:{draw(WORDS)}")
            offset += 1
        elif action == "delete":
            del new[at_new]
            offset -= 1
        elif action == "rewrite":
            new[at_new] = f"R{i}:{draw(WORDS)}"
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines) + ending, ending.join(new) + ending, mark


@settings(max_examples=300, deadline=None)
@given(edited(), st.data())
def test_a_diagnostic_away_from_the_edit_maps_onto_the_same_text(
    case: tuple[str, str, int], data: st.DataObject
) -> None:
    old, new, mark = case
    line = old.splitlines()[mark]
    start = data.draw(st.integers(min_value=0, max_value=len(line)))
    end = data.draw(st.integers(min_value=start, max_value=len(line)))
    d = D("f", mark + 1, start + 1, mark + 1, end + 1, 1, "m")
    mapping = PositionMap.between(old, new)
    moved = replace(d, **_mapped(mapping, d))
    assert spanned(new, moved) == spanned(old, d)
    # the diagnostic found again where it moved to is neither introduced nor resolved
    found = delta([d], [moved], mapping)
    assert found.introduced == [] and found.resolved == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab\nc\r", max_size=40), st.text(alphabet="ab\nc\r", max_size=40))
def test_changes_between_rebuild_the_new_text(old: str, new: str) -> None:
    changes = changes_between(old, new)
    # the spans are ordered, disjoint, and the text between them is shared by both texts
    pieces: list[str] = []
    at_old = at_new = 0
    for change in changes:
        assert at_old <= change.start <= change.end <= len(old)
        kept = old[at_old : change.start]
        assert new[at_new : at_new + len(kept)] == kept
        pieces.append(kept)
        at_new += len(kept)
        pieces.append(new[at_new : at_new + change.length])
        at_new += change.length
        at_old = change.end
    pieces.append(old[at_old:])
    assert "".join(pieces) == new


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\nc", max_size=30), st.text(alphabet="ab\nc", max_size=30))
def test_mapping_is_monotonic_and_inside_the_new_text(old: str, new: str) -> None:
    mapping = PositionMap.between(old, new)
    mapped = [mapping.offset(o) for o in range(len(old) + 1)]
    assert mapped == sorted(mapped)
    assert all(0 <= m <= len(new) for m in mapped)
    ends = [mapping.offset(o, end=True) for o in range(len(old) + 1)]
    assert ends == sorted(ends) and all(0 <= e <= len(new) for e in ends)
    # they differ only at an insert (an end stays before it) or inside a replaced span
    # (a start goes to the replacement's start, an end to its end)
    for o, (s, e) in enumerate(zip(mapped, ends, strict=True)):
        if s != e:
            assert any(c.start <= o <= c.end for c in mapping.changes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5), st.sampled_from("mn")), max_size=8))
def test_an_unchanged_text_has_an_empty_delta(spots: list[tuple[int, int, str]]) -> None:
    ds = [D("f", line, col, line, col + 1, 1, msg) for line, col, msg in spots]
    found = delta(ds, list(reversed(ds)))
    assert found.introduced == [] and found.resolved == []


# -- history ------------------------------------------------------------------------------


def test_history_keeps_the_last_versions_of_each_file() -> None:
    history = DiagnosticsHistory(versions=2, files=2, text_bytes=100)
    d = D("a.py", 1, 1, 1, 2, 1, "m")
    history.record("a.py", "h1", "one", [d])
    history.record("a.py", "h2", "two", [])
    history.record("a.py", "h3", "three", [])
    assert history.known("a.py") == ["h2", "h3"] and history.get("a.py", "h1") is None
    snap = history.get("a.py", "h2")
    assert snap is not None and snap.text == "two" and snap.diagnostics == ()
    # a third file pushes out the least recently recorded one
    history.record("b.py", "h1", "b", [])
    history.record("c.py", "h1", "c", [])
    assert history.known("a.py") == [] and history.known("b.py") == ["h1"]
    assert len(history) == 2


def test_history_is_bounded_by_text_size() -> None:
    history = DiagnosticsHistory(versions=4, files=10, text_bytes=10)
    history.record("a.py", "h1", "x" * 6, [])
    history.record("b.py", "h1", "y" * 6, [])
    assert history.known("a.py") == [] and history.known("b.py") == ["h1"]


def test_a_partial_report_never_replaces_a_complete_one() -> None:
    history = DiagnosticsHistory()
    d = D("a.py", 1, 1, 1, 2, 1, "m")
    history.record("a.py", "h", "t", [d])
    kept = history.record("a.py", "h", "t", [], partial=["ruff"])
    assert kept.diagnostics == (d,) and kept.partial == ()
    history.record("b.py", "h", "t", [], partial=["ruff"])
    complete = history.record("b.py", "h", "t", [d])
    assert complete.partial == () and history.get("b.py", "h") == complete


# -- several actions' edits as one ----------------------------------------------------------


def test_combine_takes_actions_whole_and_skips_overlaps_and_duplicates() -> None:
    a = Replacement("file:///m.py", (0, 0), (1, 0), "")
    b = Replacement("file:///m.py", (0, 5), (0, 7), "x")  # inside a
    c = Replacement("file:///m.py", (1, 0), (1, 0), "y")  # touches a's end: fine
    d = Replacement("file:///other.py", (0, 0), (0, 0), "z")
    combined = combine([[a], [b, d], [c], [a], []])
    assert combined.taken == [0, 2]
    assert combined.skipped == {
        1: "its edit overlaps the one of action 0",
        3: "the same edit as an action already applied",
        4: "its edit changes nothing",
    }

    def lsp(line: int, character: int) -> dict[str, int]:
        return {"line": line, "character": character}

    assert combined.edit == {
        "changes": {
            "file:///m.py": [
                {"range": {"start": lsp(0, 0), "end": lsp(1, 0)}, "newText": ""},
                {"range": {"start": lsp(1, 0), "end": lsp(1, 0)}, "newText": "y"},
            ]
        }
    }
    assert not combined.empty and combine([]).empty


def test_two_inserts_at_one_place_have_no_order() -> None:
    one = Replacement("u", (2, 3), (2, 3), "a")
    two = Replacement("u", (2, 3), (2, 3), "b")
    replaced = Replacement("u", (2, 3), (2, 6), "c")
    assert combine([[one], [two]]).taken == [0]
    assert combine([[one], [replaced]]).taken == [0]
    assert combine([[replaced], [Replacement("u", (2, 6), (2, 6), "d")]]).taken == [0, 1]
