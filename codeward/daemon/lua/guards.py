"""Cost guards for the library functions whose C loops the CPU hook cannot interrupt.

The count hook only runs between VM instructions, so one call of a C function that loops for
long blocks the daemon. `GUARDS` (the source of guards.lua, package data) runs once per
runtime, before the prelude, and returns replacements for those functions; the prelude
installs them in the shared `string` and `table` libraries (which the string metatable's
`__index` is), so method calls are guarded too. Each guard either proves a call cheap and
runs the C function, splits it into bounded C calls with Lua in between (where the hook can
fire), or refuses it with a Lua error.

The pattern cost model (steps of Lua's backtracking matcher, as polynomials in the subject
length n) is described in the package docstring. Calibrated on this machine with lupa's Lua
5.4: `('a'):rep(16000):find('.-b')` 0.71-0.85 s for 2.6e8 steps, `.-.-.-b` on 100 bytes 29
ms for 1.0e7, the trim idiom `^%s*(.-)%s*$` on its worst 4000-byte line 84-104 ms for 1.6e7,
a 1001-item literal `match` on 1e5 bytes 0.54 s for 1e8, `gsub('%s+', ' ')` on 4 MiB 93 ms
for 2.1e7: at most 5.4-6.5 ns a step, so `PATTERN_BUDGET` steps take about 50-65 ms. A set
read at one test costs 0.3-0.65 steps a byte (plain bytes, ranges; 1e3-byte sets on 1e4
bytes), 1.05 for `%a`-style escapes (two bytes, 2.1 steps), so a set counts one step a byte
(`SET_BYTE`) beyond its first 8 (`SET_FREE`: a short set costs no more than a step, `gsub` with
`[%w_]+`, `[,;]` or `%s+` on 1 MiB all take 5.3-5.8 steps a byte):
`find(('a'):rep(8e4), '[' .. ('b'):rep(8e4) .. ']')`, 6.4e9 byte tests (4-15 s in one C
call), is refused in about a millisecond, the set's end found by C searches.
"""

from __future__ import annotations

from importlib.resources import files

# Steps a single pattern call may take (about 50 ms here; see the module docstring).
PATTERN_BUDGET = 10_000_000

GUARDS = files("codeward.daemon.lua").joinpath("guards.lua").read_text(encoding="utf-8")
