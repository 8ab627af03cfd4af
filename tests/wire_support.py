"""Bad bytes for every dialect of the daemon's wire: a fixed corpus of nasty messages, the
hypothesis strategies that mutate well-formed ones, and seeded mutations for live daemons."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import strategies as st

from codeward.protocol import mcp

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz"}}
NOT_UTF8 = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"\x80"]


def body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


# Well-formed messages of each dialect: what the mutations start from. (No session/open or
# trust/set: a mutated root could open a session on any folder of the machine.)
NATIVE = [
    body({"id": 1, "method": "daemon/status"}),
    body({"id": "a", "method": "initialize", "params": {"protocol_version": 1,
          "client": {"name": "c", "version": "1"}, "capabilities": {"confirm": True}}}),
    body({"id": 2, "method": "tools/list", "params": {"format": "openai", "strict": True}}),
    body({"id": 3, "method": "tools/call",
          "params": {"name": "git_command", "arguments": {"subcommand": "status"}}}),
    body({"id": 4, "method": "session/close", "params": {"terminate": False}}),
    body({"id": 5, "method": "session/list"}),
    body({"method": "$/cancelRequest", "params": {"id": 3}}),
    body({"method": "initialized", "params": {}}),
    body({"id": "codeward-1", "result": {"approved": True}}),
    body({"id": 9, "error": {"code": -32000, "message": "no", "data": {"kind": "x"}}}),
]  # fmt: skip
MCP = [
    body({"id": 1, "method": "initialize", "params": INIT}),
    body({"id": 2, "method": "tools/list", "params": {"cursor": "c"}}),
    body({"id": 3, "method": "tools/call", "params": {"name": "git_command",
          "arguments": {"subcommand": "status"}, "_meta": {"progressToken": "t"}}}),
    body({"id": 4, "method": "ping"}),
    body({"method": "notifications/cancelled", "params": {"requestId": 3, "reason": "r"}}),
    body({"method": "notifications/initialized"}),
    body({"method": mcp.BIND_METHOD, "params": {"root": "/nonexistent/fuzz"}}),
    body({"id": 5, "result": {}}),
]  # fmt: skip
LSP_INIT = {
    "processId": 1,
    "rootUri": "file:///nonexistent/fuzz",
    "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    "clientInfo": {"name": "fuzz"},
}
TEXT_POSITION = {
    "textDocument": {"uri": "file:///nonexistent/fuzz/a.py"},
    "position": {"line": 0, "character": 1},
}
LSP = [
    body({"id": 1, "method": "initialize", "params": LSP_INIT}),
    body({"method": "initialized", "params": {}}),
    body({"id": 2, "method": "textDocument/hover", "params": TEXT_POSITION}),
    body({"method": "$/cancelRequest", "params": {"id": 2}}),
    body({"method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///nonexistent/fuzz/a.py", "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                      "end": {"line": 0, "character": 1}}, "text": "x"}]}}),
    body({"id": "codeward-1", "result": {"applied": True}}),
    body({"id": 3, "method": "shutdown"}),
    body({"method": "exit"}),
    body({"id": 0, "method": "codeward/lsp-stdio"}),
]  # fmt: skip

DEEP = b"[" * 100_000 + b"]" * 100_000
# Bodies bad in every way a message can be: not UTF-8 in each place, cut short, numbers too
# big, nested too deep, each field of the wrong type, NULs, escapes of no character.
NASTY = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_command",'
    b'"arguments":{"subcommand":"\xff"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\xc3","arguments":{}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\xff":1}}',
    b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping\xed\xa0\x80"}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\xff"}}',
    b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"\xff"}}',
    b'{"jsonrpc":"2.0","method":"codeward/mcp","params":{"root":"\xff"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\xff",'
    b'"clientInfo":{"name":"\xc0\xaf"}}}',
    b'{"jsonrpc":"2.0","id":"codeward-1","result":{"approved":"\xff"}}',
    b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"\xff"}}',
    b'\xff{"jsonrpc":"2.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_command"',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_comm',
    b'{"jsonrpc":"2.0","id":1',
    b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_command",'
    b'"arguments":{"max_count":' + b"9" * 400 + b"}}}",
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + DEEP + b"}",
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_command",'
    b'"arguments":{"subcommand":' + DEEP + b"}}}",
    b'{"jsonrpc":"2.0","id":"codeward-1","result":' + DEEP + b"}",
    b"[" + b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + DEEP + b"}]",
    b'{"jsonrpc":2,"id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":{"a":1}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"arguments":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_command",'
    b'"arguments":{"subcommand":7},"_meta":{"progressToken":{}}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,'
    b'"clientInfo":"x","capabilities":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"x",'
    b'"client":5,"capabilities":{"confirm":"yes"}}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}}',
    b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{}}}',
    b'{"jsonrpc":"2.0","method":"codeward/mcp","params":{"root":5}}',
    b'{"jsonrpc":"2.0","method":"codeward/mcp","params":{"root":"rel\\u0000ative"}}',
    b'{"jsonrpc":"2.0","id":"codeward-1","result":null,"error":{"code":"x"}}',
    b'{"jsonrpc":"2.0","id":"codeward-1","error":{"code":1.5,"message":[]}}',
    b'{"jsonrpc":"2.0","id":null,"result":5}',
    b'{"jsonrpc":"2.0","id":1,"method":"pi\x00ng"}',
    b'{"jsonrpc":"2.0",\x00"id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping\\u0000"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}',
    b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}',
    b"{}",
    b"[]",
    b"[1,2,{}]",
    b"null",
    b'"x"',
    b"5",
    b"\x00",
    b"  ",
]


def framed_ndjson(bodies: list[bytes]) -> bytes:
    """Bodies a line each (a body's own newlines split it: more bad lines)."""
    return b"".join(b + b"\n" for b in bodies)


def framed_content_length(bodies: list[bytes]) -> bytes:
    return b"".join(b"Content-Length: %d\r\n\r\n" % len(b) + b for b in bodies)


BAD_HEADERS = [
    b"Content-Length: x\r\n\r\n{}",
    b"Content-Length: -5\r\n\r\n{}",
    b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n{}",
    b"Content-Length: 99999999999999\r\n\r\n{}",
    b"Content-Length 5\r\n\r\n{}",
    b"Content-Type: x\r\n\r\n{}",
    b"Content-Length: \xff\r\n\r\n{}",
    b"Content-Length: 1\x00\r\n\r\n{}",
    b"C\r\n\r\n",
]


# -- mutations ---------------------------------------------------------------------------------


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                     max_size=3),
        max_leaves=max_leaves,
    )  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field of a message, nested ones included."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found.extend(_paths(item, (*prefix, key)))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value)
    copy[path[0]] = _replaced(copy[path[0]], path[1:], new)
    return copy


@st.composite
def wrong_typed(draw: st.DrawFn, bodies: list[bytes]) -> bytes:
    """A well-formed message with one of its fields (at any depth) given another value."""
    message = json.loads(draw(st.sampled_from(bodies)))
    path = draw(st.sampled_from(_paths(message)))
    return json.dumps(_replaced(message, path, draw(json_values()))).encode()


@st.composite
def mutated(draw: st.DrawFn, bodies: list[bytes]) -> bytes:
    """A well-formed message with bytes changed: not UTF-8, cut short, NULs, flipped bits."""
    data = bytearray(draw(st.sampled_from(bodies)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["bad-utf8", "cut", "nul", "flip", "delete", "deep"]))
        if how == "bad-utf8":
            data[at:at] = draw(st.sampled_from(NOT_UTF8))
        elif how == "cut":
            del data[at:]
        elif how == "nul":
            data[at:at] = b"\x00"
        elif how == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif how == "deep":
            data[at:at] = b"[" * 3000
    return bytes(data)


def bad_bodies(bodies: list[bytes]) -> st.SearchStrategy[bytes]:
    """Bodies for a dialect's machine: nasty, mutated, wrong-typed or random bytes."""
    return st.one_of(
        st.sampled_from(NASTY),
        mutated(bodies),
        wrong_typed(bodies),
        st.binary(max_size=64),
        st.lists(st.sampled_from(bodies) | mutated(bodies), min_size=1, max_size=3).map(
            lambda items: b"[" + b",".join(items) + b"]"
        ),
    )


def seeded_mutations(bodies: list[bytes], count: int, seed: int = 22) -> list[bytes]:
    """`count` mutated bodies, the same every run (for a live daemon, which hypothesis's
    example loop does not restart)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        data = bytearray(rng.choice(bodies))
        at = rng.randrange(len(data) + 1)
        how = rng.choice(["bad-utf8", "cut", "nul", "flip"])
        if how == "bad-utf8":
            data[at:at] = rng.choice(NOT_UTF8)
        elif how == "cut":
            del data[at:]
        elif how == "nul":
            data[at:at] = b"\x00"
        elif at < len(data):
            data[at] ^= 1 << rng.randrange(8)
        out.append(bytes(data))
    return out
