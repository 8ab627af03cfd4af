"""`safe` edits with a scripted server: a server without an answer for the edited file
refuses the edit (naming it), and open documents a server never finishes do not make an
edit wait for them."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.edits.aftermath import OTHER_FILES
from tests.intel_support import write
from tests.lsp_support import fake_config, fake_server
from tests.rpc import RpcClient

SETTLE = 60.0  # far longer than any edit below may take


@pytest.fixture
def daemon_config(request: pytest.FixtureRequest) -> Config:
    """`*.fake` files: one server that publishes at once (except texts beginning with
    "mute"), and, with the parameter "mute", one that never answers."""
    servers = {"fake": fake_server("ok")}
    if getattr(request, "param", None) == "mute":
        servers["mute"] = fake_server("unready-silent")
    settle = 0.5 if "mute" in servers else SETTLE
    # a hover waits for its document's analysis no longer than `ready_timeout`
    config = fake_config(servers, settle_timeout=settle, ready_timeout=0.5)
    return msgspec.structs.replace(config, daemon=DaemonConfig(idle_timeout=600.0))


@pytest.mark.parametrize("daemon_config", ["mute"], indirect=True)
async def test_a_partial_answer_refuses(client: RpcClient, project: Path) -> None:
    write(project, {"a.fake": "good\n"})
    result = await client.tool("edit_file", path="a.fake", content="good\n# fine\n", mode="safe")
    assert result["refused"] and not result["written"], result
    assert result["reason"] == "partial: mute, so nothing was written"
    (report,) = result["diagnostics_after"]
    assert report["partial_servers"] == ["mute"] and report["introduced"] == []
    assert (project / "a.fake").read_text() == "good\n"


async def test_unfinished_documents_do_not_stall_an_edit(client: RpcClient, project: Path) -> None:
    others = {f"m{i}.fake": f"mute {i}\nbad\n" for i in range(OTHER_FILES + 4)}
    write(project, {"a.fake": "good\n", **others})
    for path in others:  # opened by other queries; the server never finishes them
        await client.tool("get_hover_info", path=path, line=1, character=1)
    with trio.fail_after(SETTLE / 2):  # their full settle time would be SETTLE, twice
        result = await client.tool(
            "edit_file", path="a.fake", content="good\n# fine\n", mode="safe"
        )
    assert result["written"] and "refused" not in result, result
    reports = {r["file"]: r for r in result["diagnostics_after"]}
    assert reports["a.fake"]["introduced"] == [] and "partial" not in reports["a.fake"]
    # the others checked are bounded, each partial for itself, none blamed for its errors
    unanswered = [r for f, r in reports.items() if f != "a.fake"]
    assert 0 < len(unanswered) <= OTHER_FILES
    for report in unanswered:
        assert report["partial_servers"] == ["fake"] and report["introduced"] == []
    # an error in the edited file is still refused
    result = await client.tool("edit_file", path="a.fake", content="good\nbad\n", mode="safe")
    assert result["refused"] and not result["written"]
    assert [d["message"] for d in result["diagnostics_after"][0]["introduced"]] == ["bad line 2"]
