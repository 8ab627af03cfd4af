"""No Lua pattern call stalls the daemon: a long character class or frontier set costs its
length at each test, so calls that would loop for seconds in one C call (where the CPU hook
cannot fire) are refused at once, while another client keeps being answered within 100 ms;
and an eval's `lua_timeout` comes at its CPU deadline, not one long C call later."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig, LuaConfig
from tests.conftest import OpenClient
from tests.rpc import RpcClient, RpcFailure

CPU_SECONDS = 0.3
ANSWER_WITHIN = 0.1  # seconds the other client may wait for any answer

LONG_SET = "('b'):rep(8e4)"
CLASS = "local c = '[' .. ('b'):rep(400) .. 'a]'"
STALLS = [
    # each one C call of several seconds before the guard counted a set by its length
    f"return string.find(('a'):rep(8e4), '[' .. {LONG_SET} .. ']')",
    f"return string.match(('a'):rep(8e4), '[' .. {LONG_SET} .. ']')",
    f"return ('a'):rep(8e4):find('[^' .. {LONG_SET} .. ']x')",
    f"return string.gsub(('a'):rep(8e4), '%f[' .. {LONG_SET} .. ']', '')",
    f"return ('a'):rep(8e4):gsub('[^' .. {LONG_SET} .. ']', 'x')",
    f"for x in ('a'):rep(8e4):gmatch('[' .. {LONG_SET} .. ']') do end",
    "return ('.'):rep(8e4):find('[' .. ('%w'):rep(4e4) .. ']')",
    # quantifiers over a class, nested too: n^2/2 positions, each testing 400 bytes
    f"{CLASS} return ('a'):rep(1400):find(c .. '*x')",
    f"{CLASS} return ('a'):rep(2000):match('^' .. c .. '-' .. c .. '-x')",
    f"{CLASS} return ('a'):rep(1400):gsub(c .. '-x', '')",
]


@pytest.fixture
def daemon_config() -> Config:
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        lua=LuaConfig(cpu_seconds=CPU_SECONDS, memory_mb=64),
    )


async def _latencies_while(other: RpcClient, done: trio.Event) -> list[float]:
    """Ask `daemon/status` over and over until `done`; how long each answer took."""
    waits: list[float] = []
    while not done.is_set():
        asked = trio.current_time()
        with trio.fail_after(10):
            await other.call("daemon/status")
        waits.append(trio.current_time() - asked)
    return waits


async def _run_beside(first: RpcClient, other: RpcClient, source: str) -> tuple[Any, list[float]]:
    """Run `source` on `first` while `other` keeps asking; its answer and `other`'s waits."""
    await other.call("daemon/status")  # connected and answered once before the eval
    done = trio.Event()
    answer: dict[str, Any] = {}
    waits: list[float] = []

    async def evaluate() -> None:
        try:
            answer["response"] = await first.request("lua/eval", {"source": source})
        finally:
            done.set()

    async def watch() -> None:
        waits.extend(await _latencies_while(other, done))

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await trio.sleep(0)  # the watcher's first request goes out first
            nursery.start_soon(evaluate)
    return answer["response"], waits


@pytest.mark.parametrize("source", STALLS)
async def test_a_costly_pattern_stalls_no_other_client(
    open_client: OpenClient, project: Path, source: str
) -> None:
    first = await open_client(project)
    other = await open_client(project)
    response, waits = await _run_beside(first, other, source)
    error = response["error"]
    assert error["data"]["kind"] == "lua_error", error
    assert "pattern too costly for a subject of" in error["message"]
    assert "(the limit is 1e+07)" in error["message"]  # names the limit it would pass
    assert waits, "the other client was never answered while the eval ran"
    assert max(waits) < ANSWER_WITHIN, waits


async def _cpu_until_timeout(client: RpcClient, source: str) -> float:
    """The CPU seconds the process spent on `source`, which must end in `lua_timeout`.

    CPU time, not wall time: the limit counts CPU time (and the machine may be loaded)."""
    started = time.process_time()
    with trio.fail_after(60), pytest.raises(RpcFailure) as info:
        await client.call("lua/eval", {"source": source})
    assert info.value.kind == "lua_timeout", info.value.message
    assert info.value.data["limit"] == "cpu_seconds"
    return time.process_time() - started


async def test_lua_timeout_comes_at_the_deadline(client: RpcClient) -> None:
    # Each call is refused now; before, each was one C call of seconds past the CPU limit.
    source = (
        "local s, set = ('a'):rep(2e4), '[' .. ('b'):rep(2e4) .. ']' "
        "while true do pcall(string.find, s, set) end"
    )
    assert await _cpu_until_timeout(client, source) < CPU_SECONDS + 0.2


async def test_allowed_class_calls_end_near_the_deadline(client: RpcClient) -> None:
    # The costliest calls still allowed (about the step budget each) in a loop: the CPU
    # limit stops the loop within one such call of its deadline.
    source = (
        "local s, set = ('a'):rep(1e4), '[' .. ('%d'):rep(450) .. ']' while true do s:find(set) end"
    )
    assert await _cpu_until_timeout(client, source) < CPU_SECONDS + 0.2


async def test_legitimate_class_patterns_still_work(client: RpcClient) -> None:
    source = r"""
        local text = ('alpha_1, beta; gamma-2\n'):rep(2^20 // 23)    -- 1 MiB
        local words = 0
        for _ in text:gmatch('[%w_]+') do words = words + 1 end
        local cleaned, n = text:gsub('[,;]', '')
        local starts = select(2, text:gsub('%f[%w]%w+', ''))
        local first = text:match('[%a_][%w_]*')
        local dashed = text:find('[%-]%d')
        local vowels = select(2, text:gsub('[aeiouAEIOU]', '*'))
        local hex = ('0123456789abcdef'):rep(4096):find('[^0-9a-fA-F]')
        return {words, n, #cleaned, starts, first, dashed, vowels, hex == nil}
    """
    with trio.fail_after(10):
        result = (await client.call("lua/eval", {"source": source}))["result"]
    lines = 2**20 // 23
    assert result == [4 * lines, 2 * lines, 21 * lines, 5 * lines, "alpha_1", 21, 6 * lines, True]
