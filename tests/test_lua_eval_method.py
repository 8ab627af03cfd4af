"""`lua/eval` through the daemon: results, args, host calls, errors, limits, isolation."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config, LuaConfig
from tests.conftest import OpenClient
from tests.rpc import RpcClient, RpcFailure


async def test_result_and_args(client: RpcClient) -> None:
    result = await client.call(
        "lua/eval",
        {"source": "local a = ... ; return {sum = a[1] + a[2], list = {1, 2}}", "args": [2, 3]},
    )
    assert result == {"result": {"sum": 5, "list": [1, 2]}, "logs": []}
    assert (
        await client.call("lua/eval", {"source": "return args.name", "args": {"name": "x"}})
    ) == {"result": "x", "logs": []}
    assert (await client.call("lua/eval", {"source": "return nil"})) == {"result": None, "logs": []}


async def test_codeward_call_reaches_registered_tools(client: RpcClient, project: Path) -> None:
    (project / "a.txt").write_text("x\n")
    source = """
    local ok, err = pcall(codeward.call, "get_hover_info",
                          {path = "a.txt", line = 1, character = 1})
    return {ok = ok, kind = err.kind}
    """
    result = (await client.call("lua/eval", {"source": source}))["result"]
    assert result == {"ok": False, "kind": "unsupported_file_type"}
    with pytest.raises(RpcFailure) as info:
        await client.call("lua/eval", {"source": 'return codeward.call("no_such_tool", {})'})
    assert info.value.kind == "invalid_arguments"  # the host's own error, unchanged


async def test_errors_are_lua_errors(client: RpcClient) -> None:
    for source, kind in [
        ("return (", "lua_error"),
        ("error('boom')", "lua_error"),
        ("return function() end", "lua_error"),
        ("return 0/0", "lua_error"),
        ("return python", None),
        ("return string.dump", None),
        ("return os.getenv", None),
    ]:
        if kind is None:
            assert (await client.call("lua/eval", {"source": source}))["result"] is None
            continue
        with pytest.raises(RpcFailure) as info:
            await client.call("lua/eval", {"source": source})
        assert info.value.code == -32000 and info.value.kind == kind


async def test_bad_params(client: RpcClient, open_client: OpenClient) -> None:
    with pytest.raises(RpcFailure) as info:
        await client.call("lua/eval", {})
    assert info.value.code == -32602
    with pytest.raises(RpcFailure) as info:
        await client.call("lua/eval", {"source": 5})
    assert info.value.code == -32602
    bare = await open_client()
    with pytest.raises(RpcFailure) as info:
        await bare.call("lua/eval", {"source": "return 1"})
    assert info.value.kind == "no_session"


class TestLimits:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(lua=LuaConfig(cpu_seconds=0.2, memory_mb=16))

    async def test_limits_throw_the_runtime_away_and_the_daemon_serves_on(
        self, client: RpcClient
    ) -> None:
        with trio.fail_after(20):
            for source, kind in [
                ("while true do end", "lua_timeout"),
                ("pcall(function() while true do end end)", "lua_timeout"),
                ("local t = {} for i = 1, 1e9 do t[i] = i end", "lua_memory"),
                ("return ('x'):rep(64 * 1024 * 1024)", "lua_memory"),
            ]:
                with pytest.raises(RpcFailure) as info:
                    await client.call("lua/eval", {"source": source})
                assert info.value.kind == kind, source
                assert (await client.call("lua/eval", {"source": "return 1 + 1"}))["result"] == 2


async def test_sessions_do_not_share_globals(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    a = await open_client(project)
    b = await open_client(other_root)
    tamper = "leak = 1; return pcall(function() getmetatable('').__index = nil end)"
    assert (await a.call("lua/eval", {"source": tamper}))["result"] is False
    assert (await a.call("lua/eval", {"source": "return leak"}))["result"] is None
    assert (await b.call("lua/eval", {"source": "return leak"}))["result"] is None
    assert (await b.call("lua/eval", {"source": "return ('abc'):upper()"}))["result"] == "ABC"


async def test_cancelled_eval(client: RpcClient) -> None:
    async with trio.open_nursery() as nursery:
        response: dict = {}

        async def slow() -> None:
            response.update(
                await client.request(
                    "lua/eval", {"source": "codeward.log('started') while true do end"}, id="slow"
                )
            )

        nursery.start_soon(slow)
        await client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "slow"}})
    assert response["error"]["code"] in (-32800, -32000)
    assert (await client.call("lua/eval", {"source": "return 3"}))["result"] == 3


async def test_logs_reach_the_caller(client: RpcClient) -> None:
    source = "codeward.log('a', 1, true) print('b') return 2"
    assert await client.call("lua/eval", {"source": source}) == {
        "result": 2,
        "logs": ["a\t1\ttrue", "b"],
    }
    with pytest.raises(RpcFailure) as info:  # logged before the error: in the error's data
        await client.call("lua/eval", {"source": "codeward.log('before') error('boom')"})
    assert info.value.kind == "lua_error" and info.value.data["logs"] == ["before"]
    flood = "for i = 1, 200 do codeward.log(('x'):rep(1000)) end return 1"
    logs = (await client.call("lua/eval", {"source": flood}))["logs"]
    assert 60 <= len(logs) <= 70 and "daemon log" in logs[-1]  # capped near 64 KiB
    assert (await client.call("lua/eval", {"source": "return 1"}))["logs"] == []  # per eval
