"""Values of a result read loosely (a renderer never fails on an odd shape), and JSON as
the CLI prints it."""

from __future__ import annotations

import json
from typing import Any


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def how_many(value: Any) -> int | None:
    """A count: the length of a list, else the int itself."""
    if isinstance(value, list):
        return len(value)
    return as_int(value)
