"""What a Lua eval may ask of its session: the host side of `codeward.git/call/log`."""

from __future__ import annotations

from typing import Any, Protocol


class LuaHost(Protocol):
    """The host calls one eval may make, bound to the client it runs for."""

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        """`codeward.git(subcommand, args, opts)`: the `git_command` result, or a ToolError."""
        ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`codeward.call(tool, arguments)`: any registered tool's result, or a ToolError."""
        ...

    def log(self, message: str) -> None:
        """`codeward.log(...)` and `print(...)`: one line for the session's log."""
        ...
