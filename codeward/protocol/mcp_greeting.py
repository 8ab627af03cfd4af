"""MCP's `initialize` answer, stdlib only: the daemon's (`mcp.McpMachine`) and the one
`codeward mcp` gives itself while the daemon it started still starts (`answer`).

The answer needs no daemon state: the protocol version negotiated, the server's name and
version, its one capability (tools, whose list may change) and the instructions, which
name the project.
"""

from __future__ import annotations

import json

from codeward import __version__

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = VERSIONS[-1]
SERVER_NAME = "codeward"


def negotiate(asked: str) -> str:
    """The version to answer: the client's when supported, else the latest."""
    return asked if asked in VERSIONS else LATEST_VERSION


def project_name(root: str | None) -> str:
    """The last part of a root's path (`/` for the file system's root)."""
    return (root or "").rstrip("/").rsplit("/", 1)[-1] or "/"


def instructions(root: str | None) -> str:
    """What the model reads about the server (naming the project when there is one)."""
    where = f" for the project {project_name(root)}" if root else ""
    return (
        f"Safe git, code intelligence from warm language servers and a Lua sandbox{where}. "
        "Positions are 1-based lines and characters, or a line and the `name` on it, or a "
        "`symbol` name path (`Class.method`); paths are relative to the project root."
    )


MAX_DEPTH = 64  # nesting taken here (the daemon decodes far deeper: no doubt left to it)
FIELDS = frozenset({"jsonrpc", "id", "method", "params"})


def answer(line: bytes, root: str) -> tuple[bytes, int | str] | None:
    """The answer line to `line` and its id when `line` is a well-formed MCP `initialize`
    request (as the daemon takes it: strict JSON, see `_strict`), for a session of `root`;
    None for anything else (the daemon answers that itself: a line answered here and
    refused there would be answered twice, the session left uninitialized)."""
    try:
        message = _strict(line)
    except (ValueError, RecursionError):  # (UnicodeDecodeError and JSONDecodeError too)
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if not message.keys() <= FIELDS:  # (a `result` or an `error` is the daemon's to judge)
        return None
    msg_id = message.get("id")
    params = message.get("params")
    if message.get("method") != "initialize" or not _is_id(msg_id) or not _is_params(params):
        return None
    assert isinstance(msg_id, int | str) and isinstance(params, dict)
    result = {
        "protocolVersion": negotiate(params["protocolVersion"]),
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "capabilities": {"tools": {"listChanged": True}},
        "instructions": instructions(root),
    }
    reply = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n", msg_id


def _strict(line: bytes) -> object:
    """`line` as JSON read as strictly as the daemon reads it (RFC 8259: UTF-8 without a
    byte order mark, no NaN or infinities, no lone surrogates), no key twice in an object
    and no nesting past `MAX_DEPTH`; raises ValueError for anything else."""
    value = json.loads(
        line.decode("utf-8"),
        parse_constant=_not_json,
        parse_float=_finite,
        object_pairs_hook=_unique,
    )
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError("nested too deeply")
        if isinstance(item, str):
            item.encode("utf-8")  # (a lone surrogate raises UnicodeEncodeError)
        elif isinstance(item, dict):
            stack += [(k, depth) for k in item] + [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return value


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is beyond a double")
    return value


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key twice in one object")
    return found


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_params(params: object) -> bool:
    """Whether `params` are `initialize`'s as the daemon decodes them (strictly: anything
    doubtful is left to the daemon)."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    if not isinstance(info, dict):
        return False
    if any(not isinstance(info.get(k, ""), str) for k in ("name", "version")):
        return False
    return isinstance(params.get("capabilities", {}), dict)
