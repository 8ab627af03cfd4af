"""What the passthrough tools print: git's own output, a Lua script's value and logs."""

from __future__ import annotations

import json
from typing import Any

from codeward.protocol.render.values import to_json


def git(result: dict[str, Any]) -> list[str]:
    """git's own output, then its stderr."""
    out = [str(result.get(key) or "").rstrip("\n") for key in ("output", "stderr")]
    return "\n".join(part for part in out if part).splitlines()


def lua(result: dict[str, Any]) -> list[str]:
    """A string result prints as is; anything else as JSON."""
    value = result.get("result")
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines() or [""]
    return to_json(value).splitlines()


def script(result: dict[str, Any]) -> list[str]:
    """run_lua's text: its value (a string as is, anything else as compact JSON), then its
    log lines."""
    value, logs = result.get("result"), result.get("logs")
    if value is None:
        lines = []
    elif isinstance(value, str):
        lines = value.splitlines() or [""]
    else:
        lines = [json.dumps(value, ensure_ascii=False, separators=(",", ":"))]
    return [*lines, *(f"log: {line}" for line in logs or [] if isinstance(line, str))]
