"""Helpers for the real-server language tests: one daemon, one session, every tool asked."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import trio

from tests.lsp_support import require
from tests.rpc import RpcClient

__all__ = ["ask", "messages", "require", "schema_server", "where", "write"]

TIMEOUT = 60  # seconds a first answer may take (the server's start included)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def ask(client: RpcClient, tool: str, **arguments: Any) -> dict[str, Any]:
    with trio.fail_after(TIMEOUT):
        return await client.tool(tool, **arguments)


def messages(result: dict[str, Any]) -> list[tuple[int, str]]:
    """(line, message) of each diagnostic."""
    return [(d["line"], d["message"]) for d in result["diagnostics"]]


def where(location: dict[str, Any]) -> tuple[str, int, int]:
    return location["path"], location["line"], location["character"]


async def schema_server(nursery: trio.Nursery) -> tuple[int, list[trio.SocketStream]]:
    """A local port that records every connection made to it."""
    connections: list[trio.SocketStream] = []

    async def record(stream: trio.SocketStream) -> None:
        connections.append(stream)
        await stream.aclose()

    (listener,) = await nursery.start(partial(trio.serve_tcp, record, 0, host="127.0.0.1"))
    return listener.socket.getsockname()[1], connections
