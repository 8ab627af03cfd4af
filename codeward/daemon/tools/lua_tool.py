"""A script in the session's sandbox: the `run_lua` tool, and `evaluate` (`lua/eval` too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from codeward.daemon.config import LuaConfig, PolicyConfig
from codeward.daemon.tools.host import SessionHost
from codeward.daemon.tools.registry import Caller, ToolContext, tool
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

_LIMITS = LuaConfig()


async def evaluate(
    session: Session, caller: Caller, policy: PolicyConfig | None, source: str, args: Any
) -> tuple[Any, list[str]]:
    """Run a script in `session`'s sandbox on behalf of `caller` (`lua/eval` and the
    `run_lua` tool): its result and what it logged. A failure carries its logs in `logs`
    (what the script said before it failed helps most then)."""
    host = SessionHost(session, caller, policy)
    try:
        result = await session.lua.eval(source, args, host)
    except ToolError as exc:
        if host.messages:
            exc.details.setdefault("logs", host.messages)
        raise
    return result, host.messages


class RunLuaArgs(msgspec.Struct, forbid_unknown_fields=True):
    source: Annotated[str, msgspec.Meta(description="The Lua 5.4 script.")]
    args: Annotated[
        list[Any] | dict[str, Any] | str | int | float | bool | None,
        msgspec.Meta(description="Any JSON value, given to the script as `args` and `...`."),
    ] = None


@tool(
    "run_lua",
    "Run a Lua 5.4 script in the project's sandbox, to do many steps in one call; returns "
    "its first return value (tables become JSON arrays or objects), then its logs. In the "
    "script: `codeward.call(tool, arguments)` calls any other tool of this list and returns "
    "its result as a table; `codeward.git(subcommand, args, {allow_destructive = false})` "
    "is git_command; a failed call raises `{kind = ..., message = ...}` (catch it with "
    "`pcall`); `codeward.log(...)` or `print` add a log line; `codeward.null` is JSON null. "
    "The standard library without io, os.execute, require or load. Limits per script "
    f"(by default): {_LIMITS.cpu_seconds:g} s of CPU, {_LIMITS.wall_seconds:g} s in all "
    f"with its calls, {_LIMITS.memory_mb} MB, {_LIMITS.host_calls} calls and log lines. "
    "Git writes need the same approval as git_command. E.g. preview edits with edit_file "
    '`mode = "preview"` and apply only those whose `diagnostics_after` introduce nothing.',
    RunLuaArgs,
    title="Run a Lua script",
    servers=False,
    read_only=False,  # its calls may write (each asks its own approval)
    destructive=True,
)
async def run_lua(ctx: ToolContext, args: RunLuaArgs) -> dict[str, Any]:
    result, logs = await evaluate(ctx.session, ctx.caller, ctx.policy, args.source, args.args)
    return {"result": result, "logs": logs}
