"""A server process shared by the roots of one repository (the scripted server): its
workspace folders follow the roots that use it, a nested root is no folder of its own, the
documents of a root that leaves are closed, the last one out stops it, and the daemon's caps
count it once."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.server import ServerState
from codeward.daemon.lsp.service import LanguageService, SharedServers
from tests.lsp_support import fake_config, fake_server, logged, running

HOVER = {"position": {"line": 0, "character": 0}}


def config(log: Path, folders: bool = True) -> Config:
    server = msgspec.structs.replace(fake_server("ok", log), folders=folders)
    return fake_config({"fake": server}, check_interval=0.05, shutdown_timeout=0.5)


def repository(tmp_path: Path, *names: str) -> list[Path]:
    """A repository at tmp_path/repo with folders `names` in it, each with a.fake."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    roots = [repo / name if name else repo for name in names]
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
        (root / "a.fake").write_text("good\n")
    return [root.resolve() for root in roots]


async def hover(manager: LanguageService, path: Path) -> Any:
    return await manager.request(
        path, "textDocument/hover", lambda ctx: {"textDocument": ctx.text_document, **HOVER}
    )


def folder_events(log: Path) -> list[tuple[list[str], list[str]]]:
    """(added, removed) folder names of each didChangeWorkspaceFolders the server got."""
    return [
        (
            [f["name"] for f in m["params"]["event"]["added"]],
            [f["name"] for f in m["params"]["event"]["removed"]],
        )
        for m in logged(log)
        if m.get("method") == "workspace/didChangeWorkspaceFolders"
    ]


def initialized_folders(log: Path) -> list[list[str]]:
    return [
        [f["name"] for f in m["params"]["workspaceFolders"]]
        for m in logged(log)
        if m.get("method") == "initialize"
    ]


@asynccontextmanager
async def shared_servers() -> AsyncIterator[SharedServers]:
    shared = SharedServers()
    async with trio.open_nursery() as nursery:
        await nursery.start(shared.run)
        yield shared
        nursery.cancel_scope.cancel()


async def test_the_roots_of_a_repository_are_the_folders_of_one_process(tmp_path: Path) -> None:
    log = tmp_path / "log"
    one, two = repository(tmp_path, "one", "two")
    async with shared_servers() as shared:
        async with running(one, config(log), shared=shared) as (first, _):
            await hover(first, one / "a.fake")
            async with running(two, config(log), shared=shared) as (second, _):
                await hover(second, two / "a.fake")  # answered: every earlier message read
                actor = first.pool.servers["fake"]
                assert second.pool.servers["fake"] is actor and actor.roots == [one, two]
                assert initialized_folders(log) == [["one"]]
                assert folder_events(log) == [(["two"], [])]
                assert first.status()[0]["roots"] == [str(one), str(two)]
            # the second root left: its folder is removed and its documents closed
            await hover(first, one / "a.fake")
            assert folder_events(log) == [(["two"], []), ([], ["two"])]
            closed = [
                m["params"]["textDocument"]["uri"]
                for m in logged(log)
                if m.get("method") == "textDocument/didClose"
            ]
            assert closed == [(two / "a.fake").as_uri()]
            assert actor.state is ServerState.RUNNING
        # the last root left: the process stops
        with trio.fail_after(10):
            await actor.stopped.wait()


async def test_a_nested_root_is_no_folder_of_its_own(tmp_path: Path) -> None:
    log = tmp_path / "log"
    top, nested = repository(tmp_path, "", "sub")
    async with (
        shared_servers() as shared,
        running(nested, config(log), shared=shared) as (inner, _),
    ):
        await hover(inner, nested / "a.fake")
        async with running(top, config(log), shared=shared) as (outer, _):
            await hover(outer, top / "a.fake")
            assert initialized_folders(log) == [["sub"]]
            # the parent covers the nested root: one folder for both
            assert folder_events(log) == [(["repo"], ["sub"])]
            await hover(inner, nested / "a.fake")  # its document stays open
        await hover(inner, nested / "a.fake")
        assert folder_events(log)[-1] == (["sub"], ["repo"])
        closes = [m for m in logged(log) if m.get("method") == "textDocument/didClose"]
        assert [m["params"]["textDocument"]["uri"] for m in closes] == [(top / "a.fake").as_uri()]


async def test_a_server_that_serves_one_folder_is_never_shared(tmp_path: Path) -> None:
    log = tmp_path / "log"
    one, two = repository(tmp_path, "one", "two")
    async with (
        shared_servers() as shared,
        running(one, config(log, folders=False), shared=shared) as (first, _),
        running(two, config(log, folders=False), shared=shared) as (second, _),
    ):
        await hover(first, one / "a.fake")
        await hover(second, two / "a.fake")
        assert first.pool.servers["fake"] is not second.pool.servers["fake"]
        assert initialized_folders(log) == [["one"], ["two"]]


async def test_the_caps_count_a_shared_process_once_and_never_park_it(tmp_path: Path) -> None:
    log = tmp_path / "log"
    one, two = repository(tmp_path, "one", "two")
    (other := tmp_path / "other").mkdir()
    (other / "a.fake").write_text("good\n")
    budget = ServerBudget(DaemonConfig(max_servers=1))
    make = functools.partial(running, budget=budget)
    async with (
        shared_servers() as shared,
        make(one, config(log), shared=shared) as (first, _),
        make(two, config(log), shared=shared) as (second, _),
        make(other, config(log), shared=shared) as (third, _),
    ):
        await hover(first, one / "a.fake")
        await hover(second, two / "a.fake")
        assert budget.live() == 1  # one process for both roots
        # Another repository's server is one too many, but the shared one serves two roots
        # (either may be using it): it is not stopped, the new one starts anyway.
        await hover(third, other / "a.fake")
        assert budget.live() == 2
        shared_actor = first.pool.servers["fake"]
        assert shared_actor.state is ServerState.RUNNING and shared_actor.restarts == 0
