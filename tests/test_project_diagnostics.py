"""Project diagnostics on a generated project of a few hundred modules, with real
basedpyright and ruff: the type checker's errors are in the answer, each server says
what it checked, a server that reports only open files (ruff) checks the whole project in
one call (batches while the call's time lasts, with progress), a slow one is completed by
the next calls, no batch starts near a server's memory cap, and the documents the daemon
opened for it are closed again."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import Config, LanguageConfig, LspConfig
from codeward.daemon.lsp.defaults import HEAP_SHARE, default_servers
from tests.large_project import generate, group_cpu
from tests.lsp_support import needs, real_config, running

MODULES = 200
BUDGET = 90  # files opened per server per batch
IDLE_WINDOW = 2.0  # seconds over which the type checker's CPU is measured after an answer
TOTAL = MODULES + math.ceil(MODULES / 50)  # the modules and their packages' __init__


def ruff_only(**lsp: Any) -> Config:
    """Python served by ruff alone, with these `lsp` settings."""
    ruff = default_servers()["ruff"]
    return Config(
        lsp=msgspec.structs.replace(LspConfig(), **lsp),
        languages={"python": LanguageConfig(patterns=["*.py", "*.pyi"], servers=["ruff"])},
        servers={"ruff": ruff},
    )


def batches(progress: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The daemon's own progress reports of a folder's batches: (kind, message)."""
    return [(p["kind"], p["message"]) for p in progress if p.get("title") == "project diagnostics"]


@needs("basedpyright", "ruff")
async def test_project_diagnostics_include_the_type_checker_and_finish_within_calls(
    tmp_path: Path,
) -> None:
    root = tmp_path / "large"
    wrong = set(generate(root, MODULES))
    config = real_config(folder_diagnostics_files=BUDGET)
    async with running(root, config) as (manager, progress):
        seen: list[dict[str, tuple[int, int, bool]]] = []
        for _ in range(3):
            with trio.fail_after(120):
                answer = await manager.workspace_diagnostics()
            servers = {s.name: (s.files_checked, s.files_total, s.complete) for s in answer.servers}
            seen.append(servers)
            assert sorted(servers) == ["basedpyright", "ruff"] and answer.errors == []
            typed = {
                d.file for d in answer.diagnostics if d.source == "basedpyright" and d.severity == 1
            }
            assert typed and typed <= wrong  # the type checker's errors, and only real ones
            checked = servers["basedpyright"][0]
            assert servers["basedpyright"][2] or len(typed) <= checked < TOTAL
            # ruff reports only open files: batches of the budget while the call's time
            # lasts, the whole project in the first call
            assert servers["ruff"] == (TOTAL, TOTAL, True)
            assert answer.partial == (not all(s[2] for s in servers.values()))
            assert answer.unchecked == sum(t - c for c, t, _ in servers.values())
            if not answer.partial:
                break
        assert all(s[2] for s in seen[-1].values()) and not answer.partial  # within 3 calls
        assert typed == wrong  # every deliberate error
        first = seen[0]["basedpyright"][0]
        assert all(s["basedpyright"][0] >= first for s in seen)
        # ruff's batches were reported as they ended, up to the whole project
        ruff = [p for p in progress if p.get("server") == "ruff"]
        assert batches(ruff)[0][0] == "begin" and batches(ruff)[-1][0] == "end"
        assert ("report", f"{BUDGET} of {TOTAL} files") in batches(ruff)
        assert batches(ruff)[-1] == ("end", f"{TOTAL} of {TOTAL} files")
        for name in ("basedpyright", "ruff"):  # the daemon opened them: closed again
            assert manager.pool.servers[name].open_documents() == ()
        pid = manager.pool.servers["basedpyright"].pid
        assert pid is not None
        # node runs it with its heap sized to its cap: it empties its type cache below it
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        heap = int(4096 * HEAP_SHARE)
        assert f"NODE_OPTIONS=--max-old-space-size={heap}".encode() in environ
        before = group_cpu(pid)
        await trio.sleep(IDLE_WINDOW)  # a measurement window, not a wait for an event
        assert group_cpu(pid) - before < IDLE_WINDOW / 4  # no analysis left running
        with trio.fail_after(30):
            again = await manager.workspace_diagnostics()  # nothing changed: from memory
        assert {d.file for d in again.diagnostics if d.source == "basedpyright"} == wrong
        assert not again.partial


@needs("ruff")
async def test_batches_stop_at_the_calls_time_and_the_next_call_goes_on(tmp_path: Path) -> None:
    """A deadline that passes during the first batch: each call checks one batch more."""
    root = tmp_path / "large"
    generate(root, MODULES)
    config = ruff_only(folder_diagnostics_files=BUDGET, folder_diagnostics_seconds=0.001)
    calls = math.ceil(TOTAL / BUDGET)
    async with running(root, config) as (manager, progress):
        for call in range(1, calls + 1):
            with trio.fail_after(60):
                answer = await manager.workspace_diagnostics()
            [ruff] = answer.servers
            done = min(call * BUDGET, TOTAL)
            assert (ruff.files_checked, ruff.files_total, ruff.complete) == (
                done,
                TOTAL,
                done == TOTAL,
            )
            assert ruff.stopped == (None if done == TOTAL else "time")
            assert answer.partial == (done < TOTAL)
            assert manager.pool.servers["ruff"].open_documents() == ()
        assert batches(progress)[-2:] == [
            ("report", f"{TOTAL} of {TOTAL} files"),
            ("end", f"{TOTAL} of {TOTAL} files"),
        ]


@needs("ruff")
async def test_no_batch_starts_near_the_servers_memory_cap(tmp_path: Path) -> None:
    """ruff's cap below what it uses already (its watch, which would restart it, not due
    within the test): the folder's answer opens nothing and says why."""
    root = tmp_path / "large"
    generate(root, 20)
    config = ruff_only(check_interval=600.0)
    config.servers["ruff"] = msgspec.structs.replace(config.servers["ruff"], max_rss_mb=1)
    async with running(root, config) as (manager, _):
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics()
        [ruff] = answer.servers
        assert (ruff.files_checked, ruff.complete, ruff.stopped) == (0, False, "memory")
        assert answer.partial and answer.unchecked == ruff.files_total == 21
        server = manager.pool.servers["ruff"]
        assert server.open_documents() == () and server.restarts == 0
