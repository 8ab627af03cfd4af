"""git_command end to end: a client, the daemon, the session's Lua sandbox, real git."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import codeward.daemon.tools.git_tool  # noqa: F401  (registers git_command)
from tests.conftest import OpenClient
from tests.git_repos import commit_all, git, git_home, make_repo, write
from tests.rpc import RpcClient, RpcFailure

__all__ = ["git_home"]


@pytest.fixture
def repo(project: Path) -> Path:
    make_repo(project)
    write(project, "a.txt", "one\n")
    write(project, "ü dir/b c.txt", "two\n")
    commit_all(project, "first")
    return project


class ConfirmingClient:
    """Answers `client/confirm` with a fixed answer and records what it was asked."""

    def __init__(self, approved: bool) -> None:
        self.approved = approved
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, method: str, params: Any) -> Any:
        assert method == "client/confirm"
        self.asked.append(params)
        return {"approved": self.approved}


async def tool_error(client: RpcClient, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool("git_command", **arguments)
    assert info.value.code == -32000
    return info.value


async def test_listed_with_its_schema(open_client: OpenClient) -> None:
    client = await open_client()
    tools = {t["name"]: t for t in (await client.call("tools/list"))["tools"]}
    schema = tools["git_command"]["input"]
    assert schema["required"] == ["subcommand"]
    assert set(schema["properties"]) == {"subcommand", "args", "allow_destructive"}


async def test_status_through_the_daemon(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    write(repo, "ü dir/b c.txt", "changed\n")
    result = await client.tool("git_command", subcommand="status", args=["--short"])
    assert result["exit_code"] == 0
    assert result["output"] == git(repo, "status", "--short")
    assert result["parsed"]["unstaged"] == [{"path": "ü dir/b c.txt", "status": "modified"}]
    assert result["parsed"]["branch"]["head"] == "main"
    log = await client.tool("git_command", subcommand="log")
    assert log["parsed"]["commits"][0]["subject"] == "first"


async def test_lua_scripts_call_git(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    source = 'local r = codeward.git("log", {"-1"}) return r.parsed.commits[1].subject'
    assert (await client.call("lua/eval", {"source": source}))["result"] == "first"
    caught = 'local ok, err = pcall(codeward.git, "reset", {"--hard"}) return ok'
    assert (await client.call("lua/eval", {"source": caught}))["result"] is False


async def test_write_needs_a_client_that_can_confirm(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    write(repo, "a.txt", "changed\n")
    error = await tool_error(client, subcommand="commit", args=["-am", "x"])
    assert error.kind == "confirmation_required"
    assert git(repo, "log", "--format=%s") == "first\n"


async def test_approved_commit_lands(repo: Path, open_client: OpenClient) -> None:
    confirmer = ConfirmingClient(True)
    client = await open_client(repo, capabilities={"confirm": True}, on_request=confirmer)
    write(repo, "a.txt", "changed\n")
    result = await client.tool("git_command", subcommand="commit", args=["-am", "landed"])
    assert result["exit_code"] == 0
    assert git(repo, "log", "-1", "--format=%s") == "landed\n"
    (asked,) = confirmer.asked
    assert asked["tool"] == "git_command"
    assert asked["argv"] == ["git", "commit", "-am", "landed"]
    assert "write" in asked["summary"]


async def test_denied_confirmation_changes_nothing(repo: Path, open_client: OpenClient) -> None:
    confirmer = ConfirmingClient(False)
    client = await open_client(repo, capabilities={"confirm": True}, on_request=confirmer)
    write(repo, "a.txt", "changed\n")
    status = git(repo, "status", "--porcelain=v2")
    error = await tool_error(client, subcommand="add", args=["a.txt"])
    assert error.kind == "confirmation_denied"
    assert git(repo, "status", "--porcelain=v2") == status
    assert len(confirmer.asked) == 1


async def test_destructive_blocked_then_allowed(repo: Path, open_client: OpenClient) -> None:
    confirmer = ConfirmingClient(True)
    client = await open_client(repo, capabilities={"confirm": True}, on_request=confirmer)
    write(repo, "a.txt", "work in progress\n")
    error = await tool_error(client, subcommand="reset", args=["--hard"])
    assert error.kind == "blocked_destructive"
    assert confirmer.asked == []
    assert (repo / "a.txt").read_text() == "work in progress\n"
    result = await client.tool(
        "git_command", subcommand="reset", args=["--hard"], allow_destructive=True
    )
    assert result["exit_code"] == 0
    assert (repo / "a.txt").read_text() == "one\n"
    assert "destructive" in confirmer.asked[0]["summary"]


async def test_refusals_reach_the_client(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    assert (await tool_error(client, subcommand="status", args=["--git-dir=/"])).kind == (
        "argument_not_allowed"
    )
    assert (await tool_error(client, subcommand="config", args=[])).kind == (
        "subcommand_not_allowed"
    )
    assert (await tool_error(client, subcommand="diff", args=["--", "../x"])).kind == (
        "path_outside_project"
    )
    failed = await tool_error(client, subcommand="log", args=["nope"])
    assert failed.kind == "git_failed"
    assert failed.data["exit_code"] == 128
    invalid = await tool_error(client, subcommand="log", args="nope")
    assert invalid.kind == "invalid_arguments"


async def test_session_policy_narrowing_applies(repo: Path, open_client: OpenClient) -> None:
    confirmer = ConfirmingClient(True)
    client = await open_client(
        repo, capabilities={"confirm": True}, on_request=confirmer,
        policy={"git_write": "deny"},
    )  # fmt: skip
    error = await tool_error(client, subcommand="branch", args=["new"])
    assert error.kind == "subcommand_not_allowed"
    assert confirmer.asked == []


async def test_not_a_repository(project: Path, open_client: OpenClient) -> None:
    client = await open_client(project)
    assert (await tool_error(client, subcommand="status")).kind == "not_a_git_repository"


# --- issue 14, through the socket: one test per attack class ------------------------------


async def test_optional_value_never_hides_output(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    for lead in (["--relative"], ["--pretty"], ["--branches"], ["--stat"], ["-M"]):
        args = ["-1", "--format=%H", *lead, "--output=owned.txt"]
        error = await tool_error(client, subcommand="log", args=args)
        assert error.kind == "argument_not_allowed" and error.data["option"] == "--output"
    assert not (repo / "owned.txt").exists()


async def test_abbreviations_refused(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    write(repo, "a.txt", "work in progress\n")
    attempts = [("reset", ["--ha"]), ("checkout", ["--forc", "main"]),
                ("restore", ["--work", "a.txt"]), ("rm", ["--forc", "a.txt"])]  # fmt: skip
    for subcommand, args in attempts:
        error = await tool_error(client, subcommand=subcommand, args=args)
        assert error.kind == "argument_not_allowed"
        assert error.data["option"] == args[0] and args[0] in error.message
    assert (repo / "a.txt").read_text() == "work in progress\n"


async def test_options_that_turn_a_read_into_a_write(repo: Path, open_client: OpenClient) -> None:
    client = await open_client(repo)
    git(repo, "branch", "keep")
    git(repo, "remote", "add", "o", "https://example.invalid/o.git")
    error = await tool_error(client, subcommand="branch", args=["--column", "-D", "keep"])
    assert error.kind == "blocked_destructive"
    created = await tool_error(client, subcommand="branch", args=["--column", "NEW"])
    assert created.kind == "confirmation_required"
    assert git(repo, "branch", "--list", "keep", "NEW").split() == ["keep"]
    prune = await tool_error(client, subcommand="fetch", args=["--prune", "--prune-tags", "o"])
    assert prune.kind == "blocked_destructive"
    refmap = ["--refmap=+refs/heads/*:refs/heads/*", "origin", "main"]
    assert (await tool_error(client, subcommand="fetch", args=refmap)).kind == (
        "argument_not_allowed"
    )


async def test_magic_pathspecs_and_local_remotes(
    repo: Path, open_client: OpenClient, tmp_path: Path
) -> None:
    root = repo / "ü dir"  # a root below the repository's top
    client = await open_client(root)
    for args in (["--", ":(top)a.txt"], [":/a.txt"], [":(attr:x)a"], [":!/a.txt"]):
        error = await tool_error(client, subcommand="ls-files", args=args)
        assert error.kind in ("path_outside_project", "argument_not_allowed")
    other = make_repo(tmp_path / "other")
    for subcommand, args in (("fetch", [str(other)]), ("fetch", ["~/other-repo"]),
                             ("fetch", [f"file://{other}"]), ("push", [f"--repo={other}"]),
                             ("pull", ["../.."])):  # fmt: skip
        error = await tool_error(client, subcommand=subcommand, args=args)
        assert error.kind in ("path_outside_project", "argument_not_allowed")
        assert str(tmp_path) not in error.message


async def test_nested_repository_canary(
    repo: Path, open_client: OpenClient, tmp_path: Path
) -> None:
    marker = tmp_path / "canary-ran"
    script = tmp_path / "canary.sh"
    script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\ncat\n")
    script.chmod(0o755)
    inner = make_repo(repo / "nested")
    write(inner, "n.txt", "inner\n")
    write(inner, ".gitattributes", "*.txt filter=cw\n")
    commit_all(inner, "inner")
    git(repo, "add", "nested", check=False)
    git(repo, "commit", "-qm", "embed")
    git(inner, "config", "filter.cw.clean", str(script))
    os.utime(inner / "n.txt", (2_000_000_000, 2_000_000_000))
    git(repo, "status", check=False)
    assert marker.exists()  # plain git runs the nested repository's filter
    marker.unlink()
    os.utime(inner / "n.txt", (2_000_000_001, 2_000_000_001))
    client = await open_client(repo)
    error = await tool_error(client, subcommand="status")
    assert error.kind == "unsafe_repository_config"
    assert error.data["keys"] == ["filter.cw.clean"] and "filter.cw.clean" in error.message
    assert not marker.exists()


async def test_config_reading_outside_files_refused(
    repo: Path, open_client: OpenClient, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-LINE\n")
    git(repo, "config", "blame.ignoreRevsFile", str(secret))
    client = await open_client(repo)
    error = await tool_error(client, subcommand="blame", args=["a.txt"])
    assert error.kind == "unsafe_repository_config"
    assert error.data["keys"] == ["blame.ignorerevsfile"]
    assert "SECRET" not in str(error.data) and str(tmp_path) not in error.message


async def test_git_failed_stderr_is_scrubbed(
    repo: Path, open_client: OpenClient, tmp_path: Path
) -> None:
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "no where"))
    confirmer = ConfirmingClient(True)
    client = await open_client(repo, capabilities={"confirm": True}, on_request=confirmer)
    error = await tool_error(client, subcommand="checkout", args=["other"])
    assert error.kind == "git_failed"  # git names the work tree that has it checked out
    for text in (error.message, error.data["stderr"], error.data["output"]):
        assert str(tmp_path) not in text and "no where" not in text
    assert "<path>" in error.data["stderr"]
