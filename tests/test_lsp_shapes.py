"""Shapes off the LSP spec, sent by the scripted fake server: each is left out or gives a
clear `lsp_error` naming the server and the method; the server and the others go on."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from tests.lsp_support import fake_config, fake_server, logged, running


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\nbad line\n")
    return path


async def test_capabilities_and_registrations_off_the_spec(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("off-spec", log)})) as (
        manager,
        _,
    ):
        server = manager.server_for("fake")
        await server.connection()
        with trio.fail_after(5):
            await server.wait_for(
                lambda: server.capabilities.supports("textDocument/formatting"), 5
            )
        caps = server.capabilities
        assert caps.supports("textDocument/hover")  # the readable capabilities stand
        assert caps.unreadable == [
            "semanticTokensProvider",
            "workspace/didChangeWatchedFiles registration",
        ]
        assert caps.watched_file_globs() == []
        found = await manager.diagnostics(doc)  # it still answers
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
    answers = {m["id"]: m for m in logged(log) if "method" not in m}
    refused = answers[1001]["error"]  # registrations that are not a list
    assert refused["code"] == -32602 and "client/registerCapability" in refused["message"]
    assert answers[1002]["result"] is None
