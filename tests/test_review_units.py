"""The pure parts of a review: hunks and what they touch, the raw diff's files, and how
`since` tells a content hash from a revision."""

from __future__ import annotations

from codeward.daemon.edits.hunks import Hunk, hunks, touched
from codeward.daemon.git.revision import FileChange, is_content_hash, parse_raw
from codeward.daemon.intel.touched import Definition, compare

OLD = "a\nb\nc\nd\ne\n"


def test_hunks_count_lines_as_git_does() -> None:
    assert hunks(OLD, OLD) == []
    assert hunks(OLD, "a\nB\nc\nd\ne\n") == [Hunk(2, 1, 2, 1)]
    assert hunks(OLD, "a\nb\nx\ny\nc\nd\ne\n") == [Hunk(2, 0, 3, 2)]  # inserted after b
    assert hunks(OLD, "a\nd\ne\n") == [Hunk(2, 2, 1, 0)]  # b, c deleted: after line 1
    assert hunks("", "x\ny\n") == [Hunk(0, 0, 1, 2)]  # a new file
    assert hunks("x\n", "") == [Hunk(1, 1, 0, 0)]


def test_what_a_hunk_touches() -> None:
    replaced, inserted = Hunk(2, 1, 2, 1), Hunk(2, 0, 3, 2)
    assert touched([replaced], 1, 2, new=True) and not touched([replaced], 3, 5, new=True)
    assert touched([inserted], 3, 4, new=True) and not touched([inserted], 1, 2, new=True)
    # on the old side an insertion is a place between lines 2 and 3
    assert touched([inserted], 1, 3, new=False) and not touched([inserted], 3, 5, new=False)
    assert not touched([inserted], 1, 2, new=False)


def d(name: str, line: int, end: int, *children: Definition, kind: str = "function") -> Definition:
    return Definition((name,), kind, line, 5, line, end, children)


def test_compare_names_added_removed_signature_and_body() -> None:
    old_lines = ["def f(a):", "  return a", "def g():", "  return 1", "def h():", "  pass"]
    new_lines = ["def f(a, b):", "  return a", "def g():", "  return 2", "def k():", "  pass"]
    old = [d("f", 1, 2), d("g", 3, 4), d("h", 5, 6)]
    new = [d("f", 1, 2), d("g", 3, 4), d("k", 5, 6)]
    found = hunks("\n".join(old_lines) + "\n", "\n".join(new_lines) + "\n")
    changes = {t.definition.name: t.change for t in compare(old, new, found, old_lines, new_lines)}
    assert changes == {"f": "signature", "g": "body", "k": "added", "h": "removed"}
    assert [t.change for t in compare(None, new, found, [], new_lines)] == ["added"] * 3
    assert [t.new for t in compare(old, None, found, old_lines, [])] == [False] * 3


def test_the_innermost_definition_a_hunk_meets() -> None:
    method = Definition(("C", "m"), "method", 2, 9, 2, 3)
    cls = Definition(("C",), "class", 1, 7, 1, 4, (method,))
    lines = ["class C:", "  def m(self):", "    return 1", "  x = 1"]
    changed = [*lines[:2], "    return 2", lines[3]]
    found = hunks("\n".join(lines), "\n".join(changed))
    assert [(t.definition.key, t.change) for t in compare([cls], [cls], found, lines, changed)] == [
        (("C", "m"), "body")
    ]


def test_raw_diff_files() -> None:
    z = "0" * 40
    raw = (
        f":100644 100644 {'a' * 40} {z} M\0mod.py\0"
        f":000000 100644 {z} {z} A\0new.py\0"
        f":100644 000000 {'b' * 40} {z} D\0gone.py\0"
        f":160000 160000 {'c' * 40} {z} M\0submodule\0"
        f":100644 120000 {'d' * 40} {z} T\0now a link\0"
    ).encode()
    assert parse_raw(raw) == {
        "mod.py": FileChange("mod.py", "modified", "a" * 40),
        "new.py": FileChange("new.py", "added", None),
        "gone.py": FileChange("gone.py", "deleted", "b" * 40),
        "now a link": FileChange("now a link", "deleted", "d" * 40),
    }


def test_a_content_hash_is_never_a_revision() -> None:
    assert is_content_hash("sha256:" + "0" * 64)
    for revision in ("HEAD", "main", "merge-base:main", "abc123", "HEAD~2", "v1.0"):
        assert not is_content_hash(revision)
