"""Git arguments typed in a subdirectory: codeward's flags taken out, paths made root-relative."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.client.gitargs import pathspec, root_relative, take_own_flags


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "r"
    (root / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/mod.py", "pkg/msg.txt", "pkg/sub/x.py", "top.py"):
        (root / name).write_text("x\n")
    return root, root / "pkg"


@pytest.mark.parametrize(
    ("subcommand", "args", "expected"),
    [
        # after `--`: every argument is a pathspec, existing or not, magic kept
        ("log", ["--oneline", "--", "mod.py"], ["--oneline", "--", "pkg/mod.py"]),
        ("log", ["--", "gone.py", "../top.py", "."], ["--", "pkg/gone.py", "top.py", "pkg"]),
        ("diff", ["HEAD", "--", "sub/"], ["HEAD", "--", "pkg/sub/"]),
        ("log", ["--", ":!mod.py", ":/top.py"], ["--", ":!pkg/mod.py", ":/top.py"]),
        ("log", ["--", ":(glob)**/*.py", ":(top)x"], ["--", ":(glob)pkg/**/*.py", ":(top)x"]),
        ("log", ["--", "../../outside"], ["--", "../outside"]),  # the daemon refuses it
        ("log", ["--", "--yes"], ["--", "pkg/--yes"]),  # a path, not a flag, after `--`
        # before `--`: an existing path is a path; a revision or pattern is left alone
        ("log", ["main", "mod.py"], ["main", "pkg/mod.py"]),
        ("blame", ["-L", "1,2", "mod.py"], ["-L", "1,2", "pkg/mod.py"]),
        ("status", ["--short", "."], ["--short", "pkg"]),
        ("grep", ["-n", "needle", "sub"], ["-n", "needle", "pkg/sub"]),
        ("show", ["HEAD:pkg/mod.py"], ["HEAD:pkg/mod.py"]),  # git's own root-relative form
        # commands whose positionals are all paths, existing or not
        ("add", ["new.py", "-A"], ["pkg/new.py", "-A"]),
        ("mv", ["mod.py", "renamed.py"], ["pkg/mod.py", "pkg/renamed.py"]),
        ("rm", ["--cached", "gone.py"], ["--cached", "pkg/gone.py"]),
        ("restore", ["--source", "HEAD~1", "mod.py"], ["--source", "HEAD~1", "pkg/mod.py"]),
        ("restore", ["-s", "main", "--staged", "x"], ["-s", "main", "--staged", "pkg/x"]),
        ("ls-files", ["-x", "*.pyc", "sub"], ["-x", "*.pyc", "pkg/sub"]),
        ("clean", ["-n", "-e", "keep", "sub"], ["-n", "-e", "keep", "pkg/sub"]),
        # option values that are files, separate or attached
        ("commit", ["-F", "msg.txt"], ["-F", "pkg/msg.txt"]),
        ("commit", ["--file=msg.txt"], ["--file=pkg/msg.txt"]),
        ("add", ["--pathspec-from-file=list"], ["--pathspec-from-file=pkg/list"]),
        ("grep", ["-f", "patterns", "-e", "x"], ["-f", "pkg/patterns", "-e", "x"]),
        ("grep", ["-F", "mod.py"], ["-F", "pkg/mod.py"]),  # grep's -F takes no value
        ("diff", ["-O", "order"], ["-O", "pkg/order"]),
        ("diff", ["--relative"], ["--relative=pkg/"]),
    ],
)
def test_paths_from_a_subdirectory(
    tree: tuple[Path, Path], subcommand: str, args: list[str], expected: list[str]
) -> None:
    root, cwd = tree
    assert root_relative(subcommand, args, cwd, root) == expected


def test_nothing_changes_at_the_root_or_outside_it(tree: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = tree
    args = ["--", "mod.py", "--relative"]
    assert root_relative("log", args, root, root) == args
    assert root_relative("log", args, tmp_path, root) == args


def test_pathspec_edge_cases() -> None:
    assert pathspec(":", "pkg") == ":"
    assert pathspec(":!", "pkg") == ":!"
    assert pathspec(":(icase", "pkg") == ":(icase"  # unterminated magic: git's to refuse
    assert pathspec(":^:a", "pkg") == ":^:pkg/a"
    assert pathspec("/abs/x", "pkg") == "/abs/x"


def test_own_flags_after_the_subcommand() -> None:
    assert take_own_flags(["--force", "--allow-destructive", "origin", "--yes"]) == (
        ["--force", "origin"],
        {"--allow-destructive", "--yes"},
    )
    assert take_own_flags(["--json", "--", "--yes"]) == (["--", "--yes"], {"--json"})
    assert take_own_flags(["-y", "--root"]) == (["-y", "--root"], set())  # git's, or ambiguous
