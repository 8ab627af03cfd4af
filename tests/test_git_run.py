"""run_git against real repositories: tiers, approval, parsing, errors, limits, changed files."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import GitConfig, PolicyConfig
from codeward.daemon.git import run_git, runner
from codeward.daemon.process_groups import group_members
from codeward.protocol.errors import ErrorKind, ToolError
from tests.git_repos import (
    Approver,
    Changes,
    commit_all,
    git,
    git_daemon,
    git_home,
    make_repo,
    private_home,
    run,
    write,
)  # fmt: skip

__all__ = ["git_home"]
CONFIRM = PolicyConfig()  # git_write and git_destructive: confirm


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "one\n")
    write(root, "dir/b c.txt", "two\n")
    commit_all(root, "first")
    write(root, "a.txt", "one\nmore\n")
    commit_all(root, "second\n\nwith a body")
    return root


@pytest.fixture
def remote(repo: Path, tmp_path: Path) -> Iterator[Path]:
    """A bare repository served by `git daemon` as the repository's origin (a network
    remote: codeward refuses local ones)."""
    served = tmp_path / "served"
    bare = served / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with git_daemon(served) as url:
        git(repo, "remote", "add", "origin", url + "remote.git")
        git(repo, "push", "-q", "-u", "origin", "main")
        yield bare


def fail_kind(excinfo: pytest.ExceptionInfo[ToolError]) -> ErrorKind:
    return excinfo.value.kind


async def test_runs_status(repo: Path) -> None:
    write(repo, "a.txt", "changed\n")
    write(repo, "new file.txt", "n\n")
    result = await run(repo, "status")
    assert result["exit_code"] == 0
    assert result["output"] == git(repo, "status")
    assert result["truncated"] is False
    parsed = result["parsed"]
    assert parsed["branch"]["head"] == "main"
    assert parsed["unstaged"] == [{"path": "a.txt", "status": "modified"}]
    assert parsed["untracked"] == ["new file.txt"]


async def test_status_in_machine_format_is_run_once_and_parsed(repo: Path) -> None:
    write(repo, "a.txt", "changed\n")
    result = await run(repo, "status", ["--porcelain=v2", "-z", "--branch"])
    assert result["output"].startswith("# branch.oid ")
    assert result["parsed"]["unstaged"][0]["path"] == "a.txt"


async def test_status_pathspec_filters_parsed(repo: Path) -> None:
    write(repo, "a.txt", "changed\n")
    write(repo, "dir/b c.txt", "changed\n")
    result = await run(repo, "status", ["--short", "--", "dir"])
    assert result["output"] == ' M "dir/b c.txt"\n' or result["output"] == " M dir/b c.txt\n"
    assert [e["path"] for e in result["parsed"]["unstaged"]] == ["dir/b c.txt"]


async def test_runs_diff(repo: Path) -> None:
    write(repo, "a.txt", "one\nchanged\n")
    result = await run(repo, "diff", ["--stat"])
    assert result["output"] == git(repo, "diff", "--stat")
    (file,) = result["parsed"]["files"]
    assert file["path"] == "a.txt"
    assert (file["additions"], file["deletions"]) == (1, 1)
    assert file["hunks"][0]["old_start"] == 1
    cached = await run(repo, "diff", ["--cached"])
    assert cached["output"] == "" and cached["parsed"] == {"files": []}


async def test_runs_log_with_format_options(repo: Path) -> None:
    result = await run(repo, "log", ["--oneline", "-n", "1"])
    assert result["output"] == git(repo, "log", "--oneline", "-n", "1")
    (commit,) = result["parsed"]["commits"]
    assert commit["subject"] == "second"
    assert commit["body"] == "with a body\n"
    fmt = await run(repo, "log", ["--format=%an|%s", "--reverse"])
    assert fmt["output"] == "Test User|first\nTest User|second\n"
    assert [c["subject"] for c in fmt["parsed"]["commits"]] == ["first", "second"]
    pathed = await run(repo, "log", ["--", "dir"])
    assert [c["subject"] for c in pathed["parsed"]["commits"]] == ["first"]


async def test_runs_show(repo: Path) -> None:
    result = await run(repo, "show", ["--stat", "HEAD"])
    assert result["output"] == git(repo, "show", "--stat", "HEAD")
    assert result["parsed"]["commits"][0]["subject"] == "second"
    assert [f["path"] for f in result["parsed"]["files"]] == ["a.txt"]


async def test_runs_branch_listing(repo: Path, remote: Path) -> None:
    git(repo, "branch", "feature")
    result = await run(repo, "branch", ["-a"])
    assert result["output"] == git(repo, "branch", "-a")
    parsed = result["parsed"]
    assert parsed["current"] == "main"
    assert {b["name"] for b in parsed["local"]} == {"main", "feature"}
    assert [b["upstream"] for b in parsed["local"] if b["name"] == "main"] == ["origin/main"]
    assert [b["name"] for b in parsed["remote"]] == ["origin/main"]


async def test_tags_remotes_and_stashes(repo: Path, remote: Path) -> None:
    git(repo, "tag", "v1")
    tags = await run(repo, "tag")
    assert tags["output"] == "v1\n"
    assert tags["parsed"]["tags"][0]["name"] == "v1"
    remotes = await run(repo, "remote", ["-v"])
    assert (
        remotes["parsed"]["remotes"][0]["fetch_url"]
        == git(repo, "remote", "get-url", "origin").strip()
    )
    write(repo, "a.txt", "wip\n")
    git(repo, "stash", "-q")
    stashes = await run(repo, "stash", ["list"])
    assert stashes["parsed"]["stashes"][0]["ref"] == "stash@{0}"
    blame = await run(repo, "blame", ["a.txt"])
    assert blame["parsed"] is None and "more" in blame["output"]


async def test_runs_in_the_project_directory(repo: Path) -> None:
    root = repo / "dir"
    write(repo, "a.txt", "outside the root\n")
    write(root, "b c.txt", "inside\n")
    result = await run(root, "status", ["--short"])
    assert result["output"] == git(root, "status", "--short")
    files = await run(root, "ls-files")
    assert files["output"] == "b c.txt\n"
    top = await run(root, "rev-parse", ["--show-prefix"])
    assert top["output"] == "dir/\n"
    with pytest.raises(ToolError) as info:
        await run(root, "diff", ["--", "../a.txt"])
    assert fail_kind(info) is ErrorKind.PATH_OUTSIDE_PROJECT


async def test_blocks_force_push_by_default(repo: Path, remote: Path) -> None:
    before = git(remote, "rev-parse", "main").strip()
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    write(repo, "a.txt", "rewritten\n")
    commit_all(repo, "rewritten")
    approver = Approver(True)
    for args in (["--force"], ["origin", "+main"], ["--force-with-lease"]):
        with pytest.raises(ToolError) as info:
            await run(repo, "push", args, approve=approver, policy=CONFIRM)
        assert fail_kind(info) is ErrorKind.BLOCKED_DESTRUCTIVE
        assert "allow_destructive" in info.value.message
    assert approver.asked == []
    assert git(remote, "rev-parse", "main").strip() == before
    with pytest.raises(ToolError) as info:  # a plain push is refused by git itself
        await run(repo, "push", approve=approver, policy=CONFIRM)
    assert fail_kind(info) is ErrorKind.GIT_FAILED
    assert "rejected" in info.value.details["stderr"]


async def test_allows_force_push_with_allow_destructive_and_approval(
    repo: Path, remote: Path
) -> None:
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    write(repo, "a.txt", "rewritten\n")
    head = commit_all(repo, "rewritten")
    approver = Approver(True)
    result = await run(
        repo, "push", ["--force", "origin", "main"], allow_destructive=True, approve=approver,
        policy=CONFIRM,
    )  # fmt: skip
    assert result["exit_code"] == 0
    assert git(remote, "rev-parse", "main").strip() == head
    ((summary, argv),) = approver.asked
    assert argv == ["git", "push", "--force", "origin", "main"]
    assert "force push" in summary and "destructive" in summary


async def test_force_push_needs_approval_even_when_allowed(repo: Path, remote: Path) -> None:
    before = git(remote, "rev-parse", "main").strip()
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    for answer, kind in ((None, ErrorKind.CONFIRMATION_REQUIRED),
                         (False, ErrorKind.CONFIRMATION_DENIED)):  # fmt: skip
        with pytest.raises(ToolError) as info:
            await run(repo, "push", ["-f"], allow_destructive=True, approve=Approver(answer),
                      policy=CONFIRM)  # fmt: skip
        assert fail_kind(info) is kind
    deny = PolicyConfig(git_destructive="deny")
    with pytest.raises(ToolError) as info:
        await run(repo, "push", ["-f"], allow_destructive=True, approve=Approver(True),
                  policy=deny)  # fmt: skip
    assert fail_kind(info) is ErrorKind.BLOCKED_DESTRUCTIVE
    assert git(remote, "rev-parse", "main").strip() == before


async def test_repository_config_that_makes_push_a_force_push(repo: Path, remote: Path) -> None:
    git(repo, "config", "remote.origin.mirror", "true")
    with pytest.raises(ToolError) as info:
        await run(repo, "push", ["origin"], approve=Approver(True), policy=CONFIRM)
    assert fail_kind(info) is ErrorKind.BLOCKED_DESTRUCTIVE
    assert "remote.origin.mirror" in info.value.message


async def test_repository_config_that_makes_fetch_write_local_refs(
    repo: Path, remote: Path
) -> None:
    git(remote, "tag", "v9")
    main = git(repo, "rev-parse", "main").strip()
    cases = [("+refs/heads/*:refs/heads/*", ErrorKind.BLOCKED_DESTRUCTIVE),
             ("refs/tags/*:refs/tags/*", ErrorKind.CONFIRMATION_DENIED)]  # fmt: skip
    for refspec, kind in cases:
        git(repo, "config", "--replace-all", "remote.origin.fetch", refspec)
        for args in ([], ["origin"], ["origin", "main"]):
            approver = Approver(False)
            with pytest.raises(ToolError) as info:
                await run(repo, "fetch", args, approve=approver, policy=CONFIRM)
            assert fail_kind(info) is kind, (refspec, args)
            reason = (
                info.value.message
                if kind is ErrorKind.BLOCKED_DESTRUCTIVE
                else (approver.asked[0][0])
            )
            assert "remote.origin.fetch" in reason
    assert git(repo, "tag") == "" and git(repo, "rev-parse", "main").strip() == main
    git(repo, "config", "--replace-all", "remote.origin.fetch",
        "+refs/heads/*:refs/remotes/origin/*")  # fmt: skip
    assert (await run(repo, "fetch", ["origin"], policy=CONFIRM))["exit_code"] == 0


async def test_blocks_reset_hard_by_default(repo: Path) -> None:
    write(repo, "a.txt", "precious work\n")
    with pytest.raises(ToolError) as info:
        await run(repo, "reset", ["--hard"], approve=Approver(True), policy=CONFIRM)
    assert fail_kind(info) is ErrorKind.BLOCKED_DESTRUCTIVE
    assert (repo / "a.txt").read_text() == "precious work\n"
    changes = Changes()
    result = await run(repo, "reset", ["--hard"], allow_destructive=True, changes=changes)
    assert result["exit_code"] == 0
    assert (repo / "a.txt").read_text() == "one\nmore\n"
    assert changes.calls == [[repo / "a.txt"]]


async def test_approved_commit_lands(repo: Path) -> None:
    write(repo, "a.txt", "committed\n")
    approver = Approver(True)
    result = await run(repo, "commit", ["-a", "-m", "via codeward"], approve=approver,
                       policy=CONFIRM)  # fmt: skip
    assert result["exit_code"] == 0
    assert git(repo, "log", "-1", "--format=%s").strip() == "via codeward"
    ((summary, argv),) = approver.asked
    assert summary.startswith("git commit -a -m 'via codeward' (write:")
    assert argv == ["git", "commit", "-a", "-m", "via codeward"]


async def test_confirmation_required_when_client_cannot_confirm(repo: Path) -> None:
    write(repo, "a.txt", "staged?\n")
    with pytest.raises(ToolError) as info:
        await run(repo, "add", ["a.txt"], approve=Approver(None), policy=CONFIRM)
    assert fail_kind(info) is ErrorKind.CONFIRMATION_REQUIRED
    assert 'git_write = "allow"' in info.value.message
    assert git(repo, "diff", "--cached") == ""


async def test_denied_confirmation_changes_nothing(repo: Path) -> None:
    write(repo, "a.txt", "not to be committed\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    status = git(repo, "status", "--porcelain=v2")
    changes = Changes()
    with pytest.raises(ToolError) as info:
        await run(repo, "commit", ["-a", "-m", "no"], approve=Approver(False), policy=CONFIRM,
                  changes=changes)  # fmt: skip
    assert fail_kind(info) is ErrorKind.CONFIRMATION_DENIED
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "status", "--porcelain=v2") == status
    assert changes.calls == []


async def test_policy_deny_for_writes(repo: Path) -> None:
    with pytest.raises(ToolError) as info:
        await run(repo, "branch", ["new"], policy=PolicyConfig(git_write="deny"),
                  approve=Approver(True))  # fmt: skip
    assert fail_kind(info) is ErrorKind.SUBCOMMAND_NOT_ALLOWED
    assert "new" not in git(repo, "branch")


async def test_reads_need_no_approval(repo: Path) -> None:
    approver = Approver(False)
    await run(repo, "log", policy=PolicyConfig(git_write="deny", git_destructive="deny"),
              approve=approver)  # fmt: skip
    assert approver.asked == []


async def test_files_changed_after_checkout(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "only on other.txt", "o\n")
    write(repo, "dir/b c.txt", "different\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    changes = Changes()
    await run(repo, "checkout", ["other"], changes=changes)
    assert changes.calls == [[repo / "dir/b c.txt", repo / "only on other.txt"]]
    changes = Changes()
    await run(repo, "commit", ["--allow-empty", "-m", "empty"], changes=changes)
    assert changes.calls == []  # commit is not a work-tree write


async def test_files_changed_reported_even_when_git_fails(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "a.txt", "theirs\n")
    commit_all(repo, "theirs")
    git(repo, "checkout", "-q", "main")
    write(repo, "a.txt", "ours\n")
    write(repo, "added.txt", "new\n")
    commit_all(repo, "ours")
    changes = Changes()
    with pytest.raises(ToolError) as info:
        await run(repo, "merge", ["other"], changes=changes)
    assert fail_kind(info) is ErrorKind.GIT_FAILED
    assert "CONFLICT" in info.value.details["output"]
    assert changes.calls == [[repo / "a.txt"]]


async def test_handles_git_errors(repo: Path) -> None:
    with pytest.raises(ToolError) as info:
        await run(repo, "log", ["no-such-branch"])
    error = info.value
    assert error.kind is ErrorKind.GIT_FAILED
    assert error.details["exit_code"] == 128
    assert "unknown revision" in error.details["stderr"]
    assert "exit code 128" in error.message and "no-such-branch" in error.message
    with pytest.raises(ToolError) as info:
        await run(repo, "show", ["HEAD:missing.txt"])
    assert info.value.kind is ErrorKind.GIT_FAILED


async def test_parse_runs_pass_the_policy_too(repo: Path) -> None:
    """The runs behind `parsed` drop display options; a dropped option's value must not
    become an option of its own there (`--src-prefix --output=F` wrote F)."""
    for subcommand in ("log", "show", "diff"):
        for option in ("--src-prefix", "--dst-prefix", "--line-prefix", "--stat-width",
                       "--stat-name-width", "--stat-count", "--stat-graph-width"):  # fmt: skip
            out = repo / f"owned{option}.txt"
            try:
                result = await run(repo, subcommand, [option, f"--output={out.name}"])
            except ToolError as error:
                assert error.kind is ErrorKind.GIT_FAILED
            else:
                assert result["parsed"] is None
            assert not out.exists(), (subcommand, option)


@pytest.mark.parametrize("name", ["nowhere.git", "with space/nowhere.git", "it's.git"])
async def test_error_messages_hide_paths_outside_the_project(
    repo: Path, tmp_path: Path, name: str
) -> None:
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / name))
    plain = subprocess.run(["git", "checkout", "other"], cwd=repo, capture_output=True,
                           text=True)  # fmt: skip
    assert str(tmp_path) in plain.stderr  # what git itself says: the other work tree's path
    with pytest.raises(ToolError) as info:
        await run(repo, "checkout", ["other"])
    assert info.value.kind is ErrorKind.GIT_FAILED
    shown = [info.value.message, info.value.details["stderr"], info.value.details["output"]]
    for text in shown:
        assert str(tmp_path) not in text and "nowhere" not in text
    assert "<path>" in info.value.details["stderr"]


async def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ToolError) as info:
        await run(Path(os.path.realpath(plain)), "status")
    assert info.value.kind is ErrorKind.NOT_A_GIT_REPOSITORY


async def test_argument_rules_apply(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await run(repo, "diff", [f"--output={tmp_path / 'owned'}"])
    assert info.value.kind is ErrorKind.ARGUMENT_NOT_ALLOWED
    assert not (tmp_path / "owned").exists()
    with pytest.raises(ToolError) as info:
        await run(repo, "config", ["core.pager", "sh"])
    assert info.value.kind is ErrorKind.SUBCOMMAND_NOT_ALLOWED
    with pytest.raises(ToolError) as info:
        await run_git(
            repo, "status", "not a list",  # type: ignore[arg-type]
            allow_destructive=False, policy=PolicyConfig(), limits=GitConfig(),
            approve=Approver(None), on_files_changed=Changes(),
        )  # fmt: skip
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


async def test_output_cap(repo: Path) -> None:
    for i in range(30):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit number {i}")
    result = await run(repo, "log", limits=GitConfig(output_bytes=200))
    assert result["truncated"] is True
    assert len(result["output"].encode()) == 200
    assert git(repo, "log").startswith(result["output"])


async def test_hardened_environment(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.pager'='sh'")
    env = runner.git_env(read_only=True)
    assert not {"GIT_DIR", "GIT_CONFIG_PARAMETERS"} & env.keys()
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_EDITOR"] == "true"
    assert env["GIT_PAGER"] == "cat" and env["GIT_NO_LAZY_FETCH"] == "1"
    argv = runner.git_argv("git", repo, "diff", ["HEAD"])
    assert argv[:3] == ["git", "-C", str(repo)]  # git needs no working directory of ours
    assert argv[-3:] == ["--no-ext-diff", "--no-textconv", "HEAD"]
    assert "core.hooksPath=/dev/null" in argv and "core.fsmonitor=false" in argv
    result = await run(repo, "status")  # GIT_DIR from our environment is not inherited
    assert result["exit_code"] == 0


def test_the_environment_follows_the_daemons(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment built once per set of the passed variables' values: a change to any
    of them shows in the next one, and each call gets a dict of its own."""
    monkeypatch.delenv("TZ", raising=False)
    first = runner.git_env(read_only=True)
    assert "TZ" not in first and first["GIT_OPTIONAL_LOCKS"] == "0"
    first["TZ"] = "changed by its caller"
    monkeypatch.setenv("TZ", "Europe/Paris")
    monkeypatch.setenv("HOME", "/home/elsewhere")
    env = runner.git_env(read_only=False)
    assert env["TZ"] == "Europe/Paris" and env["HOME"] == "/home/elsewhere"
    assert "GIT_OPTIONAL_LOCKS" not in env
    monkeypatch.delenv("TZ")
    assert "TZ" not in runner.git_env(read_only=True)
    assert runner.git_env(read_only=True, base={"PATH": "/usr/bin", "TZ": "UTC"})["TZ"] == "UTC"


# --- timeout and cancellation: the whole process group goes ------------------------------


def slow_signer(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "slow-gpg.sh"
    script.write_text(f"#!/bin/sh\n{body}\nexec sleep 60\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


async def test_timeout_kills_and_reports_a_left_lock(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    # The signer stops git (so SIGTERM cannot make it clean up) and then hangs.
    script = slow_signer(tmp_path, f"echo $$ > '{pid_file}'\nkill -STOP $PPID")
    for name, value in private_home(tmp_path / "home2", f"[gpg]\n\tprogram = {script}\n").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(runner, "KILL_GRACE", 0.2)
    write(repo, "a.txt", "signed?\n")
    with pytest.raises(ToolError) as info:
        await run(repo, "commit", ["-S", "-a", "-m", "signed"], limits=GitConfig(timeout=1.0))
    assert info.value.kind is ErrorKind.TIMEOUT
    assert info.value.details["index_lock"] == ".git/index.lock"
    assert "remove that lock yourself" in info.value.message
    assert (repo / ".git" / "index.lock").exists()  # never removed silently
    assert dead(int(pid_file.read_text()))


async def test_timeout_without_lock(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = slow_signer(tmp_path, "")
    for name, value in private_home(tmp_path / "home2", f"[gpg]\n\tprogram = {script}\n").items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ToolError) as info:
        await run(repo, "commit", ["-S", "--allow-empty", "-m", "x"],
                  limits=GitConfig(timeout=0.5))  # fmt: skip
    assert info.value.kind is ErrorKind.TIMEOUT
    assert "index_lock" not in info.value.details
    assert not (repo / ".git" / "index.lock").exists()  # git cleaned up on SIGTERM


async def test_cancel_kills_the_process_group_of_a_read(repo: Path) -> None:
    fifo = repo / "patterns.fifo"
    os.mkfifo(fifo)

    def open_writer() -> int:
        return os.open(fifo, os.O_WRONLY)  # blocks until git opens the fifo to read

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, repo, "ls-files", ["--others", f"--exclude-from={fifo.name}"])
        fd = await trio.to_thread.run_sync(open_writer)
        nursery.cancel_scope.cancel()
    try:
        with pytest.raises(BrokenPipeError):  # the reader, git, was killed
            os.write(fd, b"*.x\n")
    finally:
        os.close(fd)


async def test_a_finished_run_leaves_nothing_of_its_group(tmp_path: Path) -> None:
    # The leader exits at once; a member it left behind (pipes closed) is killed and awaited.
    done = await runner.run_process(
        ["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $$ $!"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=10.0,
        output_bytes=1000,
    )
    leader, member = map(int, done.stdout.split())
    assert done.exit_code == 0 and not done.timed_out
    assert group_members(leader) == [] and dead(member)


async def test_stderr_is_kept_up_to_its_cap_and_the_process_runs_on(tmp_path: Path) -> None:
    # Past the cap its writes fail as on a full disk; what it does next is its business.
    script = f"head -c {runner.STDERR_BYTES + 5000} /dev/zero | tr '\\0' x >&2; echo ok $?"
    done = await runner.run_process(
        ["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=10.0,
        output_bytes=1000,
    )  # fmt: skip
    assert done.exit_code == 0 and done.stdout.startswith(b"ok ") and done.stdout != b"ok 0\n"
    assert done.stderr == b"x" * runner.STDERR_BYTES


async def test_stdin_is_given_and_stdout_and_stderr_kept_apart(tmp_path: Path) -> None:
    text = b"line\n" * 50_000  # more than a pipe holds: written as the process reads
    done = await runner.run_process(
        ["sh", "-c", "wc -l; echo said >&2"], cwd=tmp_path, env=dict(os.environ),
        timeout=10.0, output_bytes=1000, stdin=text,
    )  # fmt: skip
    assert (done.exit_code, done.stdout.strip(), done.stderr) == (0, b"50000", b"said\n")


async def test_a_run_stopped_at_the_cap_keeps_what_fits_and_says_it_was_cut(
    tmp_path: Path,
) -> None:
    """`stop_at_cap`: stdout is a file of the cap's size; the command fails past it, as on
    a full disk, instead of running on while the rest is dropped."""
    sh = shutil.which("sh")
    assert sh is not None

    async def writing(count: int) -> runner.Completed:
        script = f"head -c {count} /dev/zero | tr '\\0' x; echo exit $? >&2"
        return await runner.run_process(
            [sh, "-c", script], cwd=None, env=dict(os.environ), timeout=10.0,
            output_bytes=10_000, stop_at_cap=True,
        )  # fmt: skip

    whole = await writing(10_000)
    assert (whole.stdout, whole.truncated, whole.stderr) == (b"x" * 10_000, False, b"exit 0\n")
    cut = await writing(100_000)
    assert cut.stdout == b"x" * 10_000 and cut.truncated is True
    assert cut.stderr.endswith(b"exit 1\n")  # `tr` could not write past it


async def test_a_child_started_without_a_directory_gets_only_its_three_descriptors(
    tmp_path: Path,
) -> None:
    """posix_spawn closes nothing: the daemon makes what it inherited close-on-exec at its
    start, and opens everything else so; the child sees stdin, stdout and stderr alone,
    and the signals Python ignores at their defaults."""
    leaked = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaked, True)  # as an inherited descriptor would be
    try:
        runner.keep_descriptors_to_ourselves()
        sh = shutil.which("sh")
        assert sh is not None
        done = await runner.run_process(
            [sh, "-c", "ls /proc/$$/fd; grep SigIgn /proc/$$/status"], cwd=None,
            env=dict(os.environ), timeout=10.0, output_bytes=10_000,
        )  # fmt: skip
    finally:
        os.close(leaked)
    listed, ignored = done.stdout.decode().rsplit("SigIgn:", 1)
    assert sorted(listed.split()) == ["0", "1", "2"]
    for number in (signal.SIGPIPE, signal.SIGXFSZ):  # ignored by Python, not by the child
        assert not int(ignored, 16) & 1 << (number - 1)


async def test_a_program_that_cannot_start_without_a_directory_leaves_no_descriptor() -> None:
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        await runner.run_process(
            ["/nonexistent/git", "status"], cwd=None, env=dict(os.environ), timeout=10.0,
            output_bytes=1000,
        )  # fmt: skip
    assert open_fds() == before


def open_fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


async def test_a_process_that_cannot_start_leaves_no_descriptor(tmp_path: Path) -> None:
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        await runner.run_process(
            ["git", "status"], cwd=tmp_path / "missing", env=dict(os.environ), timeout=10.0,
            output_bytes=1000,
        )  # fmt: skip
    assert open_fds() == before


async def test_a_process_that_cannot_be_watched_is_killed_and_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a pidfd (no descriptor left) the process just started is not left running."""
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    def no_pidfd(pid: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    monkeypatch.setattr(runner.os, "pidfd_open", no_pidfd)
    before = open_fds()
    with pytest.raises(OSError, match="Too many open files"):
        await runner.run_process(
            ["sleep", "600"], cwd=tmp_path, env=dict(os.environ), timeout=10.0, output_bytes=10
        )
    assert len(started) == 1 and started[0].returncode is not None  # killed, and reaped
    assert dead(started[0].pid) and open_fds() == before


async def test_a_cancelled_write_finishes_shielded(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, go, marker = tmp_path / "started", tmp_path / "go", tmp_path / "finished"
    os.mkfifo(started)
    os.mkfifo(go)
    script = tmp_path / "gate-gpg.sh"
    script.write_text(
        f"#!/bin/sh\necho $$ > '{started}'\nread line < '{go}'\necho done > '{marker}'\nexit 1\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    for name, value in private_home(tmp_path / "home2", f"[gpg]\n\tprogram = {script}\n").items():
        monkeypatch.setenv(name, value)
    cancelled = threading.Event()
    outcome: dict[str, ToolError] = {}

    def wait_started() -> int:
        with started.open() as f:
            return int(f.read())

    def release_after_cancel() -> None:
        cancelled.wait(30)
        with go.open("w") as f:
            f.write("go\n")

    async def attempt() -> None:
        try:
            await run(repo, "commit", ["-S", "--allow-empty", "-m", "x"])
        except ToolError as exc:
            outcome["error"] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(attempt)
        nursery.start_soon(trio.to_thread.run_sync, release_after_cancel)
        pid = await trio.to_thread.run_sync(wait_started)
        nursery.cancel_scope.cancel()
        cancelled.set()
    assert dead(pid)
    assert marker.read_text() == "done\n"  # the signer was not killed by the cancel
    if "error" in outcome:  # our fake signer refuses, so git reports its failure
        assert outcome["error"].kind is ErrorKind.GIT_FAILED
