"""Text for models, through the official MCP SDK: hover docs without HTML entities or
markdown escapes (the structured result keeps the server's markdown), a git subcommand
with its arguments in one string answered with the split form, and a missing path answered
with the nearest existing one."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon.server import Daemon
from codeward.daemon.tools.suggest import nearest
from codeward.protocol.render.intel import plain
from tests.intel_support import write
from tests.lsp_support import needs
from tests.test_mcp import agent, git, text_of

DOCUMENTED = '''\
def format_help(max_width: int) -> str:
    """Format the help text of the_command.

    Arguments:
        max_width: the widest line, in characters
        * a *starred* item
    """
    return "x" * max_width
'''


def test_plain_text_keeps_code_as_written() -> None:
    markdown = "A\\_b&nbsp;&nbsp;c &lt;T&gt; `x\\_y &amp;`\n```\nq\\_r &nbsp;\n```\n\\*done\\*"
    assert plain(markdown) == "A_b  c <T> `x\\_y &amp;`\n```\nq\\_r &nbsp;\n```\n*done*"


def test_the_nearest_existing_path() -> None:
    files = ["src/click/formatting.py", "src/click/core.py", "tests/test_formatting.py"]
    assert nearest("click/formatting.py", files) == ["src/click/formatting.py"]
    assert nearest("./click/formatting.py", files) == ["src/click/formatting.py"]
    assert nearest("lib/core.py", files) == ["src/click/core.py"]  # the same name elsewhere
    assert nearest("src/click/formating.py", files) == ["src/click/formatting.py"]
    assert nearest("nothing/alike.txt", files) == []


@needs("basedpyright")
async def test_hover_text_for_a_model(daemon: Daemon, project: Path) -> None:
    git(project, "init", "-q", "-b", "main")
    write(project, {"src/pkg/__init__.py": "", "src/pkg/fmt.py": DOCUMENTED})
    async with agent(daemon, project) as (session, _):
        with trio.fail_after(60):
            hovered = await session.call_tool(
                "get_hover_info", {"path": "src/pkg/fmt.py", "symbol": "format_help"}
            )
            missing = await session.call_tool(
                "get_hover_info", {"path": "pkg/fmt.py", "line": 1, "character": 5}
            )
    assert not hovered.is_error, text_of(hovered)
    text = text_of(hovered)
    structured = hovered.structured_content or {}
    markdown = str(structured.get("docs")) + str(structured.get("markdown"))
    assert "&nbsp;" in markdown or "\\_" in markdown  # the server's markdown, kept
    assert "&nbsp;" not in text and "\\_" not in text and "\\*" not in text
    assert "the_command" in text and "max_width: the widest line" in text
    assert missing.is_error and text_of(missing).endswith("[file_not_found]")
    assert "the nearest existing: 'src/pkg/fmt.py'" in text_of(missing)


async def test_a_subcommand_with_its_arguments_in_one_string(daemon: Daemon, project: Path) -> None:
    git(project, "init", "-q", "-b", "main")
    async with agent(daemon, project) as (session, _):
        with trio.fail_after(60):
            joined = await session.call_tool("git_command", {"subcommand": "log -n 2 --oneline"})
            unknown = await session.call_tool("git_command", {"subcommand": "frobnicate now"})
    assert joined.is_error and text_of(joined).endswith("[invalid_arguments]")
    assert '{"subcommand": "log", "args": ["-n", "2", "--oneline"]}' in text_of(joined)
    assert unknown.is_error and text_of(unknown).endswith("[subcommand_not_allowed]")


@pytest.mark.parametrize("tool", ["get_symbols", "get_diagnostics"])
async def test_a_missing_path_names_the_nearest_through_the_socket(
    open_client, project: Path, tool: str
) -> None:
    from tests.rpc import RpcFailure

    write(project, {"src/click/formatting.py": "x = 1\n"})
    client = await open_client(project)
    with pytest.raises(RpcFailure) as missing:
        await client.tool(tool, path="click/formatting.py")
    assert missing.value.kind == "file_not_found"
    assert "the nearest existing: 'src/click/formatting.py'" in missing.value.message
    assert missing.value.data["suggestions"] == ["src/click/formatting.py"]
