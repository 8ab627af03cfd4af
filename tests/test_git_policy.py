"""Tiers and argument rules of git commands, as pure functions (plus the filesystem for paths)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.daemon.git.policy import Tier, classify
from codeward.protocol.errors import ErrorKind, ToolError


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_root(tmp_path_factory.mktemp("policy"))


def make_root(tmp_path: Path) -> Path:
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


def test_symlink_out_of_root_refused(tmp_path: Path) -> None:
    root = make_root(tmp_path)
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


# --- issue 14: git's option grammar ------------------------------------------------------

REFUSALS = (ErrorKind.ARGUMENT_NOT_ALLOWED, ErrorKind.PATH_OUTSIDE_PROJECT)

# Options whose value is optional in git never consume the next argument, so the next one
# is checked as an option of its own: here `--output`, which writes any file.
OPTIONAL_VALUE_BEFORE_OUTPUT = [
    (sub, [*lead, opt, out])
    for sub, lead in (("log", ["-1", "--format=%H"]), ("show", []), ("diff", []))
    for opt in ("--relative", "--pretty", "--branches", "--tags", "--remotes", "--stat",
                "--color", "--abbrev", "--word-diff", "--submodule", "--dirstat", "-M", "-C",
                "-B", "-U", "--find-renames", "--ignore-submodules", "--color-moved")
    if sub != "diff" or opt not in ("--pretty", "--branches", "--tags", "--remotes")
    for out in ("--output=owned.txt", "--output")
]  # fmt: skip


def test_optional_values_never_hide_the_next_option(root: Path) -> None:
    assert len(OPTIONAL_VALUE_BEFORE_OUTPUT) >= 90
    for subcommand, args in OPTIONAL_VALUE_BEFORE_OUTPUT:
        with pytest.raises(ToolError) as info:
            classify(root, subcommand, [*args, "x"] if args[-1] == "--output" else args)
        assert info.value.kind is ErrorKind.ARGUMENT_NOT_ALLOWED, args
        assert info.value.details["option"] == "--output" and "--output" in info.value.message


TRUE_TIERS = [
    ("branch", ["--column", "-D", "x"], Tier.DESTRUCTIVE),
    ("branch", ["--column", "NEW"], Tier.WRITE),
    ("branch", ["--column", "--delete", "--force", "x"], Tier.DESTRUCTIVE),
    ("branch", ["--color", "-D", "x"], Tier.DESTRUCTIVE),
    ("branch", ["--abbrev", "-M", "a", "b"], Tier.DESTRUCTIVE),
    ("branch", ["-t", "-f", "main", "HEAD~1"], Tier.DESTRUCTIVE),
    ("branch", ["--track", "NEW", "origin/main"], Tier.WRITE),
    ("branch", ["-v", "NEW"], Tier.WRITE),
    ("branch", ["-vv", "NEW"], Tier.WRITE),
    ("branch", ["--sort=refname", "NEW"], Tier.WRITE),
    ("branch", ["--format", "%(refname)", "NEW"], Tier.WRITE),
    ("branch", ["--", "NEW"], Tier.WRITE),
    ("branch", ["--end-of-options", "-D"], Tier.WRITE),
    ("tag", ["--column", "NEW"], Tier.WRITE),
    ("tag", ["-n", "-d", "v1"], Tier.DESTRUCTIVE),
    ("tag", ["--color", "-f", "v1"], Tier.DESTRUCTIVE),
    ("tag", ["--sort=refname", "NEW"], Tier.WRITE),
    ("checkout", ["-t", "-f", "main"], Tier.DESTRUCTIVE),
    ("checkout", ["--track", "--force", "main"], Tier.DESTRUCTIVE),
    ("checkout", [":(glob)*.txt"], Tier.DESTRUCTIVE),
    ("checkout", ["--end-of-options", "file.txt"], Tier.DESTRUCTIVE),
    ("switch", ["-t", "-C", "main"], Tier.DESTRUCTIVE),
    ("status", ["-u", "--porcelain"], Tier.READ),
    ("fetch", ["--prune", "--prune-tags", "origin"], Tier.DESTRUCTIVE),
    ("fetch", ["-pP", "origin"], Tier.DESTRUCTIVE),
    ("fetch", ["--prune", "origin"], Tier.WRITE),
    ("fetch", ["--tags", "--force", "origin"], Tier.DESTRUCTIVE),
    ("fetch", ["origin", "tag", "v1"], Tier.WRITE),
    ("fetch", ["origin", "refs/heads/*:refs/heads/*"], Tier.WRITE),
    ("fetch", ["origin", "+refs/heads/*:refs/heads/*"], Tier.DESTRUCTIVE),
    ("fetch", ["-f", "origin", "main:main"], Tier.DESTRUCTIVE),
    ("fetch", ["origin", "--", "+main:main"], Tier.DESTRUCTIVE),
    ("pull", ["origin", "+main:main"], Tier.DESTRUCTIVE),
    ("push", ["--force-with-lease", "origin"], Tier.DESTRUCTIVE),
    ("push", ["origin", "--", "+main"], Tier.DESTRUCTIVE),
    ("push", ["--no-force-with-lease", "origin", "main"], Tier.WRITE),
    ("merge", ["--abort"], Tier.DESTRUCTIVE),
    ("merge", ["--log", "--abort"], Tier.DESTRUCTIVE),
    ("rebase", ["--abort"], Tier.DESTRUCTIVE),
    ("rebase", ["--skip"], Tier.DESTRUCTIVE),
    ("rebase", ["-r", "--skip"], Tier.DESTRUCTIVE),
    ("cherry-pick", ["--abort"], Tier.DESTRUCTIVE),
    ("revert", ["--skip"], Tier.DESTRUCTIVE),
    ("stash", ["-q", "drop"], Tier.DESTRUCTIVE),
    ("stash", ["-u", "clear"], Tier.DESTRUCTIVE),
    ("clean", ["-nf"], Tier.DESTRUCTIVE),
    ("clean", ["-nd"], Tier.READ),
    ("rm", ["-rf", "sub"], Tier.DESTRUCTIVE),
    ("restore", ["--source", "HEAD", "file.txt"], Tier.DESTRUCTIVE),
    ("restore", ["-s", "HEAD", "--staged", "file.txt"], Tier.WRITE),
    ("commit", ["-S", "-m", "x"], Tier.WRITE),
]


def test_arity_gives_the_true_tier(root: Path) -> None:
    wrong = [(s, a, t) for s, a, t in TRUE_TIERS if tier(root, s, *a) is not t]
    assert not wrong


ABBREVIATIONS = [
    ("reset", ["--ha"]), ("reset", ["--har"]), ("reset", ["--me"]), ("reset", ["--kee"]),
    ("checkout", ["--forc", "main"]), ("checkout", ["--fo", "main"]),
    ("branch", ["--delet", "--forc", "x"]), ("branch", ["--del", "x"]),
    ("branch", ["--delete", "--forc", "x"]), ("branch", ["--mov", "a", "b"]),
    ("push", ["--del", "origin", "x"]), ("push", ["--mirr", "origin"]),
    ("push", ["--force-w", "origin"]), ("push", ["--forc", "origin"]),
    ("push", ["--force-with", "origin"]), ("push", ["--pru", "origin"]),
    ("push", ["--rep=/tmp/x"]), ("rm", ["--forc", "file.txt"]), ("rm", ["--ca", "file.txt"]),
    ("restore", ["--work", "file.txt"]), ("restore", ["--stag", "file.txt"]),
    ("blame", ["--ignore-revs-f=/etc/passwd", "file.txt"]),
    ("blame", ["--ignore-revs-fil", "/etc/passwd", "file.txt"]),
    ("blame", ["--cont", "/etc/passwd", "file.txt"]),
    ("commit", ["--fil=/etc/passwd"]), ("commit", ["--templ=/etc/passwd"]),
    ("commit", ["--pathspec-from=/etc/passwd"]), ("log", ["--out=x"]),
    ("log", ["--outp", "x"]), ("diff", ["--no-ind", "a", "b"]), ("diff", ["--ext"]),
    ("show", ["--textc"]), ("clean", ["--forc"]), ("fetch", ["--prune-t", "origin"]),
    ("fetch", ["--refm=+refs/heads/*:refs/heads/*", "origin"]),
    ("fetch", ["--upload", "x", "origin"]), ("pull", ["--upl=x"]), ("push", ["--rec=x"]),
    ("switch", ["--discard", "main"]), ("switch", ["--forc", "main"]),
    ("tag", ["--del", "v1"]), ("stash", ["push", "--includ"]),
    ("grep", ["--open", "x"]), ("grep", ["--no-ind", "x"]), ("merge", ["--ab"]),
    ("rebase", ["--exe", "touch x", "main"]), ("rebase", ["--interact", "main"]),
    ("status", ["--porc"]), ("ls-files", ["--exclude-fr=/etc/passwd"]),
]  # fmt: skip


def test_abbreviations_are_refused_and_named(root: Path) -> None:
    for subcommand, args in ABBREVIATIONS:
        with pytest.raises(ToolError) as info:
            classify(root, subcommand, args)
        assert info.value.kind is ErrorKind.ARGUMENT_NOT_ALLOWED, args
        named = info.value.details["option"]
        assert isinstance(named, str) and named in info.value.message
        assert any(a.split("=")[0] == named for a in args)


UNLISTED = [
        ("log", ["--refmap=x"]), ("fetch", ["--refmap=+refs/heads/*:refs/heads/*", "origin"]),
        ("fetch", ["--refmap", "+refs/heads/*:refs/heads/*", "origin"]),
        ("fetch", ["--update-head-ok", "origin", "main:main"]), ("fetch", ["-u", "origin"]),
        ("fetch", ["--set-upstream", "origin"]), ("fetch", ["--recurse-submodules", "origin"]),
        ("fetch", ["--stdin"]), ("pull", ["--refmap=x"]), ("push", ["--recurse-submodules=check"]),
        ("checkout", ["--recurse-submodules", "main"]), ("checkout", ["-p"]),
        ("add", ["-p"]), ("add", ["-i"]), ("add", ["-e"]), ("clean", ["-i"]),
        ("commit", ["--interactive"]), ("reset", ["-p"]), ("restore", ["--patch"]),
        ("log", ["--stdin"]), ("log", ["-pw"]), ("diff", ["-Rw"]), ("log", ["--format", "%H"]),
        ("log", ["--all=x"]), ("grep", ["-n5", "x"]), ("status", ["--short=x"]),
        ("describe", ["--dirty", "--output=x"]), ("rev-parse", ["--git-path", "x"]),
        ("rev-parse", ["--git-dir"]), ("stash", ["show", "--output=x"]),
        ("remote", ["set-head", "--upload-pack=x"]), ("remote", ["frobnicate", "x"]),
]  # fmt: skip


def test_unlisted_options_refused(root: Path) -> None:
    for subcommand, args in UNLISTED:
        assert refused(root, subcommand, *args) is ErrorKind.ARGUMENT_NOT_ALLOWED, args


MAGIC = [":(top)file.txt", ":(TOP)file.txt", ":(top,icase)x", ":(icase,top)x",
         ":( top )x", ":/file.txt", ":/", ":!/file.txt", ":^/x", ":!^/x", ":!:/etc/passwd",
         ":(attr:x)y", ":(prefix:0)../x", ":(glob)../*", ":(literal)../x", ":(exclude)/etc",
         ":../x", ":(top", ":(icase)../x", ":(exclude,glob)../../*"]  # fmt: skip


MAGIC_PLACES = [("log", ["--"]), ("diff", []), ("add", []), ("rm", ["--cached"]),
                ("checkout", ["--"]), ("ls-files", []), ("grep", ["-e", "x", "--"]),
                ("status", ["--"]), ("restore", [])]  # fmt: skip


def test_pathspec_magic_confined(root: Path) -> None:
    for pathspec in MAGIC:
        for subcommand, lead in MAGIC_PLACES:
            assert refused(root, subcommand, *lead, pathspec) in REFUSALS, (subcommand, pathspec)


def test_harmless_magic_allowed(root: Path) -> None:
    for spec in (":(exclude)sub", ":!file.txt", ":^file.txt", ":(glob)**/*.txt",
                 ":(icase)FILE.txt", ":(literal)file.txt", ":file.txt", ":!:file.txt"):  # fmt: skip
        assert tier(root, "log", "--", spec) is Tier.READ
        assert tier(root, "add", spec) is Tier.WRITE


REMOTES = ["~/other-repo", "~root/x", "/abs/path", "../other", "./nested", ".",
           "file:///tmp/x", "FILE:///tmp/x", "file://./x", "foo::bar", "evil://x",
           "ssh://-oProxyCommand=touch%20x/y", "-oProxyCommand=x:y", "fd::3", "/"]  # fmt: skip


REMOTE_PLACES: list[Callable[[str], tuple[str, list[str]]]] = [
        lambda r: ("fetch", [r]), lambda r: ("fetch", [r, "main"]),
        lambda r: ("fetch", ["--multiple", "origin", r]), lambda r: ("pull", [r]),
        lambda r: ("push", [r, "main"]), lambda r: ("push", [f"--repo={r}"]),
        lambda r: ("push", ["--repo", r]), lambda r: ("fetch", ["--", r]),
        lambda r: ("remote", ["add", "x", r]), lambda r: ("remote", ["set-url", "origin", r]),
]  # fmt: skip


def test_remotes_are_names_or_network_urls(root: Path) -> None:
    for remote in REMOTES:
        for build in REMOTE_PLACES:
            subcommand, args = build(remote)
            if remote.startswith("-") and remote in args:  # else an option, as git reads it
                k = args.index(remote)
                args = [*args[:k], "--end-of-options", *args[k:]]
            assert refused(root, subcommand, *args) in REFUSALS, args


@pytest.mark.parametrize(
    "remote",
    ["origin", "up-stream.2", "https://example.com/x.git", "http://h/x", "ssh://git@h/x",
     "git://h/x", "git@github.com:owner/repo.git", "host:repo", "git+ssh://h/x"],
)  # fmt: skip
def test_remote_names_and_network_urls_allowed(root: Path, remote: str) -> None:
    assert tier(root, "fetch", remote) is Tier.READ
    assert tier(root, "push", f"--repo={remote}") is Tier.WRITE
    if ":" in remote:
        assert tier(root, "remote", "add", "x", remote) is Tier.WRITE


def test_remote_name_that_is_a_symlink_out_is_refused(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "origin").symlink_to(tmp_path)
    assert refused(root, "fetch", "origin") is ErrorKind.PATH_OUTSIDE_PROJECT


STRATEGIES = [
    ("merge", ["-s", "evil", "x"]), ("merge", ["--strategy=../../bin/sh", "x"]),
    ("merge", ["-sevil", "x"]), ("pull", ["-s", "evil"]), ("rebase", ["--strategy", "x"]),
    ("cherry-pick", ["--strategy=x", "HEAD"]), ("revert", ["--strategy", "x", "HEAD"]),
]  # fmt: skip


def test_unknown_merge_strategies_refused(root: Path) -> None:
    for subcommand, args in STRATEGIES:
        assert refused(root, subcommand, *args) is ErrorKind.ARGUMENT_NOT_ALLOWED, args


FILE_VALUES = [("commit", ["-S", "-F", "/etc/passwd"]), ("commit", ["-aF/etc/passwd"]),
     ("commit", ["-t", "../x"]), ("merge", ["--log", "-F", "/etc/passwd"]),
     ("tag", ["-n", "-F", "/etc/passwd", "v1"]), ("blame", ["-S", "/etc/passwd", "f"]),
     ("blame", ["-C", "--ignore-revs-file", "/etc/passwd", "f"]),
     ("grep", ["-f", "/etc/passwd"]), ("ls-files", ["-X", "../x"]),
     ("log", ["--relative", "-O", "/etc/passwd"]), ("diff", ["-O/etc/passwd"]),
     ("diff", ["--end-of-options", "/etc/passwd"]),
     ("reset", ["--pathspec-from-file=../x"])]  # fmt: skip


def test_file_values_confined(root: Path) -> None:
    for subcommand, args in FILE_VALUES:
        assert refused(root, subcommand, *args) is ErrorKind.PATH_OUTSIDE_PROJECT, args


def test_exact_options_keep_working(root: Path) -> None:
    assert tier(root, "log", "-n5", "--format=%H", "--relative", "--stat", "-M50%") is Tier.READ
    assert tier(root, "log", "--end-of-options", "HEAD") is Tier.READ
    assert tier(root, "log", "-3", "--author", "--output") is Tier.READ  # a value, not an option
    assert tier(root, "grep", "-n", "-5", "-e", "--output", "--", "sub") is Tier.READ
    assert tier(root, "blame", "--ignore-revs-file", "file.txt", "file.txt") is Tier.READ
    assert tier(root, "status", "-uno", "--porcelain=v2") is Tier.READ
    assert tier(root, "commit", "-am", "msg") is Tier.WRITE
    assert tier(root, "merge", "-s", "ort", "-X", "theirs", "x") is Tier.WRITE
