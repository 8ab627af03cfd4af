"""Python data into Lua tables, and the JSON payloads of host calls back into Python.

The only gate through which data enters the sandbox: JSON-able values become Lua strings,
numbers, booleans and tables; `None` becomes `codeward.null`. Anything else is refused, so no
Python object ever reaches Lua (the runtime runs with `encoding=None`, where a `str` would
otherwise arrive as a Python object).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from codeward.protocol.errors import ErrorKind, ToolError

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 200


class LuaBuilder:
    """Builds Lua values in one runtime; remembers which tables were lists (JSON arrays)."""

    def __init__(self, runtime: Any, null: Any) -> None:
        self._runtime = runtime
        self._null = null
        self.arrays: list[Any] = []

    def build(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise TypeError(f"values nested more than {MAX_DEPTH} deep cannot be passed to Lua")
        kind = type(value)  # the exact JSON types first: the ABC checks cost more
        if kind is str:
            return value.encode("utf-8", "replace")
        if value is None:
            return self._null
        if kind is dict:
            return self._object(value, depth)
        if kind is list:
            return self._array(value, depth)
        if isinstance(value, bool | float):
            return value
        if isinstance(value, int):
            return value if _INT_MIN <= value <= _INT_MAX else float(value)
        if isinstance(value, str):
            return value.encode("utf-8", "replace")
        if isinstance(value, Mapping):
            return self._object(value, depth)
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return self._array(value, depth)
        if isinstance(value, msgspec.Struct):  # a bulk result's rows: their fields, as a dict
            return self._object(msgspec.structs.asdict(value), depth)
        raise TypeError(f"a {type(value).__name__} cannot be passed to Lua")

    def _object(self, value: Mapping[Any, Any], depth: int) -> Any:
        items: dict[bytes, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, not {type(key).__name__}")
            items[key.encode("utf-8", "replace")] = self.build(item, depth + 1)
        return self._runtime.table_from(items)

    def _array(self, value: Sequence[Any], depth: int) -> Any:
        table = self._runtime.table_from([self.build(item, depth + 1) for item in value])
        self.arrays.append(table)
        return table


def decode_json(payload: bytes) -> Any:
    """A JSON text made by the sandbox's encoder."""
    return msgspec.json.decode(payload)


def git_arguments(payloads: Sequence[bytes]) -> tuple[str, list[str], dict[str, Any]]:
    """Validate `codeward.git(subcommand, args, opts)`; raise invalid_arguments otherwise."""
    subcommand, args, opts = (decode_json(p) for p in payloads)
    if not isinstance(subcommand, str) or not subcommand:
        raise _invalid("codeward.git: the subcommand must be a non-empty string")
    if args is None or args == {}:
        args = []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _invalid("codeward.git: args must be a list of strings")
    if opts is None or opts == []:
        opts = {}
    if not isinstance(opts, dict):
        raise _invalid("codeward.git: opts must be a table with named fields")
    return subcommand, args, opts


def call_arguments(payloads: Sequence[bytes]) -> tuple[str, dict[str, Any]]:
    """Validate `codeward.call(tool, arguments)`; raise invalid_arguments otherwise."""
    tool, arguments = (decode_json(p) for p in payloads)
    if not isinstance(tool, str) or not tool:
        raise _invalid("codeward.call: the tool name must be a non-empty string")
    if arguments is None or arguments == []:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _invalid("codeward.call: arguments must be a table with named fields")
    return tool, arguments


def _invalid(message: str) -> ToolError:
    return ToolError(ErrorKind.INVALID_ARGUMENTS, f"{message}; fix the call in the script.")
