"""Helpers for the real-server language modules (test_langs_*.py): one daemon and one
server start per module, a small multi-file project written into a tmp dir, each tool
asked in turn through the socket as a client would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.config import Config, DaemonConfig, LspConfig
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.rpc import RpcClient, RpcFailure


def patient_config() -> Config:
    """The daemon's config for these modules: servers get a minute and a half to load (a
    cold rust-analyzer or jdtls on two loaded cores), not the default 20 s."""
    lsp = LspConfig(ready_timeout=90.0, settle_timeout=60.0, request_timeout=90.0)
    return Config(daemon=DaemonConfig(idle_timeout=600.0), lsp=lsp)


async def open_project(open_client: OpenClient, root: Path, files: dict[str, str]) -> RpcClient:
    """A client on the session of `root` (written with `files`), trusted: the servers run
    as configured, not restricted."""
    write(root, files)
    client = await open_client()
    await client.call("trust/set", {"root": str(root)})
    await client.call("session/open", {"root": str(root)})
    return client


def at(root: Path, path: str, needle: str, nth: int = 1, offset: int = 0) -> dict[str, Any]:
    """The tool arguments naming the `nth` `needle` of `path` (+ `offset` characters)."""
    line, character = pos(root, path, needle, nth, offset)
    return {"path": path, "line": line, "character": character}


def places(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((item["path"], item["line"]) for item in items)


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    """The error a tool call fails with (the test fails if it succeeds)."""
    with pytest.raises(RpcFailure) as raised:
        await client.tool(tool, **arguments)
    return raised.value
