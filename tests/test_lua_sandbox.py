"""Escapes from the Lua sandbox fail, limits hold, and the actor stays healthy after each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import lupa.lua54
import pytest
import trio

from codeward.daemon.lua import LuaActor
from codeward.protocol.errors import ErrorKind, ToolError
from tests.test_lua_actor import RecordingHost, run, start_actor

HEALTH_CHECK = "local t = {} for i = 1, 10 do t[i] = i * i end return {t[10], ('ok'):upper(), x}"


async def assert_healthy(actor: LuaActor) -> None:
    """A simple eval after the attempt returns the right answer (and sees no leftovers)."""
    assert await run(actor, HEALTH_CHECK) == [100, "OK"]


@pytest.fixture
async def actor(nursery: trio.Nursery) -> AsyncIterator[LuaActor]:
    yield await start_actor(nursery, cpu_seconds=0.05, memory_mb=16)


async def expect_error(actor: LuaActor, source: str, kind: ErrorKind) -> ToolError:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert info.value.kind is kind, info.value.message
    await assert_healthy(actor)
    return info.value


# --- nothing of Python or the host's globals is reachable ----------------------------


@pytest.mark.parametrize(
    "source",
    [
        "return python.eval('1')",
        "return python.builtins.open",
        "return python.import_module('os')",
        "return _G.python.eval('1')",
        "return rawget(_G, 'python').eval('1')",
        "return package.loadlib('libc.so.6', 'system')",
        "return package.loaded.python",
        "return require('os')",
        "return dofile('/etc/passwd')",
        "return loadfile('/etc/passwd')",
        "return load('return 1')",
        "return io.open('/etc/passwd')",
        "return io.popen('id')",
        "return os.execute('id')",
        "return os.exit(1)",
        "return os.getenv('HOME')",
        "return os.remove('/tmp/x')",
        "return debug.getregistry()",
        "return debug.sethook()",
        "return debug.getupvalue(codeward.git, 1)",
        "return collectgarbage('stop')",
        "return collectgarbage('count')",
        "return string.dump(function() end)",
        "return (''):dump()",
        "return ('').dump(print)",
        "return codeward.git.__class__",
        "return codeward.git.__globals__",
        "return print.__self__",
        "return warn('@on')",
    ],
)
async def test_escape_fails(actor: LuaActor, source: str) -> None:
    error = await expect_error(actor, source, ErrorKind.LUA_ERROR)
    assert "attempt to" in error.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("return python", None),
        ("return rawget(_G, 'python')", None),
        ("return _G == _ENV", True),
        ("return getmetatable('')", False),
        ("return string.dump", None),
        ("return (''). dump", None),
        (
            "return {type(args), args.__class__ == nil, args.__dict__ == nil, "
            "getmetatable(args) == nil}",
            ["table", True, True, True],
        ),
        ("return getmetatable(codeward.git) == nil", True),
        (
            "local r = codeward.git('status') return {type(r), r.__class__ == nil, r.items == nil}",
            ["table", True, True],
        ),
        ("return type(codeward.null)", "table"),
        ("return getmetatable(codeward.null)", False),
        ("local n = 0 for k in pairs(_G) do n = n + 1 end return n < 40", True),
        (
            "for _, k in ipairs({'debug', 'io', 'package', 'load', 'require', 'dofile', "
            "'loadfile', 'collectgarbage', 'python', 'warn'}) do "
            "if _G[k] ~= nil then return k end end "
            "for k in pairs(os) do "
            "if k ~= 'time' and k ~= 'clock' and k ~= 'date' then return k end end "
            "return 'clean'",
            "clean",
        ),
    ],
)
async def test_what_a_script_sees(actor: LuaActor, source: str, expected: object) -> None:
    assert await run(actor, source, {}) == expected
    await assert_healthy(actor)


async def test_binary_chunk_is_refused(actor: LuaActor) -> None:
    make_runtime: Any = lupa.lua54.LuaRuntime
    chunk: bytes = make_runtime(encoding=None).eval("string.dump(function() return 'binary' end)")
    assert chunk.startswith(b"\x1bLua")
    error = await expect_error(actor, chunk.decode("latin-1"), ErrorKind.LUA_ERROR)
    assert "binary chunk" in error.message


async def test_environment_cannot_be_used_to_reach_real_globals(actor: LuaActor) -> None:
    source = """
        local seen = {}
        for _, v in pairs({string, table, math, utf8, os, coroutine, codeward}) do
            for k, f in pairs(v) do seen[#seen + 1] = type(f) end
        end
        return {getmetatable(_G), _G._G == _G, select('#', seen) }
    """
    assert await run(actor, source) == {"2": True, "3": 1}


# --- shared state: strings, shared tables, globals -----------------------------------


async def test_string_metatable_is_protected(actor: LuaActor) -> None:
    await expect_error(actor, "getmetatable('').__index = {}", ErrorKind.LUA_ERROR)
    await expect_error(actor, "getmetatable('').__index.upper = nil", ErrorKind.LUA_ERROR)
    await expect_error(actor, "setmetatable('', {})", ErrorKind.LUA_ERROR)
    error = await expect_error(actor, "setmetatable(getmetatable(''), {})", ErrorKind.LUA_ERROR)
    assert "table expected" in error.message


async def test_string_library_changes_stay_in_their_eval(actor: LuaActor) -> None:
    source = """
        string.upper = function() return 'pwned' end
        string.rep = nil
        setmetatable(string, {__index = function() return 'x' end})
        return {string.upper('a'), ('a'):upper(), string.nothing}
    """
    assert await run(actor, source) == ["pwned", "A", "x"]
    assert await run(
        actor, "return {string.upper('a'), ('a'):upper(), string.nothing == nil, ('a'):rep(2)}"
    ) == [
        "A",
        "A",
        True,
        "aa",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "setmetatable(codeward.null, {})",
        "rawset(codeward.null, 'x', 1)",
        "codeward.null.x = 1",
        "setmetatable({}, {__gc = function() while true do end end})",
        "setmetatable({}, {__gc = false})",
    ],
)
async def test_shared_tables_and_finalizers_are_refused(actor: LuaActor, source: str) -> None:
    await expect_error(actor, source, ErrorKind.LUA_ERROR)
    assert await run(actor, "return {codeward.null, rawget(codeward.null, 'x')}") == [None]


async def test_library_tables_are_fresh_per_eval(actor: LuaActor) -> None:
    source = """
        table.insert = nil; math.pi = 3; os.time = nil; coroutine.wrap = nil
        codeward.git = nil; codeward.null = 1; utf8.char = nil
        setmetatable(math, {__index = function() return 'm' end})
        rawset(table, 'x', 1)
        return 'changed'
    """
    assert await run(actor, source) == "changed"
    check = """
        return {type(table.insert), math.pi > 3.14, type(os.time), type(coroutine.wrap),
                type(codeward.git), type(codeward.null), type(utf8.char), math.nothing, table.x}
    """
    assert await run(actor, check) == [
        "function",
        True,
        "function",
        "function",
        "function",
        "table",
        "function",
    ]


async def test_globals_do_not_leak_between_evals(actor: LuaActor) -> None:
    assert (
        await run(actor, "x = 42; _G.y = 1; rawset(_G, 'z', 2); _ENV.w = 3; args = 5; return x")
        == 42
    )
    assert (
        await run(actor, "return {x == nil, y == nil, z == nil, w == nil, args == nil}")
        == [True] * 5
    )
    await assert_healthy(actor)


async def test_two_sessions_share_nothing(nursery: trio.Nursery) -> None:
    one = await start_actor(nursery)
    two = await start_actor(nursery)
    await run(one, "shared = 'one'; string.upper = function() return 'pwned' end")
    assert await run(one, "return {string.upper('a'), ('a'):upper()}") == ["A", "A"]
    assert await run(two, "return {shared == nil, string.upper('a'), ('a'):upper()}") == [
        True,
        "A",
        "A",
    ]
    await expect_error(one, "getmetatable('').__index = {}", ErrorKind.LUA_ERROR)
    await assert_healthy(two)


# --- CPU ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "while true do end",
        "repeat until false",
        "local function f() return f() end return f()",
        "pcall(function() while true do end end) while true do end",
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "xpcall(function() while true do end end, function(e) while true do end end) "
        "return 'escaped'",
        "xpcall(function() error('x') end, function(e) while true do end end) return 'escaped'",
        "local co = coroutine.create(function() while true do end end) "
        "while true do coroutine.resume(co) end",
        "coroutine.wrap(function() while true do end end)()",
        "while true do pcall(coroutine.wrap(function() while true do end end)) end",
        "local co = coroutine.create(function() while true do pcall(error, 'x') end end) "
        "while true do local ok, e = coroutine.resume(co) end",
        "local co co = coroutine.wrap(function() while true do pcall(co) end end) co()",
        "while true do local ok = coroutine.close(coroutine.create(function() end)) end",
        "local t = setmetatable({}, {__index = function(t, k) while true do end end}) return t.x",
        "local t = setmetatable({}, {__close = function() while true do end end}) "
        "do local x <close> = t end",
        "local s = string.rep('a', 1000) while true do s:find('b') end",
        "table.sort({3, 2, 1, 5, 4}, function(a, b) while true do end end)",
        "for w in string.gmatch('a b c', '%a+') do while true do end end",
        "string.gsub('aaa', 'a', function() while true do end end)",
        "while true do error = nil end",
    ],
)
async def test_cpu_limit(actor: LuaActor, source: str) -> None:
    error = await expect_error(actor, source, ErrorKind.LUA_TIMEOUT)
    assert error.details["limit"] == "cpu_seconds"


async def test_cpu_limit_is_per_eval_and_counts_only_lua(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, cpu_seconds=0.3)
    host = RecordingHost()
    busy = "local s = 0 for i = 1, 2e5 do s = s + i end return s"
    for _ in range(3):  # many short evals each get a fresh budget
        assert await run(actor, busy, host=host) == sum(range(1, 200001))
    many_calls = "for i = 1, 30 do codeward.git('status') end return 'done'"
    assert await run(actor, many_calls, host=host) == "done"


async def test_runtime_is_replaced_after_a_limit(actor: LuaActor) -> None:
    assert await run(actor, "return 1") == 1
    built = actor.built
    await expect_error(actor, "while true do end", ErrorKind.LUA_TIMEOUT)
    assert actor.built == built + 1  # the worker threw its runtime away and made a new one
    assert await run(actor, "return 1") == 1
    assert actor.built == built + 1 and actor.workers == 1


# --- memory and recursion -----------------------------------------------------------


@pytest.fixture
async def roomy(nursery: trio.Nursery) -> AsyncIterator[LuaActor]:
    """Enough CPU that the memory cap is what stops these scripts."""
    yield await start_actor(nursery, cpu_seconds=5, memory_mb=16)


@pytest.mark.parametrize(
    "source",
    [
        "return string.rep('x', 2^30)",
        "return ('xy'):rep(2^28)",
        "local ok, e = pcall(string.rep, 'x', 2^30) return {ok, e}",
        "local s = 'x' while true do s = s .. s end",
        "local s = 'x' while true do pcall(function() s = s .. s end) end",
        "local t = {} for i = 1, 1e9 do t[i] = {} end",
        "local t = {} local i = 0 while true do i = i + 1 t['k' .. i] = i end",
        "local t = {} while true do t[#t + 1] = string.rep('y', 1e5) end",
        "coroutine.wrap(function() local t = {} while true do t[#t + 1] = {1, 2, 3} end end)()",
        "xpcall(function() local t = {} while true do t[#t + 1] = {} end end, "
        "function(e) return e end) return 'escaped'",
        "return table.concat(setmetatable({}, "
        "{__index = function() return ('z'):rep(1e6) end}), '', 1, 1e6)",
    ],
)
async def test_memory_limit(roomy: LuaActor, source: str) -> None:
    error = await expect_error(roomy, source, ErrorKind.LUA_MEMORY)
    assert error.details["limit"] == "memory_mb"


@pytest.mark.parametrize(
    "source",
    [
        "local function f() return 1 + f() end return f()",
        "local function f(...) return f(1, ...) end return f()",
        "local function f() pcall(f) return 1 + f() end return f()",
        "local function f() pcall(f) return f() end return f()",
        "local function f() xpcall(f, f) return 1 + f() end return f()",
        "local function f() pcall(coroutine.wrap(f)) return 1 + f() end return f()",
        "local function f() coroutine.resume(coroutine.create(f)) return 1 + f() end return f()",
        "local function f() coroutine.wrap(f)() end f()",
        "local function f() "
        "return setmetatable({}, {__index = function(t, k) return f()[k] end}) end "
        "return f().x",
    ],
)
async def test_unbounded_recursion(nursery: trio.Nursery, source: str) -> None:
    actor = await start_actor(nursery, cpu_seconds=0.3, memory_mb=64)
    with trio.fail_after(5):  # unwinding after the limit must be quick too
        with pytest.raises(ToolError) as info:
            await run(actor, source)
    assert info.value.kind in (ErrorKind.LUA_ERROR, ErrorKind.LUA_MEMORY, ErrorKind.LUA_TIMEOUT)
    await assert_healthy(actor)


async def test_protected_call_nesting_is_capped(actor: LuaActor) -> None:
    source = """
        local function f(n)
            if n == 0 then return 0 end
            local ok, v = pcall(f, n - 1)
            if not ok then error(v, 0) end
            return v + 1
        end
        return f(...)
    """
    assert await run(actor, source, 90) == 90
    with pytest.raises(ToolError) as info:
        await run(actor, source, 150)
    assert "nested more than 100 deep" in info.value.message
    await assert_healthy(actor)


async def test_big_host_result_over_the_memory_cap(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, memory_mb=1)

    async def huge(subcommand: str, args: list[str], opts: dict[str, object]) -> dict[str, object]:
        return {"output": "x" * (4 * 1024 * 1024), "lines": ["line"] * 50000}

    with pytest.raises(ToolError) as info:
        await run(
            actor, "local r = codeward.git('log') return #r.output", host=RecordingHost(git=huge)
        )
    assert info.value.kind is ErrorKind.LUA_MEMORY
    await assert_healthy(actor)
