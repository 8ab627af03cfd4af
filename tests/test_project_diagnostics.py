"""Project diagnostics on a generated project of a few hundred modules, with real
basedpyright and ruff: the type checker's errors are in the answer, each server says
what it checked, a budget too small for one call is completed by the next calls, and the
documents the daemon opened for it are closed again."""

from __future__ import annotations

import math
from pathlib import Path

import trio

from tests.large_project import generate, group_cpu
from tests.lsp_support import needs, real_config, running

MODULES = 200
BUDGET = 90  # files opened per server per call
IDLE_WINDOW = 2.0  # seconds over which the type checker's CPU is measured after an answer


@needs("basedpyright", "ruff")
async def test_project_diagnostics_include_the_type_checker_and_finish_within_calls(
    tmp_path: Path,
) -> None:
    root = tmp_path / "large"
    wrong = set(generate(root, MODULES))
    total = MODULES + math.ceil(MODULES / 50)  # the modules and their packages' __init__
    config = real_config(folder_diagnostics_files=BUDGET)
    calls = math.ceil(total / BUDGET)
    async with running(root, config) as (manager, _):
        seen: list[dict[str, tuple[int, int, bool]]] = []
        for call in range(1, calls + 1):
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
            assert servers["basedpyright"][2] or len(typed) <= checked < total
            # ruff reports only open files: a batch of the budget a call, never counted twice
            assert servers["ruff"] == (min(call * BUDGET, total), total, call * BUDGET >= total)
            assert answer.partial == (not all(s[2] for s in servers.values()))
            assert answer.unchecked == sum(t - c for c, t, _ in servers.values())
        assert all(s[2] for s in seen[-1].values()) and not answer.partial
        assert typed == wrong  # every deliberate error, in a bounded number of calls
        first = seen[0]["basedpyright"][0]
        assert all(s["basedpyright"][0] >= first for s in seen)
        for name in ("basedpyright", "ruff"):  # the daemon opened them: closed again
            assert manager.pool.servers[name].open_documents() == ()
        pid = manager.pool.servers["basedpyright"].pid
        assert pid is not None
        before = group_cpu(pid)
        await trio.sleep(IDLE_WINDOW)  # a measurement window, not a wait for an event
        assert group_cpu(pid) - before < IDLE_WINDOW / 4  # no analysis left running
        with trio.fail_after(30):
            again = await manager.workspace_diagnostics()  # nothing changed: from memory
        assert {d.file for d in again.diagnostics if d.source == "basedpyright"} == wrong
        assert not again.partial
