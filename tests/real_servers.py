"""Helpers for the real-server language tests: one daemon, one session, every tool asked."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.lsp_support import require
from tests.rpc import RpcClient, RpcFailure

__all__ = [
    "ask", "messages", "refused", "require", "schema_server", "unsupported", "where", "write",
]  # fmt: skip

TIMEOUT = 60  # seconds a first answer may take (the server's start included)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def ask(client: RpcClient, tool: str, **arguments: Any) -> dict[str, Any]:
    with trio.fail_after(TIMEOUT):
        return await client.tool(tool, **arguments)


async def refused(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with trio.fail_after(TIMEOUT), pytest.raises(RpcFailure) as failed:
        await client.tool(tool, **arguments)
    return failed.value


async def unsupported(client: RpcClient, server: str, tool: str, **arguments: Any) -> None:
    """The tool fails saying that `server` does not offer it: never an empty answer."""
    failure = await refused(client, tool, **arguments)
    assert failure.kind in ("unsupported_by_server", "lsp_unavailable"), (
        failure.kind,
        failure.message,
    )
    assert server in failure.message or "offers" in failure.message


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
