"""git_command end to end: a client, the daemon, the session's Lua sandbox, real git."""

from __future__ import annotations

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
