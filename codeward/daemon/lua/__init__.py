"""The Lua sandbox: one hardened lupa Lua 5.4 runtime per session, driven by a trio actor.

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
"""

from codeward.daemon.lua.actor import LuaActor
from codeward.daemon.lua.host import LuaHost

__all__ = ["LuaActor", "LuaHost"]
