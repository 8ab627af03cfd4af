"""The repository's own config: keys that would run a program are refused, and never run."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from codeward.daemon.git.config_scan import (
    ConfigEntry,
    Places,
    find_unsafe,
    implicit_force_push,
    parse_config_list,
    reads_outside,
    unsafe_key,
)
from codeward.protocol.errors import ErrorKind, ToolError
from tests.git_repos import Approver, commit_all, git, git_home, make_repo, run, write

__all__ = ["git_home"]


@pytest.mark.parametrize(
    "key",
    [
        "core.fsmonitor", "core.pager", "core.editor", "core.sshCommand", "core.askPass",
        "core.gitProxy", "diff.external", "diff.foo.textconv", "diff.foo.command",
        "filter.lfs.clean", "filter.x.smudge", "filter.x.process", "merge.ours.driver",
        "hook.pre-commit.command", "include.path", "includeIf.gitdir:/x/.path",
        "credential.helper", "credential.https://example.com.helper", "sequence.editor",
        "gpg.program", "gpg.ssh.program", "remote.origin.uploadpack",
        "remote.origin.receivepack", "uploadpack.packObjectsHook", "pager.log",
        "interactive.diffFilter", "web.browser", "difftool.x.cmd", "trailer.sign.command",
    ],
)  # fmt: skip
def test_program_keys_are_unsafe(key: str) -> None:
    assert unsafe_key(key, "/tmp/canary.sh")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("user.name", "x"), ("core.autocrlf", "true"), ("core.hooksPath", "/tmp/hooks"),
        ("remote.origin.url", "https://example.com/x.git"), ("diff.renames", "true"),
        ("core.fsmonitor", "false"), ("branch.main.remote", "origin"), ("alias.st", "status"),
        ("filter.x.required", "true"), ("protocol.ext.allow", "never"),
    ],
)  # fmt: skip
def test_ordinary_keys_are_safe(key: str, value: str) -> None:
    assert not unsafe_key(key, value)


def test_values_that_run_programs() -> None:
    assert unsafe_key("remote.origin.url", "ext::sh -c touch% /tmp/x")
    assert unsafe_key("url.ext::sh.insteadOf", "fd::3")
    assert unsafe_key("submodule.x.update", "!sh -c evil")
    assert not unsafe_key("submodule.x.update", "rebase")
    assert unsafe_key("protocol.ext.allow", "always")
    assert unsafe_key("core.fsmonitor", None)  # a bare key is `true`: the builtin daemon


def test_parse_and_scopes() -> None:
    data = (
        b"global\x00core.pager\nless\x00local\x00user.name\nA\x00"
        b"local\x00core.bare\x00worktree\x00diff.external\n/x\x00"
    )
    entries = parse_config_list(data)
    assert entries == [
        ConfigEntry("global", "core.pager", "less"),
        ConfigEntry("local", "user.name", "A"),
        ConfigEntry("local", "core.bare", None),
        ConfigEntry("worktree", "diff.external", "/x"),
    ]
    # the user's global pager is trusted; the worktree scope is the repository's own
    assert find_unsafe(entries) == ["diff.external"]
    sub = parse_config_list(b"core.pager\nx\x00", scope="submodule")
    assert find_unsafe(sub) == ["core.pager"]


def test_implicit_force_push() -> None:
    local = "local"
    assert implicit_force_push([ConfigEntry(local, "remote.o.mirror", "true")]) == "remote.o.mirror"
    assert implicit_force_push([ConfigEntry(local, "remote.o.push", "+refs/heads/*")])
    assert implicit_force_push([ConfigEntry(local, "remote.o.push", "refs/heads/*")]) is None
    assert implicit_force_push([ConfigEntry("global", "remote.o.mirror", "true")]) is None


# --- canaries: real repositories whose config would run a script ------------------------


@pytest.fixture
def canary(tmp_path: Path) -> tuple[Path, Path]:
    """A script that leaves a marker file when it runs, and that marker's path."""
    marker = tmp_path / "canary-ran"
    script = tmp_path / "canary.sh"
    script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, marker


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "one\n")
    write(root, ".gitattributes", "*.txt diff=cw filter=cw\n")
    commit_all(root, "initial")
    write(root, "a.txt", "two\n")
    return root


# key, how to set it (value template with {script}), the git command that would trigger it,
# and whether plain git 2.39 really runs it (the sanity check that the canary is armed)
CASES = [
    ("core.fsmonitor", "{script}", ["status"], True),
    ("core.pager", "{script}", ["log"], False),  # git pages only on a terminal
    ("diff.external", "{script}", ["diff"], True),
    ("diff.cw.textconv", "{script}", ["diff"], True),
    ("filter.cw.clean", "{script}", ["diff"], True),
    ("core.sshCommand", "{script}", ["fetch", "ssh://example.invalid/x"], True),
    ("hook.pre-commit.command", "{script}", ["commit", "-qam", "x"], False),
]


@pytest.mark.parametrize(("key", "value", "trigger", "armed"), CASES)
async def test_canary_never_runs(
    repo: Path, canary: tuple[Path, Path], key: str, value: str, trigger: list[str], armed: bool
) -> None:
    script, marker = canary
    git(repo, "config", key, value.format(script=script))
    if armed:  # plain git does run it: the repository is a real threat
        git(repo, *trigger, check=False)
        assert marker.exists()
        marker.unlink()
    subcommand, *args = trigger
    with pytest.raises(ToolError) as info:
        await run(repo, subcommand, args, approve=Approver(True))
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert key.lower() in info.value.message  # git prints section and name in lower case
    assert info.value.details["keys"] == [key.lower()]
    assert not marker.exists()


async def test_include_path_refused_and_not_followed(
    repo: Path, canary: tuple[Path, Path], tmp_path: Path
) -> None:
    script, marker = canary
    included = tmp_path / "included.cfg"
    included.write_text(f"[core]\n\tfsmonitor = {script}\n")
    git(repo, "config", "include.path", str(included))
    git(repo, "status", check=False)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert "include.path" in info.value.message
    assert str(tmp_path) not in info.value.message
    assert not marker.exists()


async def test_submodule_config_is_scanned(repo: Path, canary: tuple[Path, Path]) -> None:
    script, marker = canary
    modules = repo / ".git" / "modules" / "sub"
    modules.mkdir(parents=True)
    (modules / "config").write_text(f"[core]\n\tfsmonitor = {script}\n")
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert not marker.exists()


async def test_pre_commit_hook_does_not_run(repo: Path, canary: tuple[Path, Path]) -> None:
    script, marker = canary
    os.replace(repo / ".gitattributes", repo / "attrs.txt")  # no drivers needed here
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(script.read_text())
    hook.chmod(0o755)
    before = git(repo, "rev-parse", "HEAD").strip()
    result = await run(repo, "commit", ["-a", "-m", "hooked?"], approve=Approver(True))
    assert result["exit_code"] == 0
    assert git(repo, "rev-parse", "HEAD~1").strip() == before
    assert not marker.exists()
    git(repo, "commit", "--allow-empty", "-m", "plain git runs hooks", check=False)
    assert marker.exists()  # the hook was armed all along


async def test_global_config_is_trusted(repo: Path, git_home: Path) -> None:
    with (git_home / ".gitconfig").open("a") as f:
        f.write("[core]\n\tpager = less\n[alias]\n\tst = status\n")
    result = await run(repo, "status")
    assert result["exit_code"] == 0


async def test_a_config_change_after_a_safe_call_is_seen(
    repo: Path, canary: tuple[Path, Path]
) -> None:
    script, marker = canary
    assert (await run(repo, "status"))["exit_code"] == 0
    git(repo, "config", "core.fsmonitor", str(script))
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    git(repo, "config", "--unset", "core.fsmonitor")
    (repo / ".git" / "config.worktree").write_text(f"[diff]\n\texternal = {script}\n")
    git(repo, "config", "extensions.worktreeConfig", "true")
    with pytest.raises(ToolError) as info:
        await run(repo, "diff")
    assert info.value.details["keys"] == ["diff.external"]
    assert not marker.exists()


async def test_a_nested_repository_appearing_is_seen(repo: Path, canary: tuple[Path, Path]) -> None:
    script, marker = canary
    root = repo / "inner"
    root.mkdir()
    write(root, "x.txt", "x\n")
    assert (await run(root, "status"))["exit_code"] == 0  # the outer repository, remembered
    git(root, "init", "-q")
    git(root, "config", "core.fsmonitor", str(script))
    with pytest.raises(ToolError) as info:
        await run(root, "status")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert not marker.exists()


# --- issue 14: nested repositories, and keys that read files outside the project ---------


def nest(repo: Path, name: str = "nested") -> Path:
    """A repository with a commit inside `repo`, added to it as an embedded gitlink (what
    `git add` of a cloned directory does): git enters it on `status`."""
    inner = make_repo(repo / name)
    write(inner, "n.txt", "inner\n")
    write(inner, ".gitattributes", "*.txt filter=cw\n")
    commit_all(inner, "inner")
    git(repo, "add", name, check=False)
    git(repo, "commit", "-qm", f"embed {name}")
    return inner


def arm_nested(inner: Path, key: str, script: Path) -> None:
    git(inner, "config", key, str(script))
    os.utime(inner / "n.txt", (2_000_000_000, 2_000_000_000))  # git must re-read it


# Keys set in the nested repository's own .git/config, and whether plain git runs them on
# the outer repository's `git status` (the canary is armed).
NESTED_CASES = [
    ("filter.cw.clean", True),
    ("core.fsmonitor", True),
    ("filter.cw.process", False),
    ("diff.external", False),
    ("core.sshCommand", False),
    ("include.path", False),
    ("core.pager", False),
]


@pytest.mark.parametrize(("key", "armed"), NESTED_CASES)
async def test_nested_repository_config_is_scanned(
    repo: Path, canary: tuple[Path, Path], key: str, armed: bool
) -> None:
    script, marker = canary
    inner = nest(repo)
    arm_nested(inner, key, script)
    if armed:  # plain git does run the nested repository's program
        git(repo, "status", check=False)
        assert marker.exists()
        marker.unlink()
        os.utime(inner / "n.txt", (2_000_000_001, 2_000_000_001))
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert info.value.details["keys"] == [key.lower()]
    assert key.lower() in info.value.message and "nested/" in info.value.message
    assert str(repo) not in info.value.message
    assert not marker.exists()


async def test_nested_repositories_inside_nested_ones(
    repo: Path, canary: tuple[Path, Path]
) -> None:
    script, marker = canary
    middle = nest(repo, "middle")
    inner = nest(middle, "deep")
    git(repo, "add", "middle")
    git(repo, "commit", "-qm", "middle moved")
    arm_nested(inner, "filter.cw.clean", script)
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.details["keys"] == ["filter.cw.clean"]
    assert "middle/deep/" in info.value.message
    assert not marker.exists()


async def test_nested_gitfile_to_an_outside_git_dir_is_scanned(
    repo: Path, canary: tuple[Path, Path], tmp_path: Path
) -> None:
    script, marker = canary
    inner = nest(repo)
    elsewhere = tmp_path / "elsewhere.git"
    os.replace(inner / ".git", elsewhere)
    (inner / ".git").write_text(f"gitdir: {elsewhere}\n")
    git(elsewhere, "config", "core.worktree", str(inner))
    arm_nested(inner, "filter.cw.clean", script)
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    # git would read (and run) another repository: refused before its config matters
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert info.value.details["file"] == "nested/.git"
    assert str(tmp_path) not in info.value.message
    assert not marker.exists()


async def test_a_nested_repository_added_later_is_seen(
    repo: Path, canary: tuple[Path, Path]
) -> None:
    script, marker = canary
    inner = make_repo(repo / "later")
    write(inner, "n.txt", "inner\n")
    write(inner, ".gitattributes", "*.txt filter=cw\n")
    commit_all(inner, "inner")
    arm_nested(inner, "filter.cw.clean", script)
    # untracked, git does not enter it (plain git runs nothing either)
    assert (await run(repo, "status"))["exit_code"] == 0
    git(repo, "status", check=False)
    assert not marker.exists()
    git(repo, "add", "later", check=False)  # now a gitlink: the index changed
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert info.value.details["keys"] == ["filter.cw.clean"]
    assert not marker.exists()


async def test_a_safe_nested_repository_is_fine(repo: Path) -> None:
    inner = nest(repo)
    git(inner, "config", "blame.ignoreRevsFile", ".git-blame-ignore-revs")
    result = await run(repo, "status", ["--porcelain"])
    assert result["exit_code"] == 0


# Keys whose value is a file git reads; set in the repository's own config to a file
# outside the project, in several spellings.
PATH_KEYS = [
    "core.worktree", "blame.ignoreRevsFile", "core.excludesFile", "core.attributesFile",
    "commit.template", "mailmap.file", "diff.orderFile", "gpg.ssh.allowedSignersFile",
    "gpg.ssh.revocationFile", "fsck.skipList", "fetch.fsck.skipList", "init.templateDir",
    "http.sslCert", "http.sslKey", "http.sslCAInfo", "http.cookieFile",
    "http.https://example.com.sslCert", "http.proxySSLKey",
]  # fmt: skip


def test_path_keys_outside_the_project(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".git").mkdir(parents=True)
    places = Places(root=root, top=root, git_dir=root / ".git", worktree_limit=root)
    outside = ["/etc/passwd", "../secret", "~/secret", "%(prefix)/etc", "sub/../../x",
               str(tmp_path)]  # fmt: skip
    inside = [".git-blame-ignore-revs", "sub/file", str(root / "file")]
    for key in PATH_KEYS:
        for value in outside:
            if key == "core.worktree" and not value.startswith(("/", "~", "%")):
                value = f"../{value}"  # relative to .git
            entry = ConfigEntry("local", key, value)
            assert reads_outside(entry, places), (key, value)
            assert find_unsafe([entry], places) == [key]
        for value in inside:
            value = f"../{value}" if key == "core.worktree" and "/" not in value[:1] else value
            assert not reads_outside(ConfigEntry("local", key, value), places), (key, value)
    assert not reads_outside(ConfigEntry("local", "user.name", "/etc/passwd"), places)
    assert find_unsafe([ConfigEntry("global", "core.excludesFile", "/x")], places) == []
    # a submodule's core.worktree is relative to its own git dir
    module = ConfigEntry("submodule", "core.worktree", "../../../sub",
                         source=root / ".git" / "modules" / "sub" / "config")  # fmt: skip
    assert not reads_outside(module, places)


async def test_core_worktree_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    git(repo, "config", "core.worktree", str(outside))
    assert "secret.txt" in git(repo, "status", "--short", check=False)  # plain git reads it
    with pytest.raises(ToolError) as info:
        await run(repo, "diff")
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert info.value.details["keys"] == ["core.worktree"]
    assert "outside the project" in info.value.message
    assert str(tmp_path) not in info.value.message


@pytest.mark.parametrize("spelling", ["absolute", "relative", "home"])
async def test_blame_ignore_revs_file_outside_is_refused(
    repo: Path, tmp_path: Path, git_home: Path, spelling: str
) -> None:
    secret = git_home / "secret.txt"
    secret.write_text("SECRET-FIRST-LINE\n")
    value = {"absolute": str(secret), "relative": os.path.relpath(secret, repo),
             "home": "~/secret.txt"}[spelling]  # fmt: skip
    git(repo, "config", "blame.ignoreRevsFile", value)
    leaked = subprocess.run(["git", "blame", "a.txt"], cwd=repo, capture_output=True, text=True)
    assert "SECRET-FIRST-LINE" in leaked.stderr  # plain git leaks the file's first line
    with pytest.raises(ToolError) as info:
        await run(repo, "blame", ["a.txt"])
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert info.value.details["keys"] == ["blame.ignorerevsfile"]
    assert "SECRET" not in info.value.message


async def test_path_keys_inside_the_project_are_fine(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    write(repo, ".git-blame-ignore-revs", f"{head}\n")
    git(repo, "config", "blame.ignoreRevsFile", ".git-blame-ignore-revs")
    git(repo, "config", "core.excludesFile", ".my-ignore")
    result = await run(repo, "blame", ["a.txt"])
    assert result["exit_code"] == 0
