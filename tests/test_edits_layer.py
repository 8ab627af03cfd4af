"""The edit layer without servers: WorkspaceEdits prepared, checked and committed on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.edits import Basis, RootWriter, apply_workspace_edit, commit, prepare
from codeward.daemon.edits.diff import unified_diff
from codeward.daemon.edits.text import apply_text_edits
from codeward.daemon.edits.workspace import operations
from codeward.daemon.lsp.documents import content_hash
from codeward.protocol.errors import ErrorKind, ToolError


def rng(line: int, char: int, end_line: int, end_char: int) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": char},
        "end": {"line": end_line, "character": end_char},
    }


def edit(line: int, char: int, end_line: int, end_char: int, text: str) -> dict[str, Any]:
    return {"range": rng(line, char, end_line, end_char), "newText": text}


def text_edit(line: int, char: int, end_line: int, end_char: int, text: str) -> lsp.TextEdit:
    start, end = lsp.Position(line, char), lsp.Position(end_line, end_char)
    return lsp.TextEdit(range=lsp.Range(start, end), new_text=text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return Path(os.path.realpath(path))


def kind_of(info: pytest.ExceptionInfo[ToolError]) -> ErrorKind:
    return info.value.kind


# -- text edits ----------------------------------------------------------------------------


def test_text_edits_in_every_encoding() -> None:
    text = "a😀b = 1\nsecond\n"
    # "b" is after one astral character: 4 UTF-8 units, 2 UTF-16 units, 1 code point.
    for encoding, units in (("utf-8", 5), ("utf-16", 3), ("utf-32", 2)):
        edits = [text_edit(0, units, 0, units + 1, "c")]
        assert apply_text_edits(text, edits, encoding) == "a😀c = 1\nsecond\n"  # type: ignore[arg-type]


def test_text_edits_order_line_ends_and_clamping() -> None:
    text = "one\r\ntwo\rthree\nfour"
    edits = [
        text_edit(1, 0, 1, 3, "TWO"),  # a line ended by a lone \r
        text_edit(0, 3, 0, 3, "!"),  # inserts at one place keep their order
        text_edit(0, 3, 0, 3, "?"),
        text_edit(3, 2, 3, 99, "UR"),  # past the line's end means its end
        text_edit(9, 0, 9, 0, "\n"),  # past the last line means the end of the text
    ]
    assert apply_text_edits(text, edits, "utf-16") == "one!?\r\nTWO\rthree\nfoUR\n"


def test_overlapping_and_reversed_edits_are_refused() -> None:
    # (A negative position never gets this far: lsprotocol refuses it while structuring.)
    for edits in (
        [text_edit(0, 0, 0, 3, "x"), text_edit(0, 2, 0, 4, "y")],
        [text_edit(0, 3, 0, 1, "x")],
    ):
        with pytest.raises(ToolError) as info:
            apply_text_edits("hello\n", edits, "utf-16")
        assert kind_of(info) is ErrorKind.LSP_ERROR


_R = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def test_malformed_workspace_edits() -> None:
    for bad in (
        "nope",
        {"documentChanges": {"a": 1}},
        {"changes": {"file:///x": [{"range": 3}]}},
        {"documentChanges": [{"kind": "explode", "uri": "file:///x"}]},
        {"documentChanges": [{"kind": "create", "uri": "file:///x", "options": 3}]},
        {"changes": {"file:///x": [{"range": {"start": {"line": -1, "character": 0}}}]}},
        {"documentChanges": [{"textDocument": {"uri": "file:///x", "version": None}, "edits": [
            {"range": _R, "snippet": {"kind": "snippet", "value": "${1:x}"}}]}]},
    ):  # fmt: skip
        with pytest.raises(ToolError) as info:
            operations(bad)
        assert kind_of(info) is ErrorKind.LSP_ERROR
        assert "codeward cannot read" in info.value.message
    assert operations(None) == []


def test_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a.py", "x = 1", "x = 2\n")
    assert diff.splitlines() == [
        "--- a/a.py",
        "+++ b/a.py",
        "@@ -1 +1 @@",
        "-x = 1",
        "\\ No newline at end of file",
        "+x = 2",
    ]
    assert unified_diff("n.py", None, "new\n").startswith("--- /dev/null\n+++ b/n.py\n")


# -- prepare and commit ----------------------------------------------------------------------


def test_changes_and_document_changes(root: Path) -> None:
    (root / "a.py").write_text("x=1\n")
    (root / "b.py").write_text("y=2\n")
    changes = {
        "changes": {
            (root / "a.py").as_uri(): [edit(0, 1, 0, 2, " = ")],
            (root / "b.py").as_uri(): [edit(0, 1, 0, 2, " = ")],
        }
    }
    plan = prepare(root, changes, "utf-16", Basis())
    assert plan.files == ["a.py", "b.py"] and plan.edits == 2
    assert "-x=1\n+x = 1\n" in plan.diff and "+++ b/b.py" in plan.diff
    assert (root / "a.py").read_text() == "x=1\n"  # prepared only
    commit(plan)
    assert (root / "a.py").read_text() == "x = 1\n" and (root / "b.py").read_text() == "y = 2\n"
    # documentChanges win over changes; two edits of one file apply in turn.
    uri = (root / "a.py").as_uri()
    both = {
        "changes": {uri: [edit(0, 0, 0, 1, "IGNORED")]},
        "documentChanges": [
            {"textDocument": {"uri": uri, "version": None}, "edits": [edit(0, 0, 0, 1, "xx")]},
            {"textDocument": {"uri": uri, "version": None}, "edits": [edit(0, 0, 0, 2, "z")]},
        ],
    }
    plan = prepare(root, both, "utf-16", Basis())
    commit(plan)
    assert (root / "a.py").read_text() == "z = 1\n"
    # An edit that changes nothing plans nothing.
    same = {"changes": {uri: [edit(0, 0, 0, 1, "z")]}}
    plan = prepare(root, same, "utf-16", Basis())
    assert plan.changes == [] and plan.diff == "" and plan.edits == 1


def test_file_operations(root: Path) -> None:
    (root / "old.py").write_text("old\n")
    os.chmod(root / "old.py", 0o755)
    (root / "gone.py").write_text("gone\n")
    (root / "sub").mkdir()
    new, old, gone = root / "sub" / "new.py", root / "old.py", root / "gone.py"
    ops = {
        "documentChanges": [
            {"kind": "create", "uri": (root / "made.py").as_uri()},
            {
                "textDocument": {"uri": (root / "made.py").as_uri(), "version": None},
                "edits": [edit(0, 0, 0, 0, "made\n")],
            },
            {"kind": "rename", "oldUri": old.as_uri(), "newUri": new.as_uri()},
            {
                "textDocument": {"uri": new.as_uri(), "version": None},
                "edits": [edit(0, 0, 0, 3, "moved")],
            },
            {"kind": "delete", "uri": gone.as_uri()},
            {
                "kind": "delete",
                "uri": (root / "never.py").as_uri(),
                "options": {"ignoreIfNotExists": True},
            },
            {"kind": "create", "uri": new.as_uri(), "options": {"ignoreIfExists": True}},
        ]
    }
    plan = prepare(root, ops, "utf-16", Basis())
    assert plan.files == ["gone.py", "made.py", "old.py", "sub/new.py"]
    assert "--- a/gone.py\n+++ /dev/null" in plan.diff
    assert "--- /dev/null\n+++ b/made.py" in plan.diff
    commit(plan)
    assert not gone.exists() and not old.exists()
    assert (root / "made.py").read_text() == "made\n" and new.read_text() == "moved\n"
    assert os.stat(new).st_mode & 0o777 == 0o755  # the renamed file keeps its mode
    assert sorted(p.name for p in root.iterdir()) == ["made.py", "sub"]  # no temp files left


@pytest.mark.parametrize(
    "op",
    [
        {"kind": "create", "uri": "FILE"},  # exists, no overwrite
        {"kind": "create", "uri": "MISSING_DIR"},
        {"kind": "rename", "oldUri": "FILE", "newUri": "OTHER"},  # target exists
        {"kind": "rename", "oldUri": "DIR", "newUri": "NEW"},
        {"kind": "delete", "uri": "DIR", "options": {"recursive": True}},
    ],
)
def test_refused_file_operations(root: Path, op: dict[str, Any]) -> None:
    (root / "f.py").write_text("f\n")
    (root / "o.py").write_text("o\n")
    (root / "d").mkdir()
    names = {
        "FILE": root / "f.py",
        "OTHER": root / "o.py",
        "DIR": root / "d",
        "NEW": root / "n.py",
        "MISSING_DIR": root / "nowhere" / "x.py",
    }
    op = {k: names[v].as_uri() if isinstance(v, str) and v in names else v for k, v in op.items()}
    with pytest.raises(ToolError) as info:
        prepare(root, {"documentChanges": [op]}, "utf-16", Basis())
    assert kind_of(info) is ErrorKind.LSP_ERROR
    assert str(root) not in info.value.message


def test_deleting_or_editing_a_missing_file_is_stale(root: Path) -> None:
    for op in (
        {"kind": "delete", "uri": (root / "x.py").as_uri()},
        {"kind": "rename", "oldUri": (root / "x.py").as_uri(), "newUri": (root / "y.py").as_uri()},
        {"textDocument": {"uri": (root / "x.py").as_uri()}, "edits": []},
    ):
        with pytest.raises(ToolError) as info:
            prepare(root, {"documentChanges": [op]}, "utf-16", Basis())
        assert kind_of(info) is ErrorKind.STALE_EDIT and info.value.details["path"] == "x.py"


def test_outside_the_root_writes_nothing(root: Path, tmp_path: Path) -> None:
    inside, outside = root / "in.py", tmp_path / "outside.py"
    inside.write_text("in\n")
    outside.write_text("out\n")
    (root / "link.py").symlink_to(outside)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    for target in (
        outside.as_uri(),
        (root / "link.py").as_uri(),  # a symlink inside pointing outside
        (root / ".." / "outside.py").as_uri(),
        (root / ".git" / "config").as_uri(),
        "untitled:Untitled-1",
        root.as_uri(),
    ):
        bad = {
            "changes": {
                inside.as_uri(): [edit(0, 0, 0, 2, "changed")],  # listed first: still not written
                target: [edit(0, 0, 0, 0, "evil")],
            }
        }
        with pytest.raises(ToolError) as info:
            prepare(root, bad, "utf-16", Basis())
        assert kind_of(info) is ErrorKind.PATH_OUTSIDE_PROJECT, target
        assert str(tmp_path) not in info.value.message
    assert inside.read_text() == "in\n" and outside.read_text() == "out\n"
    assert (root / ".git" / "config").read_text() == "[core]\n"


def test_stale_by_hash_and_by_version(root: Path) -> None:
    path = root / "a.py"
    path.write_text("x = 1\n")
    change = {"changes": {path.as_uri(): [edit(0, 4, 0, 5, "2")]}}
    # The server saw other content than what is on disk now.
    seen = Basis({path: (3, content_hash(b"x = 0\n"))})
    with pytest.raises(ToolError) as info:
        prepare(root, change, "utf-16", seen)
    assert kind_of(info) is ErrorKind.STALE_EDIT and "a.py" in info.value.message
    # The server computed the edit for another version of the document than it had.
    now = Basis({path: (3, content_hash(b"x = 1\n"))})
    versioned = {
        "documentChanges": [
            {"textDocument": {"uri": path.as_uri(), "version": 2}, "edits": [edit(0, 4, 0, 5, "2")]}
        ]
    }
    with pytest.raises(ToolError) as info:
        prepare(root, versioned, "utf-16", now)
    assert kind_of(info) is ErrorKind.STALE_EDIT
    versioned["documentChanges"][0]["textDocument"]["version"] = 3
    assert prepare(root, versioned, "utf-16", now).files == ["a.py"]
    assert path.read_text() == "x = 1\n"


def test_stale_between_prepare_and_commit(root: Path) -> None:
    a, b = root / "a.py", root / "b.py"
    a.write_text("a\n")
    b.write_text("b\n")
    change = {"changes": {a.as_uri(): [edit(0, 0, 0, 1, "A")], b.as_uri(): [edit(0, 0, 0, 1, "B")]}}
    plan = prepare(root, change, "utf-16", Basis())
    b.write_text("b changed by someone\n")
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert kind_of(info) is ErrorKind.STALE_EDIT and info.value.details["path"] == "b.py"
    assert a.read_text() == "a\n"  # nothing written
    # A file created meanwhile where the plan creates one is stale too.
    plan = prepare(
        root,
        {"documentChanges": [{"kind": "create", "uri": (root / "c.py").as_uri()}]},
        "utf-16",
        Basis(),
    )
    (root / "c.py").write_text("someone's\n")
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert kind_of(info) is ErrorKind.STALE_EDIT and (root / "c.py").read_text() == "someone's\n"


@pytest.mark.parametrize("failing", ["b.py", "e.py"])  # the second file; the last one
def test_rollback_when_a_replace_fails(
    root: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    before = {"a.py": "a\n", "b.py": "b\n", "c.py": "c\n", "e.py": "e\n"}
    for name, text in before.items():
        (root / name).write_text(text)
    os.chmod(root / "a.py", 0o700)
    uri = {name: (root / name).as_uri() for name in [*before, "d.py"]}
    change = {
        "documentChanges": [
            {"kind": "delete", "uri": uri["c.py"]},
            {"kind": "create", "uri": uri["d.py"]},
            {"textDocument": {"uri": uri["a.py"]}, "edits": [edit(0, 0, 0, 1, "A")]},
            {"textDocument": {"uri": uri["b.py"]}, "edits": [edit(0, 0, 0, 1, "B")]},
            {"textDocument": {"uri": uri["e.py"]}, "edits": [edit(0, 0, 0, 1, "E")]},
        ]
    }
    plan = prepare(root, change, "utf-16", Basis())
    assert plan.files == ["a.py", "b.py", "c.py", "d.py", "e.py"]
    real_replace = os.replace
    failed: list[str] = []

    def replace(src: Any, dst: Any, **at: Any) -> None:  # names in their folder's descriptor
        if Path(dst).name == failing and not failed:
            failed.append(str(dst))
            raise PermissionError(13, "Permission denied")
        real_replace(src, dst, **at)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert failed and kind_of(info) is ErrorKind.WRITE_FAILED
    assert info.value.details == {"path": failing, "reason": "not_permitted"}
    assert failing in info.value.message and "Nothing was lost" in info.value.message
    assert {name: (root / name).read_text() for name in before} == before
    assert os.stat(root / "a.py").st_mode & 0o777 == 0o700
    assert not (root / "d.py").exists()
    assert sorted(p.name for p in root.iterdir()) == sorted(before)  # no temp files left


def test_unwritable_folder_fails_before_anything_changes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = root / "a.py"
    a.write_text("a\n")
    plan = prepare(root, {"changes": {a.as_uri(): [edit(0, 0, 0, 1, "A")]}}, "utf-16", Basis())

    def no_space(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)  # staging a.py's new content fails
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert kind_of(info) is ErrorKind.WRITE_FAILED and "the disk is full" in info.value.message
    assert info.value.details["reason"] == "no_space"
    assert a.read_text() == "a\n"
    assert [p.name for p in root.iterdir()] == ["a.py"]  # no staged file left


def test_binary_and_special_files(root: Path) -> None:
    (root / "bin.py").write_bytes(b"\x00\x01\x02")
    (root / "latin.py").write_bytes(b"caf\xe9\n")
    os.mkfifo(root / "pipe.py")
    (root / "dir.py").mkdir()
    for name, kind in (
        ("bin.py", ErrorKind.UNSUPPORTED_FILE_TYPE),
        ("latin.py", ErrorKind.UNSUPPORTED_FILE_TYPE),
        ("pipe.py", ErrorKind.LSP_ERROR),
        ("dir.py", ErrorKind.LSP_ERROR),
    ):
        change = {"changes": {(root / name).as_uri(): [edit(0, 0, 0, 0, "x")]}}
        with pytest.raises(ToolError) as info:
            prepare(root, change, "utf-16", Basis())
        assert kind_of(info) is kind, name
    assert (root / "bin.py").read_bytes() == b"\x00\x01\x02"


def test_modes_and_new_file_permissions(root: Path) -> None:
    a = root / "a.sh"
    a.write_text("echo a\n")
    os.chmod(a, 0o750)
    change = {
        "documentChanges": [
            {"textDocument": {"uri": a.as_uri()}, "edits": [edit(0, 5, 0, 6, "b")]},
            {"kind": "create", "uri": (root / "new.py").as_uri()},
        ]
    }
    commit(prepare(root, change, "utf-16", Basis()))
    assert os.stat(a).st_mode & 0o777 == 0o750 and a.read_text() == "echo b\n"
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(root / "new.py").st_mode & 0o777 == 0o666 & ~umask


async def test_apply_workspace_edit_dry_run_and_apply(root: Path, nursery: trio.Nursery) -> None:
    a = root / "a.py"
    a.write_text("x=1\n")
    told: list[list[Path]] = []
    writer = RootWriter(root, lambda paths, created: told.append(list(paths)))
    await nursery.start(writer.run)
    change = {"changes": {a.as_uri(): [edit(0, 1, 0, 2, " = ")]}}
    dry = await apply_workspace_edit(writer, change, "utf-16", Basis(), apply=False)
    assert not dry.applied and dry.files_changed == ["a.py"] and dry.edits == 1
    assert a.read_text() == "x=1\n" and told == []
    done = await apply_workspace_edit(writer, change, "utf-16", Basis(), apply=True)
    assert done.applied and done.diff == dry.diff and told == [[a]]
    assert a.read_text() == "x = 1\n"
    # Cancelled before it is written: the write still finishes (shielded).
    a.write_text("x=1\n")
    with trio.CancelScope() as scope:
        scope.cancel()
        await apply_workspace_edit(writer, change, "utf-16", Basis(), apply=True)
    assert a.read_text() == "x = 1\n" and told == [[a], [a]]
    # Nothing to change: nothing written, nobody told.
    nothing = await apply_workspace_edit(writer, {"changes": {}}, "utf-16", Basis(), apply=True)
    assert not nothing.applied and nothing.files_changed == [] and len(told) == 2


async def test_writer_makes_the_folder_of_a_move_and_removes_it_when_refused(
    root: Path, nursery: trio.Nursery
) -> None:
    a, b = root / "a.py", root / "b.py"
    a.write_text("x = 1\n")
    b.write_text("import a\n")
    writer = RootWriter(root, lambda paths, created: None)
    await nursery.start(writer.run)
    new = root / "deep" / "er" / "a.py"

    def move(basis_hash: str) -> tuple[dict[str, Any], Basis]:
        change = {
            "documentChanges": [
                {"textDocument": {"uri": b.as_uri(), "version": None},
                 "edits": [edit(0, 7, 0, 8, "deep.er.a")]},
                {"kind": "rename", "oldUri": a.as_uri(), "newUri": new.as_uri()},
            ]
        }  # fmt: skip
        return change, Basis({b: (0, basis_hash)})

    # b.py is not the content the edit was computed from: nothing written, no folder left
    change, stale = move("sha256:other")
    with pytest.raises(ToolError) as info:
        await writer.write(change, "utf-32", stale, folder=new.parent)
    assert info.value.kind is ErrorKind.STALE_EDIT
    assert not (root / "deep").exists() and a.exists() and b.read_text() == "import a\n"
    # a folder that would be reached through a link out of the root is refused
    (root / "out").symlink_to(root.parent)
    with pytest.raises(ToolError) as info:
        await writer.write({"changes": {}}, "utf-32", Basis(), folder=root / "out" / "sub")
    assert info.value.kind is ErrorKind.PATH_OUTSIDE_PROJECT
    assert not (root.parent / "sub").exists()
    # written: the folders made, the file moved, the importer edited
    change, basis = move(content_hash(b.read_bytes()))
    plan = await writer.write(change, "utf-32", basis, folder=new.parent)
    assert {c.shown for c in plan.changes} == {"a.py", "b.py", "deep/er/a.py"}
    assert new.read_text() == "x = 1\n" and not a.exists()
    assert b.read_text() == "import deep.er.a\n"
