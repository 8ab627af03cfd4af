"""Workspace symbols wait only for what they need: a server whose index is still loading
answers at once, marked partial, instead of after its whole workspace is analysed."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, for_daemon


@pytest.fixture
def daemon_config() -> Config:
    return for_daemon(
        fake_config({"fake": fake_server("busy-symbols")})
    )  # ready_timeout 20 s: what waiting for the index would cost


async def test_an_index_still_loading_answers_partial_at_once(
    open_client: OpenClient, project: Path
) -> None:
    write(project, {"a.fake": "good\n"})
    client = await open_client(project)
    with trio.fail_after(5):
        result = await client.tool("get_symbols", scope="workspace", query="good")
        again = await client.tool("get_symbols", scope="workspace", query="good")
    assert [(s["name"], s["path"], s["line"]) for s in result["symbols"]] == [("good", "a.fake", 1)]
    assert result["partial"] is True and again["partial"] is True
    servers = (await client.call("session/list"))["sessions"][0]["servers"]
    assert servers[0]["progress"] == ["Indexing"]  # still loading: hence partial
