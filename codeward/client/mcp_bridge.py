"""`codeward mcp`: an MCP stdio server bridged to the daemon.

It lists the daemon's tools (`tools/list {format: "mcp"}`) and forwards each call to
`tools/call`, returning the result as JSON text (a daemon error becomes an `isError` result
carrying its message). The MCP SDK (an optional extra, which runs on anyio) is imported here
only; the blocking daemon connections run in worker threads, one per concurrent call, each
bound to the session of the project root.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codeward import __version__
from codeward.client.connection import (
    ClientError,
    Connection,
    RemoteError,
)

if TYPE_CHECKING:
    from codeward.client.cli import Invocation

MISSING_SDK = (
    "error: `codeward mcp` needs the MCP SDK, which is not installed; "
    "install it with `pip install 'codeward[mcp]'` (or `pip install mcp`).\n"
)


class DaemonPool:
    """Blocking daemon connections, each opened by `opener` (connected, session bound);
    a call takes an idle one or opens another, so concurrent calls do not wait in line."""

    def __init__(self, opener: Callable[[], Connection], timeout: float | None) -> None:
        self._opener = opener
        self._timeout = timeout
        self._idle: list[Connection] = []
        self._lock = threading.Lock()

    def call(self, method: str, params: Any) -> Any:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._opener()
        try:
            return conn.request(method, params, timeout=self._timeout)
        finally:
            if not conn.closed:
                with self._lock:
                    self._idle.append(conn)

    def warm(self) -> None:
        """Open one connection now, so that an unreachable daemon fails at start-up."""
        conn = self._opener()
        with self._lock:
            self._idle.append(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def error_text(exc: ClientError) -> str:
    """The message an MCP client shows for a failed call."""
    if isinstance(exc, RemoteError):
        return f"{exc.message} [{exc.kind or f'code {exc.code}'}]"
    return exc.message


def call_result(pool: DaemonPool, name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
    """Forward one tool call: (JSON text or error message, is_error)."""
    try:
        result = pool.call("tools/call", {"name": name, "arguments": arguments or {}})
    except ClientError as exc:
        return error_text(exc), True
    return json.dumps(result, indent=2, ensure_ascii=False), False


def list_tools(pool: DaemonPool) -> list[dict[str, Any]]:
    result = pool.call("tools/list", {"format": "mcp"})
    tools = result.get("tools") if isinstance(result, dict) else None
    return [t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]


def main(inv: Invocation) -> int:
    try:
        import anyio
        import anyio.to_thread
        import mcp.types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ImportError:
        inv.stderr.write(MISSING_SDK)
        return 1

    pool = DaemonPool(lambda: inv.connect(session=True), inv.timeout)
    pool.warm()  # an unreachable daemon or a bad root fails now, with the CLI's exit codes

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await anyio.to_thread.run_sync(list_tools, pool, abandon_on_cancel=True)
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"],
                    description=t.get("description"),
                    input_schema=t.get("inputSchema") or {"type": "object"},
                )
                for t in tools
            ]
        )

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text, is_error = await anyio.to_thread.run_sync(
            call_result, pool, params.name, params.arguments, abandon_on_cancel=True
        )
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)

    server: Server[Any] = Server(
        "codeward",
        version=__version__,
        instructions="Safe git, code intelligence and a Lua sandbox for the project at "
        f"{inv.root.name or inv.root}.",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )

    if inv.stdin is sys.stdin and inv.stdout is sys.stdout:
        stdio = stdio_server()  # the SDK guards the real fds 0 and 1 itself
    else:
        stdio = stdio_server(anyio.wrap_file(inv.stdin), anyio.wrap_file(inv.stdout))

    async def serve() -> None:
        async with stdio as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        pool.close()
    return 0
