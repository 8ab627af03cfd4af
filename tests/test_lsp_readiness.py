"""Readiness per server: answers wait until the server has loaded, or say `partial`.

The fake server scripts each real server's loading sequence (tests/fake_lsp_server.py):
rust-analyzer's progress gap before `quiescent`, intelephense's `[]` before its indexing,
tsserver's "No Project" while no file is open, jdtls' `ServiceReady`. Each answers wrongly
(null hovers, empty diagnostics, no symbols) until it has loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.lsp.readiness import (
    Indexed,
    OpenFiles,
    Project,
    Quiescent,
    Readiness,
    ServiceReady,
    readiness_for,
)
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from tests.lsp_support import fake_config, fake_server, running

BAD = "good\nbad line\n"


def hover_params(ctx: DocumentContext) -> dict[str, Any]:
    return {"textDocument": ctx.text_document, "position": ctx.position(1, 1)}


def loading(mode: str, ready_when: str, **lsp: Any) -> Any:
    server = msgspec.structs.replace(fake_server(mode), ready_when=ready_when)
    return fake_config({"fake": server}, **lsp)


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text(BAD)
    return path


async def hover(manager: LanguageService, path: Path) -> Any:
    return await manager.request(path, "textDocument/hover", hover_params)


# -- the policies on their own -------------------------------------------------------------


def test_quiescent_ignores_progress_gaps() -> None:
    policy = readiness_for("quiescent")
    assert isinstance(policy, Quiescent) and policy.strict
    assert not policy.ready({}, 1)  # nothing active, but it never said quiescent
    policy.observe("experimental/serverStatus", {"health": "ok", "quiescent": False})
    assert not policy.ready({}, 1)
    policy.observe("experimental/serverStatus", {"health": "warning", "quiescent": True})
    assert policy.ready({"t": "Indexing"}, 0)  # quiescence covers its own progress
    policy.observe("experimental/serverStatus", {"quiescent": False})  # busy again
    assert not policy.ready({}, 1)
    policy.observe("experimental/serverStatus", None)  # malformed: no change
    assert not policy.ready({}, 1)


def test_indexed_drops_what_came_before_indexing() -> None:
    policy = readiness_for("indexed")
    assert isinstance(policy, Indexed)
    assert not policy.counts() and not policy.ready({}, 1)
    assert not policy.observe("$/progress", {"token": 1, "value": {"kind": "begin", "title": "x"}})
    assert not policy.observe("$/progress", {"token": 2, "value": "partial result"})
    assert not policy.observe("$/progress", {"token": None, "value": {"kind": "begin"}})
    begin = {"kind": "begin", "title": "Intelephense (1.18.5) indexing"}
    assert policy.observe("$/progress", {"token": "i", "value": begin})
    assert policy.counts() and not policy.ready({}, 1)
    assert not policy.observe("$/progress", {"token": 1, "value": {"kind": "end"}})
    assert policy.observe("$/progress", {"token": "i", "value": {"kind": "end"}})
    assert policy.ready({}, 1) and not policy.ready({1: "x"}, 1)


def test_project_needs_an_open_loaded_file() -> None:
    policy = readiness_for("project")
    assert isinstance(policy, Project) and policy.needs_document
    assert not policy.ready({}, 1)
    assert "textDocument/publishDiagnostics" in policy.listens
    policy.observe("textDocument/publishDiagnostics", {"uri": "file:///a.ts", "diagnostics": []})
    assert policy.listens == frozenset()  # nothing more to learn
    assert policy.ready({}, 1) and not policy.ready({}, 0) and not policy.ready({1: "x"}, 1)


def test_service_ready_and_the_default() -> None:
    policy = readiness_for("service_ready")
    assert isinstance(policy, ServiceReady)
    assert not policy.observe("language/status", {"type": "Started"})
    assert not policy.ready({}, 1)
    assert policy.observe("language/status", {"type": "ServiceReady"})
    assert policy.ready({}, 0) and not policy.ready({1: "Building"}, 0)
    default = readiness_for("no such kind")
    assert type(default) is Readiness and not default.strict and default.counts()
    assert default.ready({}, 0) and not default.ready({1: "x"}, 0)
    assert not default.observe("anything", {})


# -- through the manager, on the scripted servers -----------------------------------------


async def test_quiescent_server_is_waited_for(tmp_path: Path, doc: Path) -> None:
    """rust-analyzer: a pull answered before `quiescent` is empty, hovers are null, and its
    progress has a gap before it loads; the answers wait for its server status."""
    async with running(tmp_path, loading("quiescent", "quiescent")) as (manager, _):
        with trio.fail_after(10):
            found = await manager.diagnostics(doc)
            assert [d.message for d in found.diagnostics] == ["bad line 2"]
            assert not found.partial
            answer = await hover(manager, doc)
        assert answer.result["contents"]["value"] == "hover" and not answer.partial
        assert manager.pool.servers["fake"].ready


async def test_never_ready_answers_are_partial(tmp_path: Path, doc: Path) -> None:
    config = loading("quiescent-never", "quiescent", ready_timeout=0.5, settle_timeout=0.5)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10):
            found = await manager.diagnostics(doc)
            answer = await hover(manager, doc)
            symbols = await manager.workspace_request(
                "workspace/symbol", {"query": "good"}, languages=["fake"]
            )
        assert found.partial and found.diagnostics == []
        assert answer.partial and answer.result is None
        assert [a.partial for a in symbols] == [True]


async def test_placeholder_before_indexing_is_no_answer(tmp_path: Path, doc: Path) -> None:
    """intelephense: `[]` published at didOpen, before its indexing begins, is dropped."""
    async with running(tmp_path, loading("indexing", "indexed")) as (manager, _):
        with trio.fail_after(10):
            found = await manager.diagnostics(doc)
            assert [d.message for d in found.diagnostics] == ["bad line 2"]
            assert not found.partial
            answer = await hover(manager, doc)
        assert answer.result["contents"]["value"] == "hover"
        doc.write_text("bad\n")  # fresh after an edit on disk
        with trio.fail_after(10):
            again = await manager.diagnostics(doc)
        assert [d.message for d in again.diagnostics] == ["bad line 1"]


async def test_workspace_symbols_first_open_a_file(tmp_path: Path, doc: Path) -> None:
    """tsserver: `workspace/symbol` as a session's first call has no project ("No
    Project."); a file of the language is opened and loaded first."""
    async with running(tmp_path, loading("project", "project")) as (manager, _):
        with trio.fail_after(10):
            answers = await manager.workspace_request(
                "workspace/symbol", {"query": "good"}, languages=["fake"]
            )
        assert [(a.partial, [s["name"] for s in a.result]) for a in answers] == [(False, ["good"])]
        assert [d.uri for d in manager.pool.servers["fake"].open_documents()] == [doc.as_uri()]


async def test_service_ready_is_waited_for(tmp_path: Path, doc: Path) -> None:
    async with running(tmp_path, loading("service-ready", "service_ready")) as (manager, _):
        with trio.fail_after(10):
            answer = await hover(manager, doc)
            found = await manager.diagnostics(doc)
        assert answer.result["contents"]["value"] == "hover" and not answer.partial
        assert [d.message for d in found.diagnostics] == ["bad line 2"]


def test_open_files_are_all_it_knows() -> None:
    policy = readiness_for("open_files")
    assert isinstance(policy, OpenFiles) and policy.needs_document and not policy.complete
    assert not policy.ready({}, 0) and policy.ready({}, 1) and not policy.ready({1: "x"}, 1)


async def test_workspace_answers_of_open_files_only_are_partial(tmp_path: Path, doc: Path) -> None:
    """clangd without a background index: workspace symbols know the open files only."""
    async with running(tmp_path, loading("project", "open_files")) as (manager, _):
        with trio.fail_after(10):
            answers = await manager.workspace_request(
                "workspace/symbol", {"query": "good"}, languages=["fake"]
            )
        assert [a.partial for a in answers] == [True]
        assert manager.indexing("fake") is False  # ready: partial for what it covers
