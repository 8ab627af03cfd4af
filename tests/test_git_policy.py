"""Tiers and argument rules of git commands, as pure functions (plus the filesystem for paths)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeward.daemon.git.policy import Tier, classify
from codeward.protocol.errors import ErrorKind, ToolError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    (path / "file.txt").write_text("x\n")
    (path / "sub").mkdir()
    return Path(os.path.realpath(path))


def tier(root: Path, subcommand: str, *args: str) -> Tier:
    return classify(root, subcommand, list(args)).tier


def refused(root: Path, subcommand: str, *args: str) -> ErrorKind:
    with pytest.raises(ToolError) as info:
        classify(root, subcommand, list(args))
    assert info.value.message.endswith((".", ";")) or info.value.message
    return info.value.kind


@pytest.mark.parametrize(
    ("subcommand", "args"),
    [
        ("status", []),
        ("status", ["--porcelain=v2", "-z"]),
        ("diff", ["--cached", "HEAD~1"]),
        ("log", ["--format=%H", "-n", "5", "--author", "Bob"]),
        ("show", ["HEAD"]),
        ("branch", []),
        ("branch", ["-a", "-vv"]),
        ("branch", ["--list", "feat*"]),
        ("branch", ["--contains", "HEAD"]),
        ("tag", []),
        ("tag", ["-l", "v1.*"]),
        ("remote", ["-v"]),
        ("remote", ["get-url", "origin"]),
        ("stash", ["list"]),
        ("stash", ["show", "-p"]),
        ("blame", ["file.txt"]),
        ("ls-files", []),
        ("rev-parse", ["HEAD"]),
        ("describe", ["--tags"]),
        ("shortlog", ["-sn"]),
        ("fetch", ["origin"]),
        ("fetch", ["origin", "main"]),
        ("grep", ["-n", "needle"]),
        ("clean", ["-n"]),
    ],
)
def test_reads(root: Path, subcommand: str, args: list[str]) -> None:
    decision = classify(root, subcommand, args)
    assert decision.tier is Tier.READ
    assert not decision.changes_worktree


@pytest.mark.parametrize(
    ("subcommand", "args", "changes"),
    [
        ("add", ["file.txt"], False),
        ("commit", ["-m", "message"], False),
        ("commit", ["-m", "../not a path"], False),
        ("checkout", ["main"], True),
        ("checkout", ["-b", "new"], True),
        ("switch", ["-c", "new"], True),
        ("commit", ["-C", "HEAD"], False),
        ("branch", ["-c", "old", "copy"], False),
        ("restore", ["--staged", "file.txt"], True),
        ("restore", ["-S", "file.txt"], True),
        ("merge", ["feature"], True),
        ("rebase", ["main"], True),
        ("cherry-pick", ["abc123"], True),
        ("revert", ["HEAD"], True),
        ("stash", [], True),
        ("stash", ["push", "-m", "wip"], True),
        ("stash", ["pop"], True),
        ("stash", ["apply"], True),
        ("branch", ["new-branch"], False),
        ("branch", ["-d", "old"], False),
        ("branch", ["-m", "old", "new"], False),
        ("tag", ["v1.0"], False),
        ("tag", ["-a", "v1.0", "-m", "release"], False),
        ("pull", [], True),
        ("push", ["origin", "main"], False),
        ("push", ["-u", "origin", "main"], False),
        ("reset", ["--soft", "HEAD~1"], True),
        ("reset", ["--mixed", "HEAD~1"], True),
        ("reset", ["HEAD", "--", "file.txt"], True),
        ("rm", ["file.txt"], True),
        ("mv", ["file.txt", "moved.txt"], True),
        ("remote", ["add", "upstream", "https://example.com/x.git"], False),
        ("fetch", ["origin", "main:main"], False),
    ],
)
def test_writes(root: Path, subcommand: str, args: list[str], changes: bool) -> None:
    decision = classify(root, subcommand, args)
    assert decision.tier is Tier.WRITE, decision
    assert decision.changes_worktree is changes
    assert decision.summary.startswith(f"git {subcommand}")
    assert "(write:" in decision.summary


@pytest.mark.parametrize(
    ("subcommand", "args"),
    [
        ("push", ["--force"]),
        ("push", ["-f", "origin", "main"]),
        ("push", ["-uf", "origin", "main"]),
        ("push", ["--force-with-lease", "origin", "main"]),
        ("push", ["--force-with-lease=main:abc", "origin", "main"]),
        ("push", ["--force-if-includes", "origin"]),
        ("push", ["origin", "+main"]),
        ("push", ["origin", "+main:main"]),
        ("push", ["--mirror", "origin"]),
        ("push", ["--delete", "origin", "old"]),
        ("push", ["-d", "origin", "old"]),
        ("push", ["origin", ":old"]),
        ("push", ["--prune", "origin"]),
        ("reset", ["--hard"]),
        ("reset", ["--hard", "HEAD~1"]),
        ("reset", ["--merge"]),
        ("reset", ["--keep", "HEAD~1"]),
        ("clean", ["-f"]),
        ("clean", ["-fdx"]),
        ("clean", ["-d", "--force"]),
        ("clean", []),
        ("branch", ["-D", "old"]),
        ("branch", ["-d", "-f", "old"]),
        ("branch", ["--delete", "--force", "old"]),
        ("branch", ["-M", "old", "new"]),
        ("branch", ["-f", "main", "HEAD~1"]),
        ("checkout", ["--", "file.txt"]),
        ("checkout", ["."]),
        ("checkout", ["file.txt"]),
        ("checkout", ["-f", "main"]),
        ("checkout", ["main", "--", "file.txt"]),
        ("checkout", ["HEAD~1", "file.txt"]),
        ("checkout", ["*.txt"]),
        ("checkout", ["--ours", "file.txt"]),
        ("restore", ["file.txt"]),
        ("restore", ["--worktree", "--staged", "file.txt"]),
        ("restore", ["-SW", "file.txt"]),
        ("switch", ["--discard-changes", "main"]),
        ("switch", ["-f", "main"]),
        ("switch", ["-C", "main"]),
        ("branch", ["-C", "old", "main"]),
        ("stash", ["drop"]),
        ("stash", ["clear"]),
        ("tag", ["-d", "v1.0"]),
        ("tag", ["-f", "v1.0"]),
        ("rm", ["-f", "file.txt"]),
        ("fetch", ["origin", "+main:main"]),
    ],
)
def test_destructive(root: Path, subcommand: str, args: list[str]) -> None:
    decision = classify(root, subcommand, args)
    assert decision.tier is Tier.DESTRUCTIVE, decision
    assert "(destructive:" in decision.summary


def test_stash_drop_does_not_touch_the_work_tree(root: Path) -> None:
    assert not classify(root, "stash", ["drop"]).changes_worktree


@pytest.mark.parametrize(
    ("subcommand", "args"),
    [
        # global options
        ("status", ["-c", "core.pager=sh"]),
        ("push", ["-C", "/", "origin"]),
        ("fetch", ["-c", "core.sshCommand=sh"]),
        ("status", ["--git-dir=/tmp/other/.git"]),
        ("status", ["--git-dir", "/tmp/other/.git"]),
        ("status", ["--work-tree=/"]),
        ("status", ["--exec-path=/tmp"]),
        ("status", ["--config-env=core.pager=EVIL"]),
        ("log", ["--namespace=x"]),
        ("-c", ["core.pager=sh", "log"]),
        ("--git-dir=/x", ["status"]),
        # per-subcommand options that run programs or write files
        ("diff", ["--output=/tmp/owned"]),
        ("log", ["--output", "/tmp/owned"]),
        ("diff", ["--outpu=x"]),
        ("show", ["--ext-diff"]),
        ("log", ["-p", "--textconv"]),
        ("fetch", ["--upload-pack=touch /tmp/x", "origin"]),
        ("fetch", ["--upload-pa=touch /tmp/x", "origin"]),
        ("fetch", ["-u", "touch /tmp/x", "origin"]),
        ("pull", ["--upload-pack", "touch /tmp/x"]),
        ("push", ["--receive-pack=touch /tmp/x", "origin"]),
        ("push", ["--exec=touch /tmp/x", "origin"]),
        ("rebase", ["-x", "touch /tmp/x", "main"]),
        ("rebase", ["--exec", "touch /tmp/x", "main"]),
        ("rebase", ["-kx", "touch /tmp/x", "main"]),
        ("rebase", ["-i", "main"]),
        ("rebase", ["--interactive", "main"]),
        ("diff", ["--no-index", "a", "b"]),
        ("blame", ["--contents", "file.txt", "file.txt"]),
        ("grep", ["-O", "needle"]),
        ("grep", ["-Ovim", "needle"]),
        ("grep", ["--open-files-in-pager", "needle"]),
        # transports that run programs
        ("fetch", ["ext::sh -c touch% /tmp/x"]),
        ("push", ["EXT::sh -c touch% /tmp/x", "main"]),
        ("remote", ["add", "evil", "ext::sh -c touch% /tmp/x"]),
        ("fetch", ["fd::3"]),
        # NUL and newlines
        ("log", ["--grep=a\nb"]),
        ("log", ["a\x00b"]),
        ("status\n", []),
    ],
)
def test_injection_vectors_refused(root: Path, subcommand: str, args: list[str]) -> None:
    assert refused(root, subcommand, *args) is ErrorKind.ARGUMENT_NOT_ALLOWED


@pytest.mark.parametrize(
    "subcommand",
    [
        "config",
        "clone",
        "submodule",
        "worktree",
        "am",
        "gc",
        "filter-branch",
        "daemon",
        "difftool",
        "STATUS",
    ],
)
def test_unlisted_subcommands_refused(root: Path, subcommand: str) -> None:
    assert refused(root, subcommand) is ErrorKind.SUBCOMMAND_NOT_ALLOWED


@pytest.mark.parametrize(
    ("subcommand", "args"),
    [
        ("diff", ["--", "../outside.txt"]),
        ("diff", ["--", "/etc/passwd"]),
        ("log", ["--", "sub/../../outside"]),
        ("diff", ["/etc/passwd", "/etc/hosts"]),
        ("add", ["../outside.txt"]),
        ("commit", ["-F", "/etc/passwd"]),
        ("commit", ["--file=../message.txt"]),
        ("add", ["--pathspec-from-file=/etc/passwd"]),
        ("diff", ["-O/etc/passwd"]),
        ("log", ["--", ":(top)file.txt"]),
        ("log", ["--", ":/file.txt"]),
        ("log", ["--", ":!../outside"]),
        ("push", ["/tmp/elsewhere.git", "main"]),
        ("push", ["file:///tmp/elsewhere.git", "main"]),
    ],
)
def test_paths_outside_root_refused(root: Path, subcommand: str, args: list[str]) -> None:
    assert refused(root, subcommand, *args) is ErrorKind.PATH_OUTSIDE_PROJECT


def test_symlink_out_of_root_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (root / "link").symlink_to(outside)
    assert refused(root, "diff", "--", "link/secret.txt") is ErrorKind.PATH_OUTSIDE_PROJECT
    assert refused(root, "add", "link") is ErrorKind.PATH_OUTSIDE_PROJECT
    assert refused(root, "log", "--", "link") is ErrorKind.PATH_OUTSIDE_PROJECT


def test_paths_inside_root_allowed(root: Path) -> None:
    assert tier(root, "diff", "--", "file.txt", "sub", ":(exclude)sub", ":!file.txt") is Tier.READ
    assert tier(root, "log", "--", "sub/../file.txt", "*.txt") is Tier.READ
    assert tier(root, "add", str(root / "file.txt")) is Tier.WRITE
    assert tier(root, "commit", "-F", "file.txt") is Tier.WRITE
    assert tier(root, "log", "main..feature", "HEAD~3...HEAD") is Tier.READ


def test_long_forms_of_refused_short_options_work(root: Path) -> None:
    assert tier(root, "log", "--find-copies") is Tier.READ
    assert tier(root, "log", "-C", "-c") is Tier.READ  # log's own -C and -c
    assert tier(root, "grep", "-C", "3", "needle") is Tier.READ
    assert tier(root, "diff", "--text") is Tier.READ  # a prefix of --textconv, but exact
    assert tier(root, "commit", "--reuse-message=HEAD") is Tier.WRITE


def test_bad_argument_types(root: Path) -> None:
    with pytest.raises(ToolError) as info:
        classify(root, "", [])
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    with pytest.raises(ToolError) as info:
        classify(root, "log", [1])  # type: ignore[list-item]
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


def test_messages_never_show_outside_paths(root: Path) -> None:
    with pytest.raises(ToolError) as info:
        classify(root, "diff", ["--", "/etc/passwd"])
    assert "/etc" not in info.value.message
