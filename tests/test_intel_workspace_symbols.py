"""Workspace symbols wait only for what they need: a server whose index is still loading
answers at once, marked partial, instead of after its whole workspace is analysed; one
that answers nothing yet is asked again, and its first symbols end the wait."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, LanguageConfig
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, for_daemon


@pytest.fixture
def daemon_config() -> Config:
    config = fake_config(
        {"fake": fake_server("busy-symbols"), "later": fake_server("symbols-later")}, ["fake"]
    )  # ready_timeout 20 s: what waiting for the index would cost
    later = LanguageConfig(patterns=["*.later"], servers=["later"], language_id="later")
    return for_daemon(msgspec.structs.replace(config, languages={**config.languages,
                                                                 "later": later}))  # fmt: skip


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


async def test_symbols_that_come_before_the_analysis_ends_the_wait(
    open_client: OpenClient, project: Path
) -> None:
    """The server answers nothing twice, then its symbols, while the file it would be
    waited on never finishes its analysis (a `mute` text: ready_timeout is 20 s)."""
    write(project, {"a.fake": "good\n", "b.later": "mute\n"})  # (its symbol is in a.fake)
    client = await open_client(project)
    with trio.fail_after(10):
        result = await client.tool("get_symbols", scope="workspace", query="good",
                                   language="later")  # fmt: skip
    assert [(s["name"], s["path"]) for s in result["symbols"]] == [("good", "a.fake")]
    assert result["partial"] is False
