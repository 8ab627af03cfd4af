"""One hardened lupa Lua 5.4 runtime that runs one eval at a time, one resume at a time.

The Python side never lets Lua allocate outside a protected call while the memory cap is on
(lupa pushes arguments unprotected, and an allocation failure there aborts the process):
data is handed over with the cap lifted and only stored; compiling and running happen under
the cap with nothing but numbers and booleans as arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lupa.lua54 as lua54

from codeward.daemon.config import LuaConfig
from codeward.daemon.lua.convert import LuaBuilder, decode_json
from codeward.daemon.lua.guards import GUARDS, PATTERN_BUDGET
from codeward.daemon.lua.prelude import HOOK_COUNT, PRELUDE
from codeward.protocol.errors import ErrorKind, ToolError

LOG_LIMIT = 64 * 1024
_MESSAGE_LIMIT = 2000
_LuaRuntime: Any = lua54.LuaRuntime  # lupa's stubs do not list its keyword arguments
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1  # a Lua integer


@dataclass(frozen=True)
class HostRequest:
    """The script called `codeward.<name>`; `payloads` are JSON texts (raw text for log)."""

    name: str
    payloads: tuple[bytes, ...]


@dataclass(frozen=True)
class Finished:
    """The script returned; `value` is its first return value as JSON-able data."""

    value: Any


Step = HostRequest | Finished


class Sandbox:
    """A lupa runtime with the sandbox prelude loaded; `broken` once a limit was hit."""

    def __init__(self, limits: LuaConfig) -> None:
        self._limits = limits
        self._max_memory = max(1, limits.memory_mb) * 1024 * 1024
        self.broken = False
        self._host_errors: dict[int, ToolError] = {}
        self._cpu_left = limits.cpu_seconds
        self._runtime: Any = _LuaRuntime(
            encoding=None,
            register_eval=False,
            register_builtins=False,
            max_memory=self._max_memory,
        )
        self._lifted = _Lifted(self._runtime, self._max_memory)
        with self._lifted:
            guards = self._runtime.execute(GUARDS, PATTERN_BUDGET, name="=codeward")
            driver = self._runtime.execute(PRELUDE, HOOK_COUNT, guards, name="=codeward")
            self._driver = {bytes(k).decode(): driver[k] for k in driver}
            self._null = self._driver["null"]()

    def _builder(self) -> LuaBuilder:
        return LuaBuilder(self._runtime, self._null)

    def _arrays(self, builder: LuaBuilder) -> Any:
        """The tables `builder` made from lists, as a Lua list for the driver (or None)."""
        return self._runtime.table_from(builder.arrays) if builder.arrays else None

    def start(self, source: str, args: Any, *, constant: bool = False) -> Step:
        """Compile `source` into a fresh environment and run it until it first stops.

        `constant`: `source` is one of the daemon's own fixed chunks, never a script's: it
        is compiled once per runtime and runs in one environment holding only `codeward`."""
        self._host_errors.clear()
        self._cpu_left = self._limits.cpu_seconds
        with self._lifted:
            builder = self._builder()
            try:
                lua_args = None if args is None else builder.build(args)
            except TypeError as exc:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"args cannot be passed to Lua ({exc}); pass JSON data.",
                ) from None
            # a constant chunk is compiled here, with the cap lifted: our own, of fixed size
            message = self._driver["prepare"](
                source.encode("utf-8", "replace"),
                lua_args,
                self._limits.result_bytes,
                LOG_LIMIT,
                self._arrays(builder),
                constant,
            )
        if not constant:
            message = self._limited(self._driver["compile"])
        if message is not None:
            text = _text(message)
            raise ToolError(
                ErrorKind.LUA_ERROR,
                f"The Lua script does not compile ({_short(text)}); fix it and run it again.",
                error=text,
            )
        return self._resume(True)

    def resume(self, value: Any) -> Step:
        """Continue after a host call that returned `value`."""
        kind = type(value)
        if kind is bool or kind is float or (kind is int and _INT_MIN <= value <= _INT_MAX):
            return self._resume(True, value)  # a number needs no table, nor the cap lifted
        with self._lifted:
            builder = self._builder()
            try:
                lua_value = builder.build(value)
            except TypeError as exc:
                failure = ToolError(
                    ErrorKind.LUA_ERROR,
                    f"A host call returned data that cannot be passed to Lua ({exc}).",
                )
            else:
                self._driver["stash"](lua_value, self._arrays(builder))
                failure = None
        if failure is not None:
            return self.throw(failure)
        return self._resume(True)

    def throw(self, error: ToolError) -> Step:
        """Continue after a host call that failed: the script sees `{kind=..., message=...}`."""
        ident = len(self._host_errors) + 1
        self._host_errors[ident] = error
        with self._lifted:
            builder = self._builder()
            try:
                table = builder.build({**error.to_data(), "message": error.message})
            except TypeError:
                table = builder.build({"kind": error.kind.value, "message": error.message})
            self._driver["stash"](table)
            self._driver["host_error"](ident)
        return self._resume(False)

    def reset(self) -> None:
        """Drop the eval's coroutine and everything it held (the runtime stays usable)."""
        self._host_errors.clear()
        with self._lifted:
            self._driver["reset"]()

    def _limited(self, function: Any, *args: Any) -> Any:
        try:
            return function(*args)
        except lua54.LuaMemoryError:
            raise self._limit_error(b"memory") from None
        except lua54.LuaError as exc:
            self.broken = True
            if "not enough memory" in str(exc):
                raise self._limit_error(b"memory") from None
            raise ToolError(
                ErrorKind.LUA_ERROR,
                "The Lua sandbox failed internally; run the script again.",
                error=_short(str(exc)),
            ) from None

    def _resume(self, ok: bool, value: float | None = None) -> Step:
        budget = max(self._cpu_left, 0.0)
        used, *out = self._limited(self._driver["resume"], budget, ok, value)
        self._cpu_left -= used  # a resume that raised broke the runtime: no count needed
        return self._interpret(tuple(out))

    def _interpret(self, out: tuple[Any, ...]) -> Step:
        status = out[0]
        if status == b"done":
            return Finished(decode_json(out[1]))
        if status == b"host":
            return HostRequest(_text(out[1]), tuple(out[2:]))
        if status == b"host_error":
            raise self._host_errors[out[1]]
        if status == b"limit":
            raise self._limit_error(out[1])
        if status == b"fail":
            kind, text = ErrorKind(_text(out[1])), _text(out[2])
            if kind is ErrorKind.OUTPUT_TOO_LARGE:
                raise ToolError(
                    kind,
                    f"The script's result is too large ({text}); return less data, or raise "
                    "lua.result_bytes in the config.",
                    limit=self._limits.result_bytes,
                )
            raise ToolError(kind, f"The script's result cannot become JSON: {text}.", error=text)
        if status == b"yield":
            raise ToolError(
                ErrorKind.LUA_ERROR,
                "The script called coroutine.yield outside a coroutine of its own; "
                "return a value instead.",
            )
        text = _text(out[1])
        raise ToolError(
            ErrorKind.LUA_ERROR,
            f"The Lua script raised an error ({_short(text)}); fix the script and run it again.",
            error=text,
        )

    def _limit_error(self, which: bytes) -> ToolError:
        self.broken = True
        if which == b"cpu":
            seconds = self._limits.cpu_seconds
            return ToolError(
                ErrorKind.LUA_TIMEOUT,
                f"The script used more than {seconds:g} s of CPU time; make it do less work "
                "or raise lua.cpu_seconds in the config.",
                limit="cpu_seconds",
            )
        return ToolError(
            ErrorKind.LUA_MEMORY,
            f"The script used more than {self._limits.memory_mb} MiB of memory; make it hold "
            "less data or raise lua.memory_mb in the config.",
            limit="memory_mb",
        )


class _Lifted:
    """`with`: the memory cap lifted while Python pushes data (lupa pushes it unprotected)."""

    def __init__(self, runtime: Any, max_memory: int) -> None:
        self._runtime = runtime
        self._max_memory = max_memory

    def __enter__(self) -> None:
        self._runtime.set_max_memory(0)

    def __exit__(self, *exc: object) -> None:
        self._runtime.set_max_memory(self._max_memory)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _short(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."
