"""The Lua side of the sandbox: hardening, the per-eval environment, the driver and JSON encoding.

`PRELUDE` (the source of prelude.lua, package data) runs once per runtime, before any user
code. It captures the real library functions it needs as upvalues, hardens the state that
every string shares, and returns the driver table the Python side calls. User code never
sees the driver, the real `_G`, `debug`, `python`, `io`, `package` or raw `coroutine`
functions.
"""

from __future__ import annotations

from importlib.resources import files

# VM instructions between two checks of the CPU clock. One instruction or library call can
# copy up to the memory cap, so a small count keeps the overshoot of a C-heavy loop short
# (about 50% overhead on the tightest pure-Lua loops).
HOOK_COUNT = 100

PRELUDE = files("codeward.daemon.lua").joinpath("prelude.lua").read_text(encoding="utf-8")
