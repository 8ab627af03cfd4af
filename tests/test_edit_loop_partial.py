"""The edit loop's promises that need a scripted server: a server that does not answer in
time is named (never a silent timeout), and a preview gives the servers the disk's text
back (what they received, in order)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, ServerConfig
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server, logged
from tests.rpc import RpcClient, RpcFailure


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "fake.log"


@pytest.fixture
def daemon_config(server_log: Path) -> Config:
    """`*.fake` files: one server that publishes at once, one that never answers."""
    config = fake_config(
        {"fake": fake_server("ok", server_log), "mute": fake_server("unready-silent")},
        settle_timeout=0.5,
    )
    missing = ServerConfig(command=["/nonexistent/nope-server"], untrusted="run")
    return msgspec.structs.replace(
        config,
        daemon=DaemonConfig(idle_timeout=600.0),
        servers={**config.servers, "nope": missing},
        languages={
            **config.languages,
            "nope": LanguageConfig(patterns=["*.nope"], servers=["nope"], language_id="nope"),
        },
    )


async def test_a_server_without_an_answer_is_named(client: RpcClient, project: Path) -> None:
    write(project, {"a.fake": "good\n"})
    result = await client.tool("edit_file", path="a.fake", content="good\nbad\n")
    (report,) = result["diagnostics_after"]
    assert [d["message"] for d in report["introduced"]] == ["bad line 2"]
    assert report["partial"] and report["partial_servers"] == ["mute"]
    answer = await client.tool("get_diagnostics", path="a.fake")
    assert answer["content_hash"] == result["content_hash"]
    # the same content again: the delta since is empty, and still says who is missing
    since = await client.tool("get_diagnostics", path="a.fake", since=answer["content_hash"])
    assert since["introduced"] == [] and since["resolved"]["count"] == 0
    assert since["remaining"]["error"] == 1


async def test_a_preview_gives_the_disk_text_back(
    client: RpcClient, project: Path, server_log: Path
) -> None:
    write(project, {"b.fake": "good\n"})
    await client.tool("get_diagnostics", path="b.fake")
    result = await client.tool("edit_file", path="b.fake", content="bad\n", mode="preview")
    assert not result["written"] and (project / "b.fake").read_text() == "good\n"
    (report,) = result["diagnostics_after"]
    assert [d["message"] for d in report["introduced"]] == ["bad line 1"]
    after = await client.tool("get_diagnostics", path="b.fake")  # the server has read it all
    assert after["diagnostics"] == []
    texts = [
        m["params"]["contentChanges"][-1]["text"]
        for m in logged(server_log)
        if m.get("method") == "textDocument/didChange"
    ]
    assert "bad\n" in texts and texts[-1] == "good\n"  # the preview, then the disk's text
    assert set(texts[texts.index("bad\n") + 1 :]) == {"good\n"}
    versions = [
        m["params"]["textDocument"]["version"]
        for m in logged(server_log)
        if m.get("method") in ("textDocument/didOpen", "textDocument/didChange")
    ]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    # the previewed content written by another tool: `since` its hash knows what the
    # preview reported for it
    (project / "b.fake").write_text("bad\n")
    since = await client.tool("get_diagnostics", path="b.fake", since=result["content_hash"])
    assert since["introduced"] == [] and since["remaining"]["error"] == 1


async def test_an_edit_is_written_when_its_servers_are_missing(
    client: RpcClient, project: Path
) -> None:
    write(project, {"c.nope": "one\n"})
    result = await client.tool("edit_file", path="c.nope", content="two\n")
    assert result["written"] and (project / "c.nope").read_text() == "two\n"
    (report,) = result["diagnostics_after"]
    assert report["introduced"] == [] and report["partial_servers"] == ["nope"]
    assert "not installed" in report["errors"][0] or "nope" in report["errors"][0]
    with pytest.raises(RpcFailure) as info:  # a preview has nothing to show without them
        await client.tool("edit_file", path="c.nope", content="three\n", mode="preview")
    assert info.value.kind == "lsp_unavailable"
    assert (project / "c.nope").read_text() == "two\n"
