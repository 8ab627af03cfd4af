"""The sandbox's cost guards: costly pattern calls are refused before they run, cheap ones and
common idioms on big inputs still work, results match plain Lua, and C loops stay bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import lupa.lua54
import pytest
import trio

from codeward.daemon.lua import LuaActor
from codeward.protocol.errors import ErrorKind, ToolError
from tests.test_lua_actor import run, start_actor
from tests.test_lua_sandbox import assert_healthy


@pytest.fixture
async def actor(nursery: trio.Nursery) -> AsyncIterator[LuaActor]:
    yield await start_actor(nursery, cpu_seconds=2, memory_mb=64)


async def refused(actor: LuaActor, source: str) -> ToolError:
    """The eval fails at once with the guard's message, and the actor keeps serving."""
    with trio.fail_after(2):
        with pytest.raises(ToolError) as info:
            await run(actor, source)
    error = info.value
    assert error.kind is ErrorKind.LUA_ERROR, error.message
    assert "pattern too costly for a subject of" in error.message
    assert "split the text (e.g. by lines) or simplify the pattern" in error.message
    await assert_healthy(actor)
    return error


# --- refused before running ---------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "return ('a'):rep(3e4):find('.-b')",
        "return string.find(string.rep('a', 3e4), '.-b')",
        "return ('a'):rep(1e4):find('.-.-.-b')",
        "return ('a'):rep(1e5):match('(a*)(a*)(a*)b')",
        "return ('a'):rep(1e5):match('^a*a*a*a*b')",
        "return ('a'):rep(1e5):match('^(.*)(.*)(.*)(.*)b')",
        "return ('a'):rep(3e4):gsub('a*b', '')",
        "return ('a'):rep(3e4):gsub('.-x', '%0')",
        "for x in ('a'):rep(3e4):gmatch('a*b') do end",
        "for x in string.gmatch(('a'):rep(1e4), '(.-)(.-)b') do end",
        "local f = ('x').find return f(('a'):rep(3e4), '.-b')",
        "return ('a'):rep(3e4):find('.-b', 1, false)",
        "return ('a'):rep(22):match(('a?'):rep(22) .. ('a'):rep(22))",
        "return ('('):rep(1e5):find('%b()x')",
        "return ('a'):rep(1e4):find('(a*)%1b')",
        "return ('a'):rep(1e5):find('[ab]-[ab]-b')",
        "return ('a'):rep(2e5):match(('a'):rep(100) .. 'b')",
        "return (' '):rep(2e4):match('^%s*(.-)%s*$')",
        "return ('a'):rep(1e7):gsub('%s+', ' ')",
        "return ('a'):rep(3e4):find('.-b$')",
        "return ('a'):rep(3e4):find('.-[b')",  # malformed, but only once the costly prefix matched
    ],
)
async def test_costly_pattern_is_refused_at_once(actor: LuaActor, source: str) -> None:
    await refused(actor, source)


async def test_refusal_names_the_call_and_the_size(actor: LuaActor) -> None:
    error = await refused(actor, "local s = ('a'):rep(30000) local i = s:find('.-b') return i")
    assert "subject of 30000 bytes" in error.message
    assert "string.find with '.-b'" in error.message
    assert "eval:1:" in error.message  # the script's own line


async def test_refusal_is_a_normal_lua_error_for_pcall(actor: LuaActor) -> None:
    source = """
        local ok, e = pcall(string.find, ('a'):rep(3e4), '.-b')
        local ok2, e2 = pcall(function() return ('a'):rep(3e4):gsub('a*b', '') end)
        return {ok, e:match('pattern too costly') ~= nil, ok2, e2:match('string.gsub') ~= nil}
    """
    with trio.fail_after(2):
        assert await run(actor, source) == [False, True, False, True]


async def test_daemon_keeps_serving_other_evals(nursery: trio.Nursery) -> None:
    one = await start_actor(nursery)
    two = await start_actor(nursery)
    with trio.fail_after(2):
        async with trio.open_nursery() as inner:
            inner.start_soon(refused, one, "return ('a'):rep(1e4):find('.-.-.-b')")
            inner.start_soon(assert_healthy, two)


async def test_budget_boundary(actor: LuaActor) -> None:
    # `.-b` on n bytes is estimated at n^2 steps: 3000 bytes are allowed, 3500 are not.
    assert await run(actor, "return ('a'):rep(3000):find('.-b')") is None
    await refused(actor, "return ('a'):rep(3500):find('.-b')")


# --- common idioms stay allowed on big inputs ----------------------------------------


MIB = 1024 * 1024


async def test_lines_of_a_big_text(actor: LuaActor) -> None:
    source = """
        local line = ('0123456789'):rep(9) .. '\\n'
        local text = line:rep((...) // #line)
        local n, total = 0, 0
        for l in text:gmatch('[^\\n]+') do n = n + 1; total = total + #l end
        return {#text >= (...) - #line, n, total}
    """
    lines = MIB // 91
    assert await run(actor, source, MIB) == [True, lines, lines * 90]


async def test_collapse_whitespace_of_a_big_text(actor: LuaActor) -> None:
    source = (
        "local s = ('ab \\t cd\\n  '):rep((...) // 10) "
        "local r, n = s:gsub('%s+', ' ') return {#r, n}"
    )
    assert await run(actor, source, MIB) == [MIB // 10 * 6, MIB // 10 * 2]


async def test_trim_lines_of_a_few_kib(actor: LuaActor) -> None:
    source = """
        local worst = 'x' .. (' '):rep(2000) .. 'y'      -- the backtracking worst case
        local plain = '   ' .. ('word '):rep(600) .. '  '
        return {worst:match('^%s*(.-)%s*$') == worst, #plain:match('^%s*(.-)%s*$')}
    """
    assert await run(actor, source) == [True, 2999]


async def test_plain_find_and_anchored_prefix_on_big_texts(actor: LuaActor) -> None:
    source = """
        local s = ('a'):rep(2^20) .. 'needle'
        local word = ('w'):rep(2^20) .. ' rest'
        return {s:find('needle', 1, true), s:find('needle'), #word:match('^(%w+)'),
                s:find('nope', 1, true)}
    """
    assert await run(actor, source) == [MIB + 1, MIB + 1, MIB]


async def test_plain_find_is_split_into_bounded_searches(actor: LuaActor) -> None:
    # 24 MiB of 'a' with a needle starting with 'a': every position is a candidate, which
    # takes about 0.2 s in one C call; the guard searches in windows instead.
    source = """
        local s = ('a'):rep(24 * 2^20) .. 'b'
        local i, j = s:find('ab', 1, true)
        local k, l = s:find(('a'):rep(100) .. 'b', 5, true)
        local m = s:find('aab', -3, true)
        return {i, j, k, l, m, s:find('ba', 1, true) == nil}
    """
    n = 24 * MIB
    assert await run(actor, source) == [n, n + 1, n - 99, n + 1, n - 1, True]


# --- the guards give plain Lua's results ----------------------------------------------

SEMANTICS = r"""
local out = {}
local function add(...) out[#out + 1] = {n = select('#', ...), ...} end
local s = 'hello world, (nested (parens)) 123 THE end'
add(s:find('o'), s:find('o', 6), s:find('o', -4), s:find('o', 100), s:find('', 100))
add(s:find('', #s + 1), s:find('l+'), s:find('(%w+) (%w+)'), s:find('()ll()'))
add(s:find('.', 1, true), s:find('(', 1, true), s:find('w.r', 1, 1), s:find('%d+$'))
add(s:find('%b()'), s:find('%f[%a]%a+', 3), s:find('(l)%1'), s:find('^hello'), s:find('^world'))
add(s:match('(%d+)'), s:match('^(%w+)'), s:match('end$'), s:match('(h)(e)'), s:match('()'))
add(s:match('%s*(.-)%s*$'), s:match('.-'), s:match('x?y?h'), s:match('[^%s]+', 7))
add(string.find(12345, 34), string.match(3.5, '%.(%d)'), string.find('a+b', 1 + 1, 1, true))
local words = {}
for w in s:gmatch('%a+') do words[#words + 1] = w end
for a, b in ('k=v, x=y'):gmatch('(%w+)=(%w+)') do words[#words + 1] = a .. b end
for w in ('^a^b'):gmatch('^%a') do words[#words + 1] = w end
for w in ('abc'):gmatch('', 2) do words[#words + 1] = '<' .. w .. '>' end
for p in ('aXbX'):gmatch('()X') do words[#words + 1] = p end
add(table.unpack(words))
add(s:gsub('o', '0'), s:gsub('(%w+)', '<%1>', 2), s:gsub('%w+', {hello = 'HI', world = false}))
add(s:gsub('%a+', string.upper), s:gsub('^h', 'H'), s:gsub('', '-', 3), s:gsub('x*', '.'))
add(s:gsub('(%d)', function(d) return d * 2 end), ('abc'):gsub('%w', '%0%0'))
add(('ab'):rep(3), ('ab'):rep(3, ', '), ('x'):rep(0), ('x'):rep(-1), (''):rep(5, ''))
local t = {1, 2, 3}
table.insert(t, 4); table.insert(t, 1, 0); local r1 = table.remove(t); local r2 = table.remove(t, 1)
add(r1, r2, table.concat(t, ','), table.unpack(t))
add(table.concat(table.move({1, 2, 3, 4, 5}, 2, 4, 1), ','), table.concat({}, 'x'))
local m = table.move({1, 2, 3, 4, 5}, 1, 3, 3)
add(table.concat(m, ','), table.concat(table.move({1, 2}, 1, 2, 1, {9, 9, 9}), ','))
local u = {5, 3, 9, 1}
table.sort(u); add(table.unpack(u))
table.sort(u, function(a, b) return a > b end); add(table.unpack(u))
add(string.unpack('i4', string.pack('i4', 77)), string.packsize('i4i8'), os.date('!%Y', 0))
return out
"""


def _plain_lua(source: str) -> Any:
    make_runtime: Any = lupa.lua54.LuaRuntime
    lua = make_runtime()
    result = lua.execute(source)

    def convert(value: Any) -> Any:
        if lupa.lua54.lua_type(value) == "table":
            count = value["n"]
            return [convert(value[i]) for i in range(1, (count if count is not None else 0) + 1)]
        if isinstance(value, bool) or value is None:
            return value
        return value

    return [convert(result[i]) for i in range(1, len(result) + 1)]


async def test_results_match_plain_lua(actor: LuaActor) -> None:
    expected = _plain_lua(SEMANTICS)
    # The eval's JSON turns false into false and nil (a hole) into null: compare that way.
    source = SEMANTICS.replace(
        "return out",
        "for _, row in ipairs(out) do for i = 1, row.n do "
        "if row[i] == nil then row[i] = codeward.null end end row.n = nil end return out",
    )
    got = await run(actor, source)
    assert got == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("return ('a'):find('[a')", "malformed pattern (missing ']')"),
        ("return ('a'):find('a%')", "malformed pattern (ends with '%')"),
        ("return ('a'):match('%b')", "missing arguments to '%b'"),
        ("return ('a'):gsub('%fa', '')", "missing '[' after '%f' in pattern"),
        ("return ('a'):find('%1')", "invalid capture index"),
        ("return string.find(nil, 'x')", "bad argument #1"),
        ("return string.match('x', {})", "bad argument #2"),
        ("return string.find('x', 'x', 'y')", "bad argument #3"),
        ("return string.gsub('x', 'x', true)", "bad argument #3"),
        ("return string.rep('x', 1.5)", "number has no integer representation"),
        ("return string.rep('xx', 2^62, 'yy')", "resulting string too large"),
        ("return table.insert({}, 1, 2, 3)", "wrong number of arguments to 'insert'"),
        ("return table.insert(setmetatable({}, {}), 5, 1)", "position out of bounds"),
        ("return table.remove(setmetatable({}, {}), 5)", "position out of bounds"),
        (
            "return table.insert(setmetatable({}, {__len = function() return 0.5 end}), 1)",
            "object length is not an integer",
        ),
        ("return table.concat({{}})", "at index 1 in table for 'concat'"),
        ("return table.sort({1, 'x', 2, {}})", "attempt to compare"),
        (
            "local t = {} for i = 1, 2e4 do t[i] = i end t[77] = 'x' table.sort(t)",
            "attempt to compare",
        ),
    ],
)
async def test_errors_of_the_guarded_functions(actor: LuaActor, source: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert message in info.value.message, info.value.message
    await assert_healthy(actor)


# --- the guards cannot be bypassed ----------------------------------------------------


async def test_guards_are_the_shared_library_functions(actor: LuaActor) -> None:
    source = """
        return {string.find == ('').find, string.gsub == ('').gsub, string.dump == nil,
                ('').dump == nil, getmetatable(''), type(string.find)}
    """
    assert await run(actor, source) == [True, True, True, True, False, "function"]


async def test_replacing_a_guard_stays_in_its_eval(actor: LuaActor) -> None:
    source = """
        string.find = function() return 'mine' end
        return {string.find('a', 'a'), ('a'):find('a')}
    """
    assert await run(actor, source) == ["mine", 1, 1]
    await refused(actor, "return ('a'):rep(3e4):find('.-b')")
    await refused(actor, "return string.find(('a'):rep(3e4), '.-b')")


@pytest.mark.parametrize(
    "source",
    [
        "return debug.getupvalue(string.find, 1)",
        "return string.dump(string.find)",
        "return getmetatable('').__index.find",
        "return package.loaded.string",
    ],
)
async def test_guards_do_not_leak_what_they_hold(actor: LuaActor, source: str) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert "attempt to" in info.value.message
    await assert_healthy(actor)


# --- other C loops that the hook cannot interrupt -------------------------------------


async def test_rep_of_nothing_does_not_spin(actor: LuaActor) -> None:
    with trio.fail_after(2):
        assert await run(actor, "return {(''):rep(1e15), ('').rep('', 2^53, '')}") == ["", ""]


async def test_big_rep_is_built_in_blocks(actor: LuaActor) -> None:
    source = """
        local a = ('ab'):rep(2000003, ',')           -- a prime count: blocks plus a rest
        local b = ('x'):rep(2^21)
        return {#a, a:sub(1, 8), a:sub(-5), a:sub(3e6 + 1, 3e6 + 5), #b, b:find('[^x]')}
    """
    with trio.fail_after(10):
        assert await run(actor, source) == [3 * 2000003 - 1, "ab,ab,ab", "ab,ab", "ab,ab", 2**21]


@pytest.mark.parametrize(
    "source",
    [
        "table.insert(setmetatable({}, {__len = function() return 2^53 end}), 1, 'x')",
        "table.remove(setmetatable({}, {__len = function() return 2^53 end}), 1)",
        "table.move({}, 1, 2^53, 2)",
        "table.move({}, 1, 2^53, 1, {})",
        "table.move(setmetatable({}, {}), 1, 2^40, 2)",
        "local base = {} for i = 1, 1e5 do base[i] = '' end local t = base "
        "for i = 1, 1999 do t = setmetatable({}, {__index = t}) end "
        "while true do table.concat(t, '', 1, 1e5) end",
        "local base = {} for i = 1, 1e5 do base[i] = 1 end local t = base "
        "for i = 1, 1999 do t = setmetatable({}, {__index = t}) end "
        "while true do table.unpack(t, 1, 1e5) end",
        "local base = {} for i = 1, 1e5 do base[i] = 1e5 - i end local t = base "
        "for i = 1, 1999 do t = setmetatable({}, {__index = t, __newindex = t, "
        "__len = function() return 1e5 end}) end "
        "table.sort(t)",
        "local t = {} for i = 1, 5e5 do t[i] = -i end while true do table.sort(t, math.min) end",
        "local t = {} for i = 1, 3e5 do t[i] = -i end while true do table.sort(t) end",
        "local r = setmetatable({}, {__index = setmetatable({}, {__index = "
        "setmetatable({}, {__index = function() return 'x' end})})}) "
        "while true do ('a'):rep(1e6):gsub('.', r) end",
        "while true do ('a'):rep(1e6):gsub('.', string.upper) end",
    ],
)
async def test_c_loops_stay_under_the_cpu_limit(nursery: trio.Nursery, source: str) -> None:
    actor = await start_actor(nursery, cpu_seconds=0.3, memory_mb=64)
    with trio.fail_after(3):
        with pytest.raises(ToolError) as info:
            await run(actor, source)
    assert info.value.kind in (ErrorKind.LUA_TIMEOUT, ErrorKind.LUA_ERROR), info.value.message
    if info.value.kind is ErrorKind.LUA_ERROR:
        assert "invalid order function" in info.value.message or "compare" in info.value.message
    await assert_healthy(actor)


async def test_table_functions_on_tables_with_metatables(actor: LuaActor) -> None:
    source = """
        local log = {}
        local t = setmetatable({}, {__index = function(_, k) return 'd' .. k end})
        local m = setmetatable({}, {__newindex = function(t, k, v)
            log[#log + 1] = k
            rawset(t, k, v)
        end})
        for i = 1, 400 do m[i] = i end
        table.insert(m, 1, 0)
        local first = table.remove(m, 1)
        local moved = table.move(m, 1, 400, 2)
        local n = 0 for k in pairs(moved) do n = n + 1 end
        local sorted = setmetatable({5, 1, 4}, {})
        table.sort(sorted)
        return {table.concat(t, ',', 1, 3), #table.concat(t, '', 1, 600),
                select('#', table.unpack(t, 1, 300)), (table.unpack(t, 2, 3)),
                first, #log > 400, n, moved[1], moved[401], table.concat(sorted, ' ')}
    """
    joined = "".join(f"d{i}" for i in range(1, 601))
    assert await run(actor, source) == [
        "d1,d2,d3",
        len(joined),
        300,
        "d2",
        0,
        True,
        401,
        1,
        400,
        "1 4 5",
    ]


async def test_json_result_with_many_keys(actor: LuaActor) -> None:
    source = "local t = {} for i = 1, 2e4 do t['k' .. i] = i end return t"
    result = await run(actor, source)
    assert len(result) == 20000 and result["k20000"] == 20000
    assert list(result)[:3] == ["k1", "k10", "k100"]


@pytest.mark.parametrize(
    "source",
    [
        "return string.pack((' '):rep(2^21))",
        "return string.unpack((' '):rep(2^21), '')",
        "return string.packsize((' '):rep(2^21))",
        "return os.date(('%c'):rep(2^20))",
    ],
)
async def test_huge_formats_are_refused(actor: LuaActor, source: str) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert "is too long" in info.value.message
    await assert_healthy(actor)
