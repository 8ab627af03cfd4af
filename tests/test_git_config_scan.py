"""The repository's own config: keys that would run a program are refused, and never run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codeward.daemon.git.config_scan import (
    ConfigEntry,
    find_unsafe,
    implicit_force_push,
    parse_config_list,
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
