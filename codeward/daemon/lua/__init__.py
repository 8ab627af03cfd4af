"""The Lua sandbox: hardened lupa Lua 5.4 runtimes, one per running eval, in a trio actor.

A script sees the safe standard subset (basic functions without load, dofile, loadfile,
require and collectgarbage; `string` without `dump`; `table`, `math`, `utf8`, `coroutine`;
`os.time`, `os.clock`, `os.date`), `print` (same as `codeward.log`) and the `codeward` table:

- `codeward.git(subcommand, args, opts)` and `codeward.call(tool, arguments)` return the
  host's result as Lua tables; on failure they raise a Lua error whose value is a table
  `{kind = ..., message = ...}`, so `pcall` can inspect it. A failure the script does not
  catch ends the eval with that same ToolError.
- `codeward.log(...)` joins its arguments with tabs, like `print`.
- `codeward.null` stands for JSON null, both in host results and in a script's result.

`args` of `lua/eval` arrive both as the chunk's `...` and as the global `args`.
The script's first return value is its result, converted to JSON: a table whose keys are
exactly 1..n is an array, any other table an object (integer keys become strings); an empty
table is `{}` unless it came from a JSON array. Functions, coroutines, NaN, infinities,
strings that are not UTF-8 and cycles are a `lua_error`.

Limits per eval (`LuaConfig`): CPU time (`lua_timeout`), wall time including host calls
(`lua_timeout`), memory (`lua_memory`), result size (`output_too_large`) and host calls,
where `codeward.log` counts too (one more than allowed is a `lua_error` with
`limit: "host_calls"`). A runtime that hit any limit is thrown away and made anew.

The CPU limit is a count hook, which runs only between VM instructions, so C library calls
that can loop long on their own are guarded (guards.py; the raw functions stay only in the
prelude's locals and in `package.loaded`, which scripts cannot reach):

- `string.find/match/gmatch/gsub` (also as methods: the string metatable's `__index` is the
  guarded library) estimate the matcher's worst-case steps before calling C, and refuse with
  a Lua error "pattern too costly for a subject of N bytes: ...; split the text (e.g. by
  lines) or simplify the pattern" above `PATTERN_BUDGET` (1e7 steps, about 50 ms here).
  The pattern is parsed into items (char classes, sets, `%b`, `%f`, back-references,
  captures, anchors, quantifiers), each weighing what one test of it costs: one step, and
  for a `[set]` one more a byte of it beyond its first 8 (`%f[set]` two: it tests two
  chars), since C reads the set whole at each test. From the last item to the first each
  suffix gets a worst-case cost when it fails and when it succeeds, as polynomials in the
  subject length n: `*`, `+` and `-` multiply the cost of a failing rest by n (a rest that
  cannot fail, such as the pattern's end or `.-` before a rest that matches empty at the
  subject's end, costs no backtracking), `?` doubles it, `%b` and back-references scan n,
  a quantified item's scan costs its weight a char. An unanchored call tries every start
  (n times the failing cost); gsub also pays for every match, which is linear when
  successes only consume text. The n^k term is divided by k! (nested quantifiers walk
  ordered positions). One gmatch iteration is bounded like a find.
  Polynomials are cached per pattern. A malformed pattern is estimated up to the fault.
- plain finds (`plain` or no special characters) are memchr/memcmp loops, n times the
  needle length in the worst case: a search that could exceed the budget runs in windows.
- `gsub`'s replacement functions and tables with metatables are called through Lua, so the
  hook fires between matches; `table.sort` calls any comparator through Lua, and uses a Lua
  `<` beyond 16384 elements or on a table with a metatable.
- `string.rep` of nothing returns "" (the C loop would spin), and many short copies are
  made in blocks of 4 KiB; `table.insert/remove` on tables with a metatable run in Lua;
  `table.move`, and `table.concat/unpack` on tables with a metatable, work in chunks.
- `string.pack/unpack/packsize` and `os.date` refuse formats over 1 MiB.
"""

from codeward.daemon.lua.actor import LuaActor
from codeward.daemon.lua.host import LuaHost

__all__ = ["LuaActor", "LuaHost"]
