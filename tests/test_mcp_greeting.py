"""`codeward mcp` answering the host's `initialize` itself while the daemon it started
starts (`pump.greet`, `protocol/mcp_greeting.answer`): the host never gets a second answer.
The pump answers only a line the daemon takes as that same `initialize` (the daemon then
skips it, its session initialized); and when the daemon does not take the handoff, the
copied session drops the daemon's answer to it."""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeward.client import pump
from codeward.protocol.mcp import HANDOFF_METHOD, Initialize, McpMachine
from codeward.protocol.mcp_greeting import answer

READ_TIMEOUT = 30.0
HEAD = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
PARAMS = b'{"protocolVersion":"2025-06-18","clientInfo":{"name":"h"}'


def takes_it_alike(line: bytes) -> None:
    """When the pump answers `line`, the daemon reads it as that same `initialize`."""
    answered = answer(line, "/p")
    event = McpMachine().receive(line)
    if answered is not None:
        assert isinstance(event, Initialize), (line, event)
        assert json.loads(answered[0])["id"] == event.id == answered[1]


@pytest.mark.parametrize(
    "line",
    [
        HEAD + PARAMS + b',"capabilities":{"x":NaN}}}',  # not JSON: Python's json takes them
        HEAD + PARAMS + b',"capabilities":{"x":-Infinity}}}',
        HEAD + PARAMS + b',"capabilities":{"x":1e999}}}',  # a number beyond a double
        HEAD + b'{"protocolVersion":"2025-06-18","clientInfo":{"name":"\\ud800"}}}',  # half
        b"\xef\xbb\xbf" + HEAD + PARAMS + b"}}",  # a byte order mark
        HEAD + b'{"protocolVersion":"2025-06-18","clientInfo":5,"clientInfo":{}}}',  # twice
        HEAD + PARAMS + b',"capabilities":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        HEAD + PARAMS + b"}}",  # (well-formed: both take it)
        b'{"jsonrpc":"2.0","id":-99999999999999999999,"method":"initialize","params":'
        + PARAMS + b"}}",
    ],
)  # fmt: skip
def test_the_pump_answers_only_an_initialize_the_daemon_takes(line: bytes) -> None:
    takes_it_alike(line)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)  # fmt: skip (floats include nan and inf; text includes lone surrogates)


@given(
    msg_id=JSON,
    version=JSON,
    info=JSON,
    capabilities=JSON,
    extra=st.sampled_from([b"", b" ", b"\r", b"\xef\xbb\xbf", b"x", b"\xff", b"}"]),
)
def test_any_line_the_pump_answers_the_daemon_takes_as_that_initialize(
    msg_id: Any, version: Any, info: Any, capabilities: Any, extra: bytes
) -> None:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
               "params": {"protocolVersion": version, "clientInfo": info,
                          "capabilities": capabilities}}  # fmt: skip
    text = json.dumps(message).encode()  # (NaN, Infinity and \ud800 escapes as Python writes)
    for line in (text, extra + text, text + extra):
        takes_it_alike(line)
    fields = isinstance(version, str) and isinstance(capabilities, dict)
    fields = fields and isinstance(info, dict)
    fields = fields and all(isinstance(info.get(k, ""), str) for k in ("name", "version"))
    fine = isinstance(msg_id, int | str) and not isinstance(msg_id, bool)
    if fields and fine and not _odd(message):
        assert answer(text, "/p") is not None  # (still answered: not refused wholesale)


def _odd(value: Any) -> bool:
    """Whether `value` holds what JSON cannot say (NaN, infinities, half surrogates)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return any(_odd(v) for v in value)
    if isinstance(value, dict):
        return any(_odd(k) or _odd(v) for k, v in value.items())
    return False


class _Starting:
    """A daemon being started, as `pump.greet` and `pump.wait` see it; it listens on `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ready_fd, self.ready_write = os.pipe()  # (never readable: the host speaks first)
        self.deadline = time.monotonic() + READ_TIMEOUT

    def wait(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(self.path))
        return sock


def refusing_daemon(listener: socket.socket, seen: list[bytes]) -> None:
    """A daemon that refuses the handoff (as an older one would), then serves the copied
    session: it answers an `initialize` (it cannot know the pump did) and echoes the rest."""
    first, _ = listener.accept()
    with first:
        data, ancillary, _, _ = first.recvmsg(65536, socket.CMSG_SPACE(8))
        for _level, _kind, payload in ancillary:
            for i in range(0, len(payload) - len(payload) % 4, 4):
                os.close(int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True))
        seen.append(data)
        refusal = {"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "no"}}
        first.sendall(json.dumps(refusal).encode() + b"\n")
    second, _ = listener.accept()
    with second, second.makefile("rb") as lines:
        for got in lines:
            seen.append(got)
            message = json.loads(got)
            if message.get("method") == "initialize":
                second.sendall(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"again": True}}
                second.sendall(json.dumps(reply).encode() + b"\n")
            elif "id" in message:
                second.sendall(got)


class _Fd:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def test_a_refused_handoff_copies_the_session_without_a_second_initialize_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.sock"
    seen: list[bytes] = []
    host_in, stdin = os.pipe()
    stdout, host_out = os.pipe()
    starting = _Starting(path)
    monkeypatch.setattr(pump, "begin", lambda *args, **kwargs: starting)
    init = {"jsonrpc": "2.0", "id": "i", "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "h"}}}  # fmt: skip
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    codes: list[int] = []
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        listener.settimeout(READ_TIMEOUT)
        daemon = threading.Thread(target=refusing_daemon, args=(listener, seen), daemon=True)
        daemon.start()
        os.write(stdin, json.dumps(init).encode() + b"\n")
        run = threading.Thread(target=lambda: codes.append(pump.run(
            str(path), tmp_path, autostart=False, stdin=_Fd(host_in),  # type: ignore[arg-type]
            stdout=_Fd(host_out),  # type: ignore[arg-type]
        )), daemon=True)  # fmt: skip
        run.start()
        with os.fdopen(stdout, "rb") as out:
            first = json.loads(out.readline())
            assert first["id"] == "i" and first["result"]["serverInfo"]["name"] == "codeward"
            os.write(stdin, json.dumps(ping).encode() + b"\n")
            os.close(stdin)
            run.join(READ_TIMEOUT)
            daemon.join(READ_TIMEOUT)
            os.close(host_out)  # (the pump is done: what it wrote ends here)
            rest = [json.loads(line) for line in out.read().splitlines()]
    # the daemon got the handoff, then the binding and the host's lines; the host got the
    # pump's answer, the daemon's notification and the ping's: never a second answer to "i"
    assert json.loads(seen[0])["method"] == HANDOFF_METHOD
    assert [json.loads(s).get("method") for s in seen[1:]] == ["codeward/mcp", "initialize",
                                                               "ping"]  # fmt: skip
    assert rest == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, ping]
    assert codes == [0]
    for fd in (host_in, starting.ready_fd, starting.ready_write):
        os.close(fd)


def test_the_daemons_answer_is_dropped_whatever_the_chunks() -> None:
    """`pump._drop_answer` over the daemon's bytes as they come, a byte at a time: every
    line but the answer to the `initialize` answered passes, as it came; a line not whole
    yet is held until it is (or until the daemon ends)."""
    again = b'{"jsonrpc":"2.0","id":1,"result":{"again":true}}\n'
    sent = b'{"jsonrpc":"2.0","method":"n"}\n{"jsonrpc":"2.0","id":"1","result":{}}\n'
    sent += again + b'{"id":1,"result":2}\n{"x"'  # (a second answer to 1 passes: not ours)
    kept, passed, dropped = b"", b"", False
    for i in range(len(sent)):
        data = sent[i : i + 1]
        if dropped:
            passed += data
            continue
        out, kept, dropped = pump._drop_answer(kept + data, "1", ended=False)
        passed += out
    assert dropped and passed == sent.replace(
        b'{"jsonrpc":"2.0","id":1,"result":{"again":true}}\n', b""
    )
    assert pump._drop_answer(b'{"a":1}\n{"b"', '"i"', ended=True) == (b'{"a":1}\n{"b"', b"", False)
