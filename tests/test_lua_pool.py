"""The Lua actor's pool: evals run at once, each in its own runtime, under its own limits."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from codeward.daemon.lua import actor as actor_module
from codeward.protocol.errors import ErrorKind, ToolError
from tests.test_lua_actor import RecordingHost, run, start_actor


class Gate:
    """A git host call that parks until released, counting the evals parked in it."""

    def __init__(self) -> None:
        self.inside = 0
        self.entered = trio.Event()
        self.release = trio.Event()
        self._want = 0

    def expect(self, count: int) -> trio.Event:
        self._want, self.entered = count, trio.Event()
        if self.inside >= count:
            self.entered.set()
        return self.entered

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        self.inside += 1
        if self.inside >= self._want:
            self.entered.set()
        try:
            await self.release.wait()
        finally:
            self.inside -= 1
        return {"exit_code": 0, "output": subcommand}


async def test_evals_blocked_in_host_calls_do_not_hold_up_others(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, runtimes=8)
    gate = Gate()
    host = RecordingHost(git=gate.git)
    results: list[Any] = []

    async def parked(name: str) -> None:
        results.append(await run(actor, f"return codeward.git('{name}').output", host=host))

    with trio.fail_after(10):
        async with trio.open_nursery() as inner:
            for name in ("a", "b", "c", "d"):
                inner.start_soon(parked, name)
            await gate.expect(4).wait()  # four evals inside a host call at the same time
            assert actor.workers == 4  # one runtime each, the warm one included
            # Meanwhile other evals run and answer, in a fifth runtime.
            assert await run(actor, "return 40 + 2") == 42
            assert actor.workers == 5
            assert await run(actor, "x = 'mine' return x") == "mine"
            gate.release.set()
    assert sorted(results) == ["a", "b", "c", "d"]


async def test_concurrent_evals_keep_their_own_limits(nursery: trio.Nursery) -> None:
    """A script that hits a limit next to a parked eval fails alone; the parked one finishes,
    its globals intact, and the broken runtime is rebuilt."""
    actor = await start_actor(nursery, runtimes=4, cpu_seconds=0.3, memory_mb=16)
    gate = Gate()
    host = RecordingHost(git=gate.git)
    parked_result: list[Any] = []
    parked_source = "secret = 'kept' local r = codeward.git('x') return {secret, r.output, other}"

    async def parked() -> None:
        parked_result.append(await run(actor, parked_source, host=host))

    with trio.fail_after(20):
        async with trio.open_nursery() as inner:
            inner.start_soon(parked)
            await gate.expect(1).wait()
            built = actor.built
            for source, kind in [
                ("other = 1 while true do end", ErrorKind.LUA_TIMEOUT),
                ("other = 2 local t = {} for i = 1, 1e8 do t[i] = i end", ErrorKind.LUA_MEMORY),
                ("other = 3 return string.rep('x', 2^30)", ErrorKind.LUA_MEMORY),
            ]:
                with pytest.raises(ToolError) as info:
                    await run(actor, source)
                assert info.value.kind is kind, source
            # a second worker's runtime, then a new one after each limit
            assert actor.built == built + 1 + 3 and actor.workers == 2
            assert await run(actor, "return secret") is None  # globals are per eval
            gate.release.set()
    assert parked_result == [["kept", "x"]]


async def test_the_cap_queues_evals_beyond_it(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, runtimes=2)
    gate = Gate()
    host = RecordingHost(git=gate.git)
    done: list[str] = []

    async def one(name: str, source: str) -> None:
        await run(actor, source, host=host)
        done.append(name)

    with trio.fail_after(10):
        async with trio.open_nursery() as inner:
            inner.start_soon(one, "p1", "codeward.git('p')")
            inner.start_soon(one, "p2", "codeward.git('p')")
            await gate.expect(2).wait()
            inner.start_soon(one, "queued", "return 1")
            await trio.testing.wait_all_tasks_blocked()
            assert done == [] and actor.workers == 2  # no third runtime: it waits
            gate.release.set()
    assert sorted(done) == ["p1", "p2", "queued"]


async def test_extra_workers_retire_when_idle(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    actor = await start_actor(nursery, runtimes=4)
    gate = Gate()
    host = RecordingHost(git=gate.git)
    async with trio.open_nursery() as inner:
        for _ in range(3):
            inner.start_soon(run, actor, "codeward.git('p')", None, host)
        await gate.expect(3).wait()
        gate.release.set()
    assert actor.workers >= 3
    await trio.sleep(actor_module.RETIRE_AFTER + 1)
    assert actor.workers == 1  # the warm one stays
    assert await run(actor, "return 'still here'") == "still here"


async def test_cancelled_while_waiting_for_a_runtime(nursery: trio.Nursery) -> None:
    """An eval cancelled before any runtime took it never runs, and the pool's count of free
    runtimes stays right: the next eval still gets one."""
    actor = await start_actor(nursery, runtimes=1)
    gate = Gate()
    host = RecordingHost(git=gate.git)
    never = RecordingHost()
    with trio.fail_after(10):
        async with trio.open_nursery() as inner:
            inner.start_soon(run, actor, "codeward.git('p')", None, host)
            await gate.expect(1).wait()
            waiting = trio.CancelScope()

            async def queued() -> None:
                with waiting:
                    await actor.eval("codeward.log('never') return 1", None, never)

            inner.start_soon(queued)
            await trio.testing.wait_all_tasks_blocked()
            waiting.cancel()
            await trio.testing.wait_all_tasks_blocked()
            gate.release.set()
    assert never.logs == []
    assert await run(actor, "return 2") == 2
