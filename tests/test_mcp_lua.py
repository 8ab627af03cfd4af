"""run_lua through the official MCP SDK client: a script in the session's sandbox with the
limits, host calls, approvals and logs of `lua/eval` (real basedpyright and git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jsonschema
import trio

from codeward.daemon.server import Daemon
from tests.lsp_support import needs
from tests.test_mcp import agent, git, text_of

# Each edit previewed, and applied when it introduces no diagnostic in any file.
BATCH = """
local kept = {}
for _, edit in ipairs(args) do
  local seen = codeward.call("edit_file", {path = edit.path, content = edit.content,
                                           mode = "preview"})
  local introduced = 0
  for _, file in ipairs(seen.diagnostics_after) do introduced = introduced + #file.introduced end
  if introduced == 0 then
    codeward.call("edit_file", {path = edit.path, content = edit.content})
    kept[#kept + 1] = edit.path
  end
  codeward.log(edit.path .. ": " .. introduced .. " introduced")
end
return kept
"""
EDITS = [
    {"path": "a.py", "content": "def f() -> int:\n    return 2\n"},
    {"path": "b.py", "content": 'x: int = "one"\n'},  # a type error
    {"path": "c.py", "content": "from a import f\n\ny: int = f()\n"},
]


@needs("basedpyright")
async def test_a_batch_keeps_the_edits_that_break_nothing(daemon: Daemon, project: Path) -> None:
    for name, text in (("a.py", "def f() -> int:\n    return 1\n"), ("b.py", "x: int = 1\n")):
        (project / name).write_text(text)
    (project / "c.py").write_text("from a import f\n\ny: int = f() + 1\n")
    async with agent(daemon, project) as (session, _):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        description = tools["run_lua"].description or ""
        for offered in ("codeward.call", "codeward.git", "codeward.log", "1 s of CPU"):
            assert offered in description, offered
        with trio.fail_after(120):
            result = await session.call_tool("run_lua", {"source": BATCH, "args": EDITS})
    assert not result.is_error, text_of(result)
    assert tools["run_lua"].output_schema is not None
    jsonschema.validate(result.structured_content, tools["run_lua"].output_schema)
    assert result.structured_content == {
        "result": ["a.py", "c.py"],
        "logs": ["a.py: 0 introduced", "b.py: 1 introduced", "c.py: 0 introduced"],
    }
    assert text_of(result).splitlines() == [
        '["a.py","c.py"]',
        "log: a.py: 0 introduced",
        "log: b.py: 1 introduced",
        "log: c.py: 0 introduced",
    ]
    assert (project / "a.py").read_text() == EDITS[0]["content"]
    assert (project / "b.py").read_text() == "x: int = 1\n"  # previewed only
    assert (project / "c.py").read_text() == EDITS[2]["content"]


async def test_a_script_over_its_cpu_limit_fails_and_the_next_one_runs(
    daemon: Daemon, project: Path
) -> None:
    async with agent(daemon, project) as (session, _):
        with trio.fail_after(60):
            spun = await session.call_tool(
                "run_lua", {"source": "codeward.log('spinning')\nwhile true do end"}
            )
            after = await session.call_tool("run_lua", {"source": "return ...", "args": "fine"})
            nested = await session.call_tool(
                "run_lua", {"source": "return codeward.call('run_lua', {source = 'return 1'})"}
            )
            empty = await session.call_tool("run_lua", {"source": "local x = 1"})
    assert spun.is_error
    assert "[lua_timeout]" in text_of(spun) and "CPU" in text_of(spun)
    assert text_of(spun).endswith("\nlog: spinning")  # what it said before it was stopped
    assert not after.is_error and text_of(after) == "fine"
    assert nested.is_error and "cannot run another script" in text_of(nested)
    assert not empty.is_error and text_of(empty) == "(no result)"


async def test_a_git_write_from_a_script_needs_a_confirming_client(
    daemon: Daemon, project: Path
) -> None:
    git(project, "init", "-q", "-b", "main")
    (project / "a.txt").write_text("one\n")
    git(project, "add", "a.txt")
    git(project, "commit", "-qm", "first")
    (project / "a.txt").write_text("two\n")
    commit = 'return codeward.git("commit", {"-am", "second"})'
    caught = 'local ok, err = pcall(codeward.git, "commit", {"-am", "second"})\nreturn err.kind'
    async with agent(daemon, project) as (session, _):
        with trio.fail_after(60):
            refused = await session.call_tool("run_lua", {"source": commit})
            seen = await session.call_tool("run_lua", {"source": caught})
            status = await session.call_tool(
                "run_lua", {"source": 'return codeward.git("status", {"--short"}).output'}
            )
    assert refused.is_error and "[confirmation_required]" in text_of(refused)
    assert not seen.is_error and text_of(seen) == "confirmation_required"
    assert text_of(status) == " M a.txt"  # the reads a script makes need no approval
    done = subprocess.run(
        ["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["first"], "nothing was committed"
