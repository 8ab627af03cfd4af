"""Approvals over MCP, through the official SDK: a git write (or, with `[policy] edits =
"confirm"`, a file write) is an `elicitation/create` to a client that declares elicitation,
refused with the ways on to one that does not; every tool's title and annotations; a tool
that can write names its `apply`/`mode` on MCP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import types

from codeward.daemon.config import Config, DaemonConfig, LspConfig, PolicyConfig
from codeward.daemon.server import Daemon
from codeward.daemon.tools.registry import REGISTRY
from codeward.protocol.tools import ToolFormat, render_tool
from tests.lsp_support import needs
from tests.test_mcp import APP, agent, git, text_of


@pytest.fixture
def daemon_config() -> Config:
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        lsp=LspConfig(initialize_timeout=10.0, settle_timeout=10.0),
        policy=PolicyConfig(git_write="confirm", edits="confirm"),
    )


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    (project / "app.py").write_text(APP)
    (project / "notes.txt").write_text("one\n")
    git(project, "add", "app.py", "notes.txt")
    git(project, "commit", "-qm", "first")
    return project


class Answers:
    """An elicitation callback that answers `action` (with `content`) and keeps what it was
    asked."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


def commits(root: Path) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True,
                         text=True, check=True, timeout=30)  # fmt: skip
    return int(out.stdout)


async def commit(session: Any, message: str) -> types.CallToolResult:
    with trio.fail_after(60):
        return await session.call_tool(
            "git_command", {"subcommand": "commit", "args": ["--allow-empty", "-m", message]}
        )


# -- git writes --------------------------------------------------------------------------------


async def test_an_accepted_elicitation_runs_the_git_write(daemon: Daemon, repo: Path) -> None:
    answers = Answers("accept", {"approve": True})
    async with agent(daemon, repo, elicitation_callback=answers) as (session, _):
        result = await commit(session, "approved")
    assert not result.is_error, text_of(result)
    assert commits(repo) == 2
    (asked,) = answers.asked
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert "git commit" in asked.message and "write" in asked.message
    assert str(repo) not in asked.message
    schema = asked.requested_schema
    assert schema["properties"]["approve"]["type"] == "boolean"
    assert schema["required"] == ["approve"]


@pytest.mark.parametrize(
    ("action", "content"), [("decline", None), ("cancel", None), ("accept", {"approve": False})]
)
async def test_a_declined_elicitation_refuses_the_git_write(
    daemon: Daemon, repo: Path, action: str, content: dict[str, Any] | None
) -> None:
    answers = Answers(action, content)
    async with agent(daemon, repo, elicitation_callback=answers) as (session, _):
        result = await commit(session, "refused")
    assert result.is_error
    assert text_of(result).endswith("[confirmation_denied]")
    assert "declined" in text_of(result)
    assert len(answers.asked) == 1
    assert commits(repo) == 1


async def test_without_elicitation_the_refusal_names_the_ways_on(
    daemon: Daemon, repo: Path
) -> None:
    async with agent(daemon, repo) as (session, _):
        result = await commit(session, "no way to ask")
    assert result.is_error
    text = text_of(result)
    assert text.endswith("[confirmation_required]")
    assert "policy.git_write" in text and "elicitation" in text
    assert commits(repo) == 1


# -- file writes under policy.edits = "confirm" ------------------------------------------------


def notes_edit(mode: str) -> dict[str, Any]:
    return {"path": "notes.txt", "mode": mode, "content": "two\n"}


async def test_a_confirmed_edit_asks_and_writes(daemon: Daemon, repo: Path) -> None:
    answers = Answers("accept", {"approve": True})
    async with agent(daemon, repo, elicitation_callback=answers) as (session, _):
        with trio.fail_after(60):
            preview = await session.call_tool("edit_file", notes_edit("preview"))
            written = await session.call_tool("edit_file", notes_edit("apply"))
    assert not preview.is_error and not written.is_error, text_of(written)
    (asked,) = answers.asked  # a preview writes nothing: not asked
    assert "edit_file" in asked.message and "notes.txt" in asked.message
    assert (repo / "notes.txt").read_text() == "two\n"


async def test_an_edit_without_approval_writes_nothing(daemon: Daemon, repo: Path) -> None:
    declined = Answers("decline")
    async with agent(daemon, repo, elicitation_callback=declined) as (session, _):
        with trio.fail_after(60):
            refused = await session.call_tool("edit_file", notes_edit("apply"))
    assert refused.is_error and text_of(refused).endswith("[confirmation_denied]")
    async with agent(daemon, repo) as (session, _):
        with trio.fail_after(60):
            required = await session.call_tool("edit_file", notes_edit("apply"))
    assert required.is_error and text_of(required).endswith("[confirmation_required]")
    assert "policy.edits" in text_of(required) and "nothing was written" in text_of(required)
    assert (repo / "notes.txt").read_text() == "one\n"


@needs("basedpyright")
async def test_a_rename_asks_before_it_writes(daemon: Daemon, repo: Path) -> None:
    at = {"path": "app.py", "line": 14, "character": 5, "new_name": "double"}  # `compute`
    answers = Answers("accept", {"approve": True})
    async with agent(daemon, repo) as (session, _):
        with trio.fail_after(60):
            stated = await session.call_tool("rename_symbol", at)
            refused = await session.call_tool("rename_symbol", {**at, "apply": True})
    assert stated.is_error and "`apply`" in text_of(stated)
    assert text_of(stated).endswith("[invalid_arguments]")
    assert refused.is_error and text_of(refused).endswith("[confirmation_required]")
    assert (repo / "app.py").read_text() == APP
    async with agent(daemon, repo, elicitation_callback=answers) as (session, _):
        with trio.fail_after(60):
            renamed = await session.call_tool("rename_symbol", {**at, "apply": True})
    assert not renamed.is_error, text_of(renamed)
    assert "app.py" in answers.asked[0].message
    assert "def double(value: int)" in (repo / "app.py").read_text()


# -- tools/list ------------------------------------------------------------------------------


async def test_every_tool_has_a_title_and_annotations(daemon: Daemon, repo: Path) -> None:
    async with agent(daemon, repo) as (session, _):
        with trio.fail_after(30):
            tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {t.name for t in REGISTRY}
    for name, shown in tools.items():
        assert shown.title, name
        hints = shown.annotations
        assert hints is not None, name
        assert hints.open_world_hint is False, name
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint)
        read_only = REGISTRY.get(name).read_only
        assert hints.read_only_hint is read_only, name
        if read_only:
            assert hints.destructive_hint is False and hints.idempotent_hint is True, name
    assert tools["get_hover_info"].annotations.read_only_hint  # type: ignore[union-attr]
    assert tools["git_command"].annotations.destructive_hint  # type: ignore[union-attr]
    assert not tools["run_lua"].annotations.read_only_hint  # type: ignore[union-attr]
    # a tool that can write states it: no default for its switch on MCP
    for name, switch in (("edit_file", "mode"), ("rename_symbol", "apply"),
                         ("format_code", "apply")):  # fmt: skip
        schema = tools[name].input_schema
        assert switch in schema["required"], name
        assert "default" not in schema["properties"][switch], name


def test_no_input_schema_has_references_in_any_format() -> None:
    for tool in REGISTRY:
        for fmt in ToolFormat:
            for strict in (False, True) if fmt is ToolFormat.OPENAI else (False,):
                shown = json.dumps(render_tool(tool.spec(), fmt, strict=strict))
                assert "$defs" not in shown and "$ref" not in shown, (tool.name, fmt, strict)
    # the native dialect and the CLI keep their defaults
    native = render_tool(REGISTRY.get("edit_file").spec(), ToolFormat.NATIVE)
    assert native["input"]["properties"]["mode"]["default"] == "apply"
    assert "mode" not in native["input"]["required"]
