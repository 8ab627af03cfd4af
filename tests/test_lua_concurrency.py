"""No head-of-line blocking in a session, through the daemon's socket: a git write waiting for
the user's approval, slow git commands and nested git calls hold up no other request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

import codeward.daemon.git.command as git_command_module
from codeward.daemon.config import Config, DaemonConfig, LuaConfig, PolicyConfig
from tests.conftest import OpenClient
from tests.git_repos import commit_all, git, git_home, make_repo, write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

__all__ = ["git_home"]

APP = "def double(value: int) -> int:\n    return value * 2\n\n\nprint(double(2))\n"


@pytest.fixture
def repo(project: Path) -> Path:
    make_repo(project)
    write(project, "app.py", APP)
    write(project, "notes.txt", "one\n")
    commit_all(project, "first")
    return project


class HeldConfirmation:
    """Answers `client/confirm` only when released; records that it was asked."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.release = trio.Event()

    async def __call__(self, method: str, params: Any) -> Any:
        assert method == "client/confirm"
        self.asked.set()
        await self.release.wait()
        return {"approved": True}


@needs("basedpyright")
async def test_a_write_waiting_for_approval_blocks_no_other_client(
    repo: Path, open_client: OpenClient
) -> None:
    reader = await open_client(repo)
    hover_args = {"path": "app.py", "line": 5, "character": 7}
    warm = await reader.tool("get_hover_info", **hover_args)  # the server starts here
    assert "double" in warm["signature"]
    confirm = HeldConfirmation()
    writer = await open_client(repo, capabilities={"confirm": True}, on_request=confirm)
    write(repo, "notes.txt", "two\n")
    answered: dict[str, Any] = {}

    async def blocked_write() -> None:
        answered["add"] = await writer.tool("git_command", subcommand="add", args=["notes.txt"])

    async def status() -> None:
        answered["status"] = await reader.tool("git_command", subcommand="status")

    async def lua() -> None:
        source = "return codeward.git('log', {'-1'}).parsed.commits[1].subject"
        answered["lua"] = (await reader.call("lua/eval", {"source": source}))["result"]

    async def hover() -> None:
        answered["hover"] = await reader.tool("get_hover_info", **hover_args)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(blocked_write)
        with trio.fail_after(10):
            await confirm.asked.wait()
        with trio.fail_after(10):  # before this change: all three waited for the approval
            async with trio.open_nursery() as readers:
                for read in (status, lua, hover, status, lua):
                    readers.start_soon(read)
        assert "add" not in answered  # still waiting for the user
        assert answered["status"]["parsed"]["unstaged"] == [
            {"path": "notes.txt", "status": "modified"}
        ]
        assert answered["lua"] == "first"
        assert "double" in answered["hover"]["signature"]
        confirm.release.set()
    assert answered["add"]["exit_code"] == 0
    assert git(repo, "diff", "--cached", "--name-only") == "notes.txt\n"


async def test_git_commands_of_one_session_overlap(
    repo: Path, open_client: OpenClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N statuses from N clients are all running git at the same moment (each status runs
    one git process: the parse run its output is rendered from); one at a time would never
    get there."""
    count = 6
    real = git_command_module.run_process
    running = 0
    all_in = trio.Event()

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal running
        running += 1
        if running >= count:
            all_in.set()
        await all_in.wait()
        try:
            return await real(*args, **kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(git_command_module, "run_process", counted)
    clients = [await open_client(repo) for _ in range(count)]
    results: list[Any] = []

    async def status(client: RpcClient) -> None:
        results.append(await client.tool("git_command", subcommand="status"))

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for client in clients:
                nursery.start_soon(status, client)
    assert [r["exit_code"] for r in results] == [0] * count


ONE_RUNTIME = Config(daemon=DaemonConfig(idle_timeout=600.0), lua=LuaConfig(runtimes=1))


@pytest.mark.parametrize("daemon_config", [ONE_RUNTIME])
async def test_git_command_called_from_lua_runs_in_that_eval(
    repo: Path, open_client: OpenClient
) -> None:
    """`codeward.call("git_command", ...)` used to wait for the session's one runtime, held
    by the calling eval, until the wall limit (60 s). Even with one runtime it answers now."""
    client = await open_client(repo)
    write(repo, "notes.txt", "changed\n")
    with trio.fail_after(10):
        nested = """
        local st = codeward.call("git_command", {subcommand = "status"})
        local log = codeward.call("git_command", {subcommand = "log", args = {"-1"}})
        return {st.parsed.unstaged[1].path, log.parsed.commits[1].subject}
        """
        assert (await client.call("lua/eval", {"source": nested}))["result"] == [
            "notes.txt",
            "first",
        ]
        # Its checks are the tool's: bad arguments, policy, a write needing approval.
        for source, kind in [
            ('return codeward.call("git_command", {subcommand = 1})', "invalid_arguments"),
            ('return codeward.call("git_command", {surprise = true})', "invalid_arguments"),
            (
                'return codeward.call("git_command", {subcommand = "log", args = {"--output=x"}})',
                "argument_not_allowed",
            ),
            ('return codeward.call("git_command", {subcommand = "gc"})', "subcommand_not_allowed"),
            (
                'return codeward.call("git_command", {subcommand = "add", args = {"."}})',
                "confirmation_required",
            ),
            (
                'return codeward.call("git_command", {subcommand = "reset", args = {"--hard"}})',
                "blocked_destructive",
            ),
        ]:
            with pytest.raises(RpcFailure) as info:
                await client.call("lua/eval", {"source": source})
            assert info.value.kind == kind, source
        # The git_command tool itself, and a plain eval, still work after all that.
        assert (await client.tool("git_command", subcommand="status"))["exit_code"] == 0
        assert (await client.call("lua/eval", {"source": "return 1"}))["result"] == 1
    assert git(repo, "diff", "--cached", "--name-only") == ""


NARROWED = Config(
    daemon=DaemonConfig(idle_timeout=600.0),
    policy=PolicyConfig(git_write="allow", git_destructive="deny"),
)


@pytest.mark.parametrize("daemon_config", [NARROWED])
async def test_nested_git_command_keeps_the_callers_policy(
    repo: Path, open_client: OpenClient
) -> None:
    """A caller that narrowed its policy to deny writes cannot widen it by nesting."""
    narrowed = await open_client(repo, policy={"git_write": "deny"})
    source = 'return codeward.call("git_command", {subcommand = "add", args = {"."}})'
    with trio.fail_after(10):
        with pytest.raises(RpcFailure) as info:
            await narrowed.call("lua/eval", {"source": source})
        assert info.value.kind == "subcommand_not_allowed"
        write(repo, "notes.txt", "two\n")
        plain = await open_client(repo)
        done = (await plain.call("lua/eval", {"source": source}))["result"]
    assert done["exit_code"] == 0
    assert git(repo, "diff", "--cached", "--name-only") == "notes.txt\n"


ALLOW_WRITES = Config(
    daemon=DaemonConfig(idle_timeout=600.0),
    policy=PolicyConfig(git_write="allow", git_destructive="deny"),
)


@pytest.mark.parametrize("daemon_config", [ALLOW_WRITES])
async def test_git_writes_of_one_root_run_one_at_a_time(
    repo: Path, open_client: OpenClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes from many clients at once take turns (they would meet on .git/index.lock),
    while reads of the same moment still run beside them."""
    count = 6
    real = git_command_module.run_process
    writing = 0
    most = 0

    async def watched(argv: list[str], **kwargs: Any) -> Any:
        nonlocal writing, most
        is_write = "add" in argv
        writing += is_write
        most = max(most, writing)
        try:
            await trio.sleep(0)  # let any other write that could start now start
            return await real(argv, **kwargs)
        finally:
            writing -= is_write

    monkeypatch.setattr(git_command_module, "run_process", watched)
    clients = [await open_client(repo) for _ in range(count)]
    for i in range(count):
        write(repo, f"new{i}.txt", f"{i}\n")
    results: list[Any] = []

    async def add(client: RpcClient, i: int) -> None:
        results.append(await client.tool("git_command", subcommand="add", args=[f"new{i}.txt"]))

    async def status(client: RpcClient) -> None:
        results.append(await client.tool("git_command", subcommand="status"))

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i, client in enumerate(clients):
                nursery.start_soon(add, client, i)
                nursery.start_soon(status, client)
    assert [r["exit_code"] for r in results] == [0] * (2 * count)
    assert most == 1
    staged = git(repo, "diff", "--cached", "--name-only").split()
    assert staged == [f"new{i}.txt" for i in range(count)]
