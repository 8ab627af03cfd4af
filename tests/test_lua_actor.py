"""The Lua actor: host calls, Lua <-> JSON conversion, host-related limits, cancellation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from codeward.daemon.config import LuaConfig
from codeward.daemon.intel.locations import Shown
from codeward.daemon.lua import LuaActor
from codeward.daemon.tools.git_tool import SOURCE, ByReference, chunk_arguments
from codeward.protocol.errors import ErrorKind, ToolError

GitHandler = Callable[[str, list[str], dict[str, Any]], Awaitable[dict[str, Any]]]
CallHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class RecordingHost:
    """A test double of the session's LuaHost: records calls, answers with the handlers."""

    def __init__(self, git: GitHandler | None = None, call: CallHandler | None = None) -> None:
        self.git_calls: list[tuple[str, list[str], dict[str, Any]]] = []
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.logs: list[str] = []
        self._git = git
        self._call = call

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        self.git_calls.append((subcommand, args, opts))
        if self._git is not None:
            return await self._git(subcommand, args, opts)
        return {"exit_code": 0, "output": " ".join([subcommand, *args]), "parsed": None}

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.tool_calls.append((tool, arguments))
        if self._call is not None:
            return await self._call(tool, arguments)
        return {"tool": tool, "arguments": arguments}

    def log(self, message: str) -> None:
        self.logs.append(message)


async def run(actor: LuaActor, source: str, args: Any = None, host: Any = None) -> Any:
    """One eval, bounded so that a hang fails the test instead of stalling the suite."""
    with trio.fail_after(20):
        return await actor.eval(source, args, host or RecordingHost())


async def start_actor(nursery: trio.Nursery, **limits: Any) -> LuaActor:
    actor = LuaActor(LuaConfig(**limits))
    await nursery.start(actor.run)
    return actor


@pytest.fixture
async def actor(nursery: trio.Nursery) -> AsyncIterator[LuaActor]:
    yield await start_actor(nursery, cpu_seconds=0.5, memory_mb=16)


GIT_RESULT: dict[str, Any] = {
    "exit_code": 0,
    "output": "M  a.py\n",
    "stderr": "",
    "truncated": False,
    "parsed": {"branch": "main", "files": [{"path": "a.py", "status": "M"}], "untracked": []},
    "note": None,
    "ratio": 0.5,
    "big": 2**70,
}


async def fixed_git(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
    return GIT_RESULT


# --- results and args ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("return 1 + 1", 2),
        ("return 7 // 2, 'ignored'", 3),
        ("return 1.5", 1.5),
        ("return 2.0", 2.0),
        ("return -0.0", -0.0),
        ("return 'héllo \"q\" \\n\\t\\0'", 'héllo "q" \n\t\0'),
        ("return true", True),
        ("return nil", None),
        ("", None),
        ("return codeward.null", None),
        ("return {1, 'a', false}", [1, "a", False]),
        ("return {a = 1, b = {c = {}}}", {"a": 1, "b": {"c": {}}}),
        ("return {[1] = 'x', [3] = 'y'}", {"1": "x", "3": "y"}),
        ("return {1, 2, n = 2}", {"1": 1, "2": 2, "n": 2}),
        ("return {1, codeward.null, 3}", [1, None, 3]),
        ("local t = {1} return {t, t}", [[1], [1]]),
        ("return math.maxinteger", 2**63 - 1),
        # flat tables (at most 64 strings, booleans and integers) take a shorter way
        (
            r"""return {'tab\t', 'q"', '\127', 'café', 'é€𝄞', -3, true}""",
            ["tab\t", 'q"', "\x7f", "café", "é€𝄞", -3, True],
        ),
        (
            "return {b = 'x', a = false, ['k\\n'] = math.mininteger}",
            {"b": "x", "a": False, "k\n": -(2**63)},
        ),
        (
            "local t = {} for i = 1, 64 do t[i] = 'v' .. i end return t",
            [f"v{i}" for i in range(1, 65)],
        ),
        ("local t = {} for i = 1, 65 do t[i] = i end return t", list(range(1, 66))),
        (
            "local t = {} for i = 1, 65 do t['k' .. i] = i end return t",
            {f"k{i}": i for i in range(1, 66)},
        ),
        ("return {1, x = 2}", {"1": 1, "x": 2}),
        ("return {[2] = 'a'}", {"2": "a"}),
        ("return {1.5, 'a'}", [1.5, "a"]),
        ("return {a = {}}", {"a": {}}),
        ("return {codeward.null, false}", [None, False]),
    ],
)
async def test_results_become_json(actor: LuaActor, source: str, expected: Any) -> None:
    assert await run(actor, source) == expected


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("return function() end", "function value"),
        ("return coroutine.create(function() end)", "thread value"),
        ("return 0/0", "NaN"),
        ("return math.huge", "infinite"),
        ("return {x = -math.huge}", "infinite"),
        ("local t = {} t.self = t return t", "cycle"),
        ("local a, b = {}, {} a[1] = b b[1] = a return a", "cycle"),
        ("return '\\255\\254'", "UTF-8"),
        ("return {'ok', '\\255'}", "UTF-8"),
        ("return {['\\255'] = 1}", "UTF-8"),
        ("return {[true] = 1}", "keys"),
        ("return {[{}] = 1}", "keys"),
        ("local t = {} for i = 1, 300 do t = {t} end return t", "nested"),
    ],
)
async def test_results_that_cannot_become_json(actor: LuaActor, source: str, words: str) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert words in info.value.message
    assert await run(actor, "return 'still fine'") == "still fine"


async def test_result_over_the_size_cap(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, result_bytes=100)
    assert await run(actor, "return string.rep('x', 90)") == "x" * 90
    with pytest.raises(ToolError) as info:
        await run(actor, "return string.rep('x', 200)")
    assert info.value.kind is ErrorKind.OUTPUT_TOO_LARGE
    assert info.value.details["limit"] == 100
    # A shared subtable repeated many times is cut off by the cap, not expanded forever.
    with pytest.raises(ToolError) as info:
        await run(actor, "local t = {1} for i = 1, 60 do t = {t, t} end return t")
    assert info.value.kind is ErrorKind.OUTPUT_TOO_LARGE
    assert await run(actor, "return 'ok'") == "ok"


async def test_a_flat_result_is_held_to_the_cap_to_the_byte(nursery: trio.Nursery) -> None:
    """A flat table's JSON text is what the general encoder writes: one that fills the cap
    exactly passes, one byte more does not."""
    actor = await start_actor(nursery, result_bytes=100)
    fits = {"a": "x" * 75, "b": True, "c": -12}
    assert len(json.dumps(fits, separators=(",", ":"), sort_keys=True)) == 100
    source = "return {a = string.rep('x', %d), b = true, c = -12}"
    assert await run(actor, source % 75) == fits
    with pytest.raises(ToolError) as info:
        await run(actor, source % 76)
    assert info.value.kind is ErrorKind.OUTPUT_TOO_LARGE


async def test_args_arrive_as_varargs_and_global(actor: LuaActor) -> None:
    args = {"name": "x", "list": [1, None, "z"], "empty": [], "obj": {}, "flag": True}
    assert await run(actor, "return ...", args) == args
    assert await run(actor, "return args", args) == args
    assert await run(
        actor, "local a = ... return {a.list[3], #a.list, a.list[2] == codeward.null}", args
    ) == ["z", 3, True]
    assert await run(actor, "return {args == nil, select('#', ...)}") == [True, 1]
    assert await run(actor, "return args[2]", ["a", "b"]) == "b"
    assert await run(actor, "return type(args)", "text") == "string"


@pytest.mark.parametrize("bad", [object(), {"k": {1, 2}}, {1: "int key"}, [b"bytes"]])
async def test_args_that_are_not_json(actor: LuaActor, bad: Any) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, "return 1", bad)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    assert await run(actor, "return 1") == 1


async def test_compile_error(actor: LuaActor) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, "return (")
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert "does not compile" in info.value.message
    assert info.value.details["error"].startswith("eval:1:")


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("error('boom')", "eval:1: boom"),
        ("error('plain', 0)", "(plain)"),
        ("error({message = 'custom'})", "custom"),
        ("error(42)", "42"),
        ("error(true)", "boolean value"),
        ("error(setmetatable({}, {__tostring = function() while true do end end}))", "table value"),
    ],
)
async def test_script_errors(actor: LuaActor, source: str, words: str) -> None:
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert words in info.value.message
    assert await run(actor, "return 3") == 3


# --- the daemon's constant chunks ---------------------------------------------------


async def test_constant_chunk_sees_only_codeward_and_is_kept_per_runtime(
    nursery: trio.Nursery,
) -> None:
    actor = await start_actor(nursery, runtimes=1)
    host = RecordingHost()
    source = "local a = ... return {codeward.git(a[1], a[2], a[3]).output, string, print, args}"
    for _ in range(2):  # compiled on the first run, taken from the runtime's cache after
        with trio.fail_after(20):
            result = await actor.eval(source, ["log", ["-1"], {}], host, constant=True)
        assert result == ["log -1"]
    assert host.git_calls == [("log", ["-1"], {})] * 2
    assert actor.built == 1


async def test_scripts_cannot_reach_a_constant_chunks_environment(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, runtimes=1)
    host = RecordingHost()
    source = "return codeward.git('status').output"
    with trio.fail_after(20):
        assert await actor.eval(source, None, host, constant=True) == "status"
    # A script that rewrites its own codeward table and string library, and sets globals...
    await run(
        actor,
        "codeward.git = function() return {output = 'hijacked'} end string.x = 1 leak = 1",
        host=host,
    )
    # ...changes neither the constant chunk's environment nor the next script's.
    with trio.fail_after(20):
        assert await actor.eval(source, None, host, constant=True) == "status"
    fresh = "return {string.x == nil, leak == nil, type(string.rep), codeward.git('diff').output}"
    assert await run(actor, fresh, host=host) == [True, True, "function", "diff"]
    assert [call[0] for call in host.git_calls] == ["status", "status", "diff"]


async def test_git_command_chunk_hands_its_json_texts_on_and_scripts_cannot(
    actor: LuaActor,
) -> None:
    """git_command's chunk passes the daemon's JSON texts to the host unencoded, checked
    there as a script's arguments are; `codeward.git_json` exists only for constant chunks."""
    host = RecordingHost()
    texts = chunk_arguments("log", ["-n", "2", "--", 'a "b"'], allow_destructive=True)
    with trio.fail_after(20):
        result = await actor.eval(SOURCE, texts, ByReference(host), constant=True)
    assert result == 1
    assert host.git_calls == [("log", ["-n", "2", "--", 'a "b"'], {"allow_destructive": True})]
    for bad in (["1", "[]", "{}"], ['"log"', '["-n", 2]', "{}"]):  # what a script's would fail
        with pytest.raises(ToolError) as info, trio.fail_after(20):
            await actor.eval(SOURCE, bad, host, constant=True)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    with pytest.raises(ToolError) as info, trio.fail_after(20):
        await actor.eval(SOURCE, [1, 2, 3], host, constant=True)
    assert "three JSON texts" in info.value.message
    script = "return {codeward.git_json == nil, type(codeward.git)}"
    assert await run(actor, script, host=host) == [True, "function"]
    assert len(host.git_calls) == 1


async def test_constant_chunk_that_does_not_compile(actor: LuaActor) -> None:
    for _ in range(2):  # a failed compile is not kept
        with pytest.raises(ToolError) as info, trio.fail_after(20):
            await actor.eval("return (", None, RecordingHost(), constant=True)
        assert info.value.kind is ErrorKind.LUA_ERROR
        assert "does not compile" in info.value.message


# --- host calls ---------------------------------------------------------------------


async def test_git_result_becomes_tables(actor: LuaActor) -> None:
    host = RecordingHost(git=fixed_git)
    source = """
        local r = codeward.git("status", {"--short"}, {allow_destructive = false})
        return {
            r.exit_code, r.parsed.files[1].path, #r.parsed.untracked, r.note == codeward.null,
            type(r.parsed), getmetatable(r) == nil, r.ratio, r.big, tostring(r.note),
        }
    """
    result = await run(actor, source, host=host)
    assert result == [0, "a.py", 0, True, "table", True, 0.5, float(2**70), "null"]
    assert host.git_calls == [("status", ["--short"], {"allow_destructive": False})]


async def test_git_result_round_trips_unchanged(actor: LuaActor) -> None:
    result = await run(actor, "return codeward.git('status')", host=RecordingHost(git=fixed_git))
    assert result == {**GIT_RESULT, "big": float(2**70)}


async def test_git_argument_defaults(actor: LuaActor) -> None:
    host = RecordingHost()
    await run(
        actor,
        "codeward.git('log') codeward.git('diff', {}) codeward.git('show', {}, {})",
        host=host,
    )
    assert host.git_calls == [("log", [], {}), ("diff", [], {}), ("show", [], {})]


@pytest.mark.parametrize(
    "source",
    [
        "return codeward.git()",
        "return codeward.git(1)",
        "return codeward.git('')",
        "return codeward.git('status', {1})",
        "return codeward.git('status', 'not a list')",
        "return codeward.git('status', {x = 'y'})",
        "return codeward.git('status', {}, 'opts')",
        "return codeward.git('status', {}, {1, 2})",
        "return codeward.call()",
        "return codeward.call('tool', 'arguments')",
        "return codeward.call('tool', {1, 2})",
    ],
)
async def test_host_calls_with_bad_arguments(actor: LuaActor, source: str) -> None:
    host = RecordingHost()
    with pytest.raises(ToolError) as info:
        await run(actor, source, host=host)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
    assert host.git_calls == [] and host.tool_calls == []
    caught = await run(actor, f"local ok, e = pcall(function() {source} end) return {{ok, e.kind}}")
    assert caught == [False, "invalid_arguments"]


async def test_host_call_arguments_that_cannot_become_json(actor: LuaActor) -> None:
    source = "local ok, e = pcall(codeward.git, 'status', {function() end}) return {ok, e}"
    ok, message = await run(actor, source)
    assert ok is False
    assert "codeward.git: args: a function value cannot become JSON" in message
    with pytest.raises(ToolError) as info:
        await run(actor, "codeward.call('t', {x = 0/0})")
    assert info.value.kind is ErrorKind.LUA_ERROR


async def test_call_any_tool(actor: LuaActor) -> None:
    host = RecordingHost()
    result = await run(
        actor,
        "return {codeward.call('get_symbols', {path = 'a.py', limit = 3}), codeward.call('x')}",
        host=host,
    )
    assert result == [
        {"tool": "get_symbols", "arguments": {"path": "a.py", "limit": 3}},
        {"tool": "x", "arguments": {}},
    ]
    assert host.tool_calls == [("get_symbols", {"path": "a.py", "limit": 3}), ("x", {})]


async def test_call_result_rows_as_structs(actor: LuaActor) -> None:
    """A bulk result's rows (find_references' `Shown` Structs) reach the script as tables."""
    row = Shown("lib.py", 14, 5, 14, 12, "def compute(value: int) -> int:")

    async def references(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"status": "found", "references": [row], "count": 1}

    result = await run(
        actor,
        "local r = codeward.call('find_references', {}).references[1] "
        "return {r.path, r.line, r.end_character, r.preview}",
        host=RecordingHost(call=references),
    )
    assert result == ["lib.py", 14, 12, "def compute(value: int) -> int:"]


async def test_log_and_print(actor: LuaActor) -> None:
    host = RecordingHost()
    result = await run(
        actor,
        "codeward.log('a', 1, nil, true) print('p', 2.5) codeward.log() "
        "codeward.log(setmetatable({}, {__tostring = function() return 'T' end})) "
        "codeward.log('\\255') return 'done'",
        host=host,
    )
    assert result == "done"
    assert host.logs == ["a\t1\tnil\ttrue", "p\t2.5", "", "T", "\ufffd"]


async def test_long_log_lines_are_cut(actor: LuaActor) -> None:
    host = RecordingHost()
    await run(actor, "codeward.log(string.rep('x', 100000))", host=host)
    assert host.logs == ["x" * 65536]


async def test_host_error_is_a_table_the_script_can_inspect(actor: LuaActor) -> None:
    async def refuse(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        raise ToolError(ErrorKind.BLOCKED_DESTRUCTIVE, "Pass allow_destructive.", argv=["reset"])

    source = """
        local ok, e = pcall(codeward.git, "reset", {"--hard"})
        return {ok, e.kind, e.message, e.argv[1]}
    """
    result = await run(actor, source, host=RecordingHost(git=refuse))
    assert result == [False, "blocked_destructive", "Pass allow_destructive.", "reset"]


@pytest.mark.parametrize(
    "source",
    [
        "return codeward.git('reset', {'--hard'})",
        "local ok, e = pcall(codeward.git, 'reset') error(e)",
        "local ok, e = pcall(codeward.git, 'reset') e.message = 'changed' error(e, 2)",
        "return coroutine.wrap(function() return codeward.git('reset') end)()",
        "local ok, e = xpcall(codeward.git, function(e) return e end, 'reset') error(e)",
    ],
)
async def test_uncaught_host_error_is_reraised_unchanged(actor: LuaActor, source: str) -> None:
    error = ToolError(ErrorKind.BLOCKED_DESTRUCTIVE, "Pass allow_destructive.")

    async def refuse(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        raise error

    with pytest.raises(ToolError) as info:
        await run(actor, source, host=RecordingHost(git=refuse))
    assert info.value is error
    assert info.value.message == "Pass allow_destructive."
    assert await run(actor, "return 'healthy'") == "healthy"


async def test_host_error_of_an_earlier_eval_is_not_reused(actor: LuaActor) -> None:
    async def refuse(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        raise ToolError(ErrorKind.GIT_FAILED, "git failed.")

    with pytest.raises(ToolError):
        await run(actor, "return codeward.git('x')", host=RecordingHost(git=refuse))
    with pytest.raises(ToolError) as info:
        await run(actor, "error({kind = 'git_failed', message = 'forged'})")
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert "forged" in info.value.message


async def test_host_call_that_raises_a_bug(actor: LuaActor) -> None:
    async def broken(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("host bug")

    with pytest.raises(RuntimeError, match="host bug"):
        await run(
            actor,
            "local ok = pcall(codeward.git, 'status') return 'caught?'",
            host=RecordingHost(git=broken),
        )
    assert await run(actor, "return 'healthy'") == "healthy"


async def test_host_result_that_is_not_json(actor: LuaActor) -> None:
    async def odd(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        return {"value": object()}

    source = "local ok, e = pcall(codeward.git, 'status') return {ok, e.kind}"
    assert await run(actor, source, host=RecordingHost(git=odd)) == [False, "lua_error"]


async def test_host_calls_from_coroutines_pcall_and_metamethods(actor: LuaActor) -> None:
    host = RecordingHost()
    source = """
        local out = {}
        local co = coroutine.create(function(x)
            local inner = coroutine.wrap(function()
                coroutine.yield(codeward.git("inner").output)
                return pcall(codeward.git, "after")
            end)
            local a = inner()
            local y = coroutine.yield(x .. a)
            local ok, r = inner()
            return y .. "/" .. r.output
        end)
        local ok1, v1 = coroutine.resume(co, "x:")
        local ok2, v2 = coroutine.resume(co, "y")
        local lazy = setmetatable({}, {__index = function(t, k) return codeward.git(k).output end})
        return {ok1, v1, ok2, v2, coroutine.status(co), lazy.status}
    """
    result = await run(actor, source, host=host)
    assert result == [True, "x:inner", True, "y/after", "dead", "status"]
    assert [c[0] for c in host.git_calls] == ["inner", "after", "status"]


async def test_host_call_across_a_c_boundary_is_a_lua_error(actor: LuaActor) -> None:
    source = "table.sort({3, 1, 2}, function(a, b) codeward.git('x') return a < b end)"
    with pytest.raises(ToolError) as info:
        await run(actor, source)
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert "yield across" in info.value.message


async def test_too_many_host_calls(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, host_calls=3)
    host = RecordingHost()
    assert await run(actor, "for i = 1, 3 do codeward.log(i) end return 'ok'", host=host) == "ok"
    with pytest.raises(ToolError) as info:
        await run(
            actor, "for i = 1, 10 do pcall(codeward.git, 'status') end return 'no'", host=host
        )
    assert info.value.kind is ErrorKind.LUA_ERROR
    assert info.value.details["limit"] == "host_calls"
    assert len(host.git_calls) == 3
    assert await run(actor, "codeward.log('again') return 1", host=host) == 1


async def test_unexpected_yield(actor: LuaActor) -> None:
    for source in [
        "coroutine.yield(1)",
        "coroutine.yield()",
        "pcall(coroutine.yield, 'x')",
        "local t = coroutine.running() coroutine.yield(t)",
    ]:
        with pytest.raises(ToolError) as info:
            await run(actor, source)
        assert info.value.kind is ErrorKind.LUA_ERROR
        assert "coroutine.yield" in info.value.message
        assert await run(actor, "return 'next'") == "next"


# --- time, cancellation, the actor's life -------------------------------------------


async def test_wall_time_includes_host_calls(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    actor = await start_actor(nursery, wall_seconds=5)

    async def slow(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(3)
        return {"exit_code": 0}

    host = RecordingHost(git=slow)
    assert await run(actor, "return codeward.git('a').exit_code", host=host) == 0
    start = trio.current_time()
    with pytest.raises(ToolError) as info:
        await run(actor, "codeward.git('a') codeward.git('b') return 1", host=host)
    assert info.value.kind is ErrorKind.LUA_TIMEOUT
    assert info.value.details["limit"] == "wall_seconds"
    assert trio.current_time() - start == pytest.approx(5)
    assert await run(actor, "return 'fresh'") == "fresh"


async def test_a_constant_chunk_is_bounded_by_its_host_call_not_the_wall_time(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """git_command's chunk waits only for its git call (an approval, then git): those have
    limits of their own, and a write git made is never reported as a script timeout."""
    actor = await start_actor(nursery, wall_seconds=5)

    async def approved_late(
        subcommand: str, args: list[str], opts: dict[str, Any]
    ) -> dict[str, Any]:
        await trio.sleep(8)
        return {"exit_code": 0, "output": "committed"}

    host = ByReference(RecordingHost(git=approved_late))
    with trio.fail_after(20):
        texts = chunk_arguments("commit", ["-m", "x"], allow_destructive=False)
        ref = await actor.eval(SOURCE, texts, host, constant=True)
    assert host.results[ref - 1]["output"] == "committed"
    assert host.host.git_calls == [("commit", ["-m", "x"], {"allow_destructive": False})]
    with pytest.raises(ToolError) as info:  # a script doing the same is held to wall_seconds
        await run(actor, "return codeward.git('commit', {'-m', 'x'})", host=host.host)
    assert info.value.details["limit"] == "wall_seconds"


async def test_cancel_during_a_host_call(actor: LuaActor) -> None:
    entered = trio.Event()
    exited: list[str] = []

    async def hang(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        try:
            await trio.sleep_forever()
        finally:
            exited.append("host call cancelled")
        raise AssertionError("unreachable")

    host = RecordingHost(git=hang)
    with trio.fail_after(10):
        async with trio.open_nursery() as inner:
            inner.start_soon(actor.eval, "return codeward.git('status')", None, host)
            await entered.wait()
            inner.cancel_scope.cancel()
    assert exited == ["host call cancelled"]
    assert await run(actor, "x = 1 return 'usable'") == "usable"


async def test_cancel_while_queued(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, runtimes=1)
    entered = trio.Event()
    release = trio.Event()

    async def wait(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        await release.wait()
        return {"exit_code": 0}

    first = RecordingHost(git=wait)
    second = RecordingHost()
    results: list[Any] = []
    queued = trio.CancelScope()

    async def first_eval() -> None:
        results.append(await run(actor, "return codeward.git('first').exit_code", host=first))

    async def second_eval() -> None:
        with queued:
            await actor.eval("codeward.log('never') return 1", None, second)
        results.append("second cancelled")

    with trio.fail_after(10):
        async with trio.open_nursery() as outer:
            outer.start_soon(first_eval)
            await entered.wait()
            outer.start_soon(second_eval)
            await trio.testing.wait_all_tasks_blocked()
            queued.cancel()
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert results == ["second cancelled", 0]
    assert second.logs == []
    assert await run(actor, "return 2") == 2


async def test_one_runtime_runs_evals_one_at_a_time(nursery: trio.Nursery) -> None:
    actor = await start_actor(nursery, runtimes=1)
    order: list[str] = []

    async def record(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        order.append(f"start {subcommand}")
        await trio.sleep(0)
        order.append(f"end {subcommand}")
        return {"exit_code": 0}

    host = RecordingHost(git=record)
    results: dict[str, Any] = {}

    async def one(name: str) -> None:
        results[name] = await run(
            actor, f"codeward.git('{name}') codeward.git('{name}') return '{name}'", host=host
        )

    async with trio.open_nursery() as nursery:
        for name in ["a", "b", "c"]:
            nursery.start_soon(one, name)
    assert results == {"a": "a", "b": "b", "c": "c"}
    for i in range(0, len(order), 4):  # each eval's two calls are never interleaved with another's
        name = order[i].split()[1]
        assert order[i : i + 4] == [f"start {name}", f"end {name}"] * 2


async def test_eval_after_the_actor_stopped() -> None:
    actor = LuaActor(LuaConfig())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(actor.run)
            assert await actor.eval("return 1", None, RecordingHost()) == 1
            nursery.cancel_scope.cancel()
    with pytest.raises(ToolError) as info:
        await run(actor, "return 1")
    assert info.value.kind is ErrorKind.CANCELLED


@pytest.mark.parametrize("constant", [False, True], ids=["script", "constant chunk"])
async def test_actor_stopping_during_an_eval_fails_it(constant: bool) -> None:
    entered = trio.Event()

    async def hang(subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    actor = LuaActor(LuaConfig())
    errors: list[ToolError] = []

    async def caller() -> None:
        try:
            await actor.eval("return codeward.git('x')", None, RecordingHost(git=hang),
                             constant=constant)  # fmt: skip
        except ToolError as exc:
            errors.append(exc)

    with trio.fail_after(10):
        async with trio.open_nursery() as outer:
            outer.start_soon(caller)
            async with trio.open_nursery() as session:
                await session.start(actor.run)
                await entered.wait()
                session.cancel_scope.cancel()
    assert [e.kind for e in errors] == [ErrorKind.CANCELLED]


async def test_an_eval_before_the_actor_started_waits_for_it() -> None:
    actor = LuaActor(LuaConfig())
    results: list[Any] = []

    async def early() -> None:
        results.append(await actor.eval("return 'served'", None, RecordingHost()))

    with trio.fail_after(10):
        async with trio.open_nursery() as outer:
            outer.start_soon(early)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # parked: no runtime yet, and no failure either
            async with trio.open_nursery() as session:
                await session.start(actor.run)
                while not results:
                    await trio.testing.wait_all_tasks_blocked()
                session.cancel_scope.cancel()
    assert results == ["served"]
