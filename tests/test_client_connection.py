"""The blocking client connection, against a scripted NDJSON peer served by a thread.

The peer (`FakeDaemon`) is for client-only behaviour: confirm handling, error replies,
timeouts, disconnects and protocol faults. The real daemon is exercised in test_cli_e2e.py.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.client.connection import (
    Connection,
    ConnectionLost,
    RemoteError,
    RequestTimeout,
    connect_socket,
)

JOIN_TIMEOUT = 10.0


class Peer:
    """One accepted connection, seen from the fake daemon."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(JOIN_TIMEOUT)
        self.file = sock.makefile("rb")

    def recv(self) -> Any | None:
        """The next message, or None at EOF."""
        try:
            line = self.file.readline()
        except (OSError, ValueError):  # reset, or closed by the script itself
            return None
        return json.loads(line) if line else None

    def send(self, message: Any) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self, request: dict[str, Any], result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def error(self, request: dict[str, Any], code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def close(self) -> None:
        self.file.close()
        self.sock.close()


Script = Callable[[Peer], None]


class FakeDaemon:
    """A Unix socket served by a thread; each connection runs `script` in its own thread.

    Every message the peers receive is recorded in `received`; an exception in a script
    is re-raised when the fake is closed, so a broken expectation fails the test.
    """

    def __init__(self, path: Path, script: Script) -> None:
        self.path = path
        self.script = script
        self.received: list[dict[str, Any]] = []
        self.connections = 0
        self._errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def __enter__(self) -> FakeDaemon:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._listener.bind(str(self.path))
        self._listener.listen(16)
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (Linux)
        self._listener.close()
        for thread in list(self._threads):
            thread.join(JOIN_TIMEOUT)
            assert not thread.is_alive(), "a fake daemon thread did not finish"
        if self._errors and exc_info[0] is None:
            raise self._errors[0]

    def methods(self) -> list[str]:
        return [m.get("method", "") for m in self.received if isinstance(m, dict)]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if isinstance(m, dict) and m.get("method") == method]

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(Peer(sock),), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, peer: Peer) -> None:
        try:
            self.script(_Recording(peer, self.received))
        except BaseException as exc:
            self._errors.append(exc)
        finally:
            peer.close()


class _Recording(Peer):
    """A Peer that records what it receives."""

    def __init__(self, peer: Peer, log: list[dict[str, Any]]) -> None:
        self.sock = peer.sock
        self.file = peer.file
        self._log = log

    def recv(self) -> Any | None:
        message = super().recv()
        if message is not None:
            self._log.append(message)
        return message


DEFAULTS: dict[str, Any] = {
    "initialize": {"protocol_version": 1, "server": {"name": "codeward", "version": "0"}, "pid": 1},
    "session/open": {"session_id": "s1", "root": "/r", "created": True, "languages": []},
}


def responder(handlers: dict[str, Any] | None = None) -> Script:
    """Answer each request from `handlers` (a result, or a callable `(peer, request)`),
    falling back to DEFAULTS, else a method-not-found error."""
    table = DEFAULTS | (handlers or {})

    def serve(peer: Peer) -> None:
        while (message := peer.recv()) is not None:
            if not isinstance(message, dict) or "id" not in message:
                continue
            handler = table.get(message.get("method", ""))
            if callable(handler):
                handler(peer, message)
            elif handler is None:
                peer.error(message, -32601, f"Method not found: {message.get('method')}.")
            else:
                peer.reply(message, handler)

    return serve


def private_socket() -> Iterator[Path]:
    """A socket path in a fresh short directory (AF_UNIX paths are limited to 108 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="cwc-", dir="/tmp"))
    try:
        yield base / "run" / "codeward.sock"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


def open_conn(path: Path, **kwargs: Any) -> Connection:
    return Connection(connect_socket(path), **kwargs)


# -- tests --------------------------------------------------------------------------------


def test_request_returns_result_and_initialize_declares_capabilities(sock_path: Path) -> None:
    script = responder({"daemon/status": {"pid": 7}})
    with FakeDaemon(sock_path, script) as fake, open_conn(sock_path, on_confirm=bool) as conn:
        info = conn.initialize()
        assert info["server"]["name"] == "codeward"
        assert conn.request("daemon/status", timeout=5) == {"pid": 7}
        assert conn.open_session("/some/root")["session_id"] == "s1"
    init = fake.requests("initialize")[0]
    assert init["params"]["protocol_version"] == 1
    assert init["params"]["client"]["name"] == "codeward-cli"
    assert init["params"]["capabilities"] == {"confirm": True, "progress": False}
    assert fake.requests("session/open")[0]["params"] == {"root": "/some/root"}
    ids = [m["id"] for m in fake.received]
    assert len(set(ids)) == len(ids) and all(isinstance(i, int) for i in ids)
    assert "params" not in fake.requests("daemon/status")[0]


def test_tool_error_raises_remote_error_with_kind(sock_path: Path) -> None:
    def fail(peer: Peer, req: dict[str, Any]) -> None:
        peer.error(req, -32000, "Path is outside the project.", {"kind": "path_outside_project"})

    with (
        FakeDaemon(sock_path, responder({"tools/call": fail})),
        open_conn(sock_path) as conn,
        pytest.raises(RemoteError) as info,
    ):
        conn.request("tools/call", {"name": "x", "arguments": {}})
    assert info.value.code == -32000
    assert info.value.kind == "path_outside_project"
    assert info.value.message == "Path is outside the project."
    assert info.value.to_json() == {
        "code": -32000,
        "message": "Path is outside the project.",
        "data": {"kind": "path_outside_project"},
    }


def test_rpc_errors_have_no_kind(sock_path: Path) -> None:
    def odd(peer: Peer, req: dict[str, Any]) -> None:
        peer.send({"jsonrpc": "2.0", "id": req["id"], "error": {"message": "no code"}})

    def not_object(peer: Peer, req: dict[str, Any]) -> None:
        peer.send({"jsonrpc": "2.0", "id": req["id"], "error": "bad"})

    script = responder({"odd": odd, "notobj": not_object})
    with FakeDaemon(sock_path, script), open_conn(sock_path) as conn:
        with pytest.raises(RemoteError) as missing:
            conn.request("nope")
        with pytest.raises(RemoteError) as no_code:
            conn.request("odd")
        with pytest.raises(RemoteError) as bad:
            conn.request("notobj")
    assert missing.value.code == -32601 and missing.value.kind is None
    assert "data" not in missing.value.to_json()
    assert no_code.value.code == -32603 and no_code.value.message == "no code"
    assert bad.value.code == -32603


@pytest.mark.parametrize("answer", [True, False])
def test_confirm_request_is_answered_while_waiting(sock_path: Path, answer: bool) -> None:
    asked: list[dict[str, Any]] = []

    def git(peer: Peer, req: dict[str, Any]) -> None:
        params = {"session_id": "s1", "tool": "git_command", "summary": "commit", "argv": ["git"]}
        peer.send({"jsonrpc": "2.0", "id": "c-1", "method": "client/confirm", "params": params})
        reply = peer.recv()
        assert reply is not None and reply["id"] == "c-1"
        peer.reply(req, {"approved_seen": reply["result"]["approved"]})

    def on_confirm(params: dict[str, Any]) -> bool:
        asked.append(params)
        return answer

    with (
        FakeDaemon(sock_path, responder({"tools/call": git})),
        open_conn(sock_path, on_confirm=on_confirm) as conn,
    ):
        assert conn.request("tools/call", {}) == {"approved_seen": answer}
    assert asked == [
        {"session_id": "s1", "tool": "git_command", "summary": "commit", "argv": ["git"]}
    ]


def test_daemon_request_without_handler_gets_method_not_found(sock_path: Path) -> None:
    def git(peer: Peer, req: dict[str, Any]) -> None:
        peer.send({"jsonrpc": "2.0", "id": 0, "method": "client/confirm", "params": {}})
        reply = peer.recv()
        peer.reply(req, reply)

    with FakeDaemon(sock_path, responder({"tools/call": git})), open_conn(sock_path) as conn:
        reply = conn.request("tools/call", {})
    assert reply["id"] == 0
    assert reply["error"]["code"] == -32601
    assert "client/confirm" in reply["error"]["message"]


def test_progress_notifications_reach_the_handler(sock_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def diags(peer: Peer, req: dict[str, Any]) -> None:
        for pct in (10, 90):
            params = {"server": "basedpyright", "kind": "report", "percentage": pct}
            peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": params})
        peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": "junk"})
        peer.send({"jsonrpc": "2.0", "method": "$/other"})
        peer.reply(req, {"count": 0})

    with FakeDaemon(sock_path, responder({"tools/call": diags})):
        with open_conn(sock_path, on_progress=seen.append) as conn:
            assert conn.request("tools/call") == {"count": 0}
        with open_conn(sock_path) as conn:  # no handler: notifications are dropped
            assert conn.request("tools/call") == {"count": 0}
    assert [p.get("percentage") for p in seen] == [10, 90, None]


def test_stale_replies_and_batches(sock_path: Path) -> None:
    def noisy(peer: Peer, req: dict[str, Any]) -> None:
        peer.send({"jsonrpc": "2.0", "id": 999, "result": "stale"})
        peer.send(42)
        peer.send(
            [
                {"jsonrpc": "2.0", "method": "$/progress", "params": {}},
                {"id": req["id"], "result": "ok"},
            ]
        )

    with FakeDaemon(sock_path, responder({"noisy": noisy})), open_conn(sock_path) as conn:
        assert conn.request("noisy") == "ok"


def test_disconnect_mid_request_raises_connection_lost(sock_path: Path) -> None:
    def hang_up(peer: Peer, req: dict[str, Any]) -> None:
        peer.close()

    with FakeDaemon(sock_path, responder({"tools/call": hang_up})), open_conn(sock_path) as conn:
        with pytest.raises(ConnectionLost, match="closed the connection"):
            conn.request("tools/call")
        assert conn.closed
        with pytest.raises(ConnectionLost):
            conn.request("daemon/status")


def test_garbage_from_the_daemon_raises_connection_lost(sock_path: Path) -> None:
    def garbage(peer: Peer, req: dict[str, Any]) -> None:
        peer.send_raw(b"this is not json\n")

    with (
        FakeDaemon(sock_path, responder({"x": garbage})),
        open_conn(sock_path) as conn,
        pytest.raises(ConnectionLost, match="not JSON"),
    ):
        conn.request("x")


def test_oversized_frame_raises_connection_lost(sock_path: Path) -> None:
    def huge(peer: Peer, req: dict[str, Any]) -> None:
        peer.send_raw(b'{"x": "' + b"a" * 2048)

    with (
        FakeDaemon(sock_path, responder({"x": huge})),
        Connection(connect_socket(sock_path), max_message=1024) as conn,
        pytest.raises(ConnectionLost, match="bad frame"),
    ):
        conn.request("x")


def test_timeout_cancels_the_request(sock_path: Path) -> None:
    cancelled = threading.Event()

    def never(peer: Peer, req: dict[str, Any]) -> None:
        message = peer.recv()
        assert message == {
            "jsonrpc": "2.0",
            "method": "$/cancelRequest",
            "params": {"id": req["id"]},
        }
        cancelled.set()

    with FakeDaemon(sock_path, responder({"slow": never})), open_conn(sock_path) as conn:
        with pytest.raises(RequestTimeout, match=r"within 0\.2 s"):
            conn.request("slow", timeout=0.2)
        assert cancelled.wait(JOIN_TIMEOUT)


def test_keyboard_interrupt_cancels_the_request(sock_path: Path) -> None:
    cancelled = threading.Event()

    def progress_then_wait(peer: Peer, req: dict[str, Any]) -> None:
        peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": {}})
        message = peer.recv()
        assert message is not None and message["method"] == "$/cancelRequest"
        assert message["params"] == {"id": req["id"]}
        cancelled.set()

    def interrupt(params: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    with (
        FakeDaemon(sock_path, responder({"slow": progress_then_wait})),
        open_conn(sock_path, on_progress=interrupt) as conn,
        pytest.raises(KeyboardInterrupt),
    ):
        conn.request("slow")
    assert cancelled.wait(JOIN_TIMEOUT)


def test_wait_closed(sock_path: Path) -> None:
    def shutdown(peer: Peer, req: dict[str, Any]) -> None:
        peer.reply(req, {})
        peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": {}})
        peer.close()

    def stay(peer: Peer, req: dict[str, Any]) -> None:
        peer.reply(req, {})

    script = responder({"daemon/shutdown": shutdown, "stay": stay})
    with FakeDaemon(sock_path, script):
        with open_conn(sock_path) as conn:
            assert conn.request("daemon/shutdown", {}) == {}
            assert conn.wait_closed(JOIN_TIMEOUT) is True
        with open_conn(sock_path) as conn:
            assert conn.request("stay") == {}
            assert conn.wait_closed(0.05) is False


def test_notify_sends_a_notification(sock_path: Path) -> None:
    with FakeDaemon(sock_path, responder()) as fake, open_conn(sock_path) as conn:
        conn.notify("$/cancelRequest", {"id": 3})
        conn.notify("ping")
        conn.request("initialize", {})
    assert fake.received[0] == {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}}
    assert fake.received[1] == {"jsonrpc": "2.0", "method": "ping"}


def test_send_after_close_raises(sock_path: Path) -> None:
    with FakeDaemon(sock_path, responder()):
        conn = open_conn(sock_path)
        conn.close()
        conn.close()  # idempotent
        with pytest.raises(ConnectionLost, match="closed"):
            conn.request("initialize")


def test_connect_socket_raises_os_errors(sock_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        connect_socket(sock_path)


def test_send_to_a_daemon_that_hung_up_raises(sock_path: Path) -> None:
    def hang_up(peer: Peer) -> None:
        peer.close()

    with FakeDaemon(sock_path, hang_up):
        sock = connect_socket(sock_path)
        assert sock.recv(1) == b""  # the daemon is gone: writing now fails with EPIPE
        with Connection(sock) as conn, pytest.raises(ConnectionLost, match="closed the connection"):
            conn.request("daemon/status")


def test_a_refusal_sent_before_the_daemon_hung_up_is_the_reason(sock_path: Path) -> None:
    """The daemon refused the connection and closed it before the request was written: the
    write fails with EPIPE, and the refusal already received says why."""
    gone = threading.Event()

    def refuse(peer: Peer) -> None:
        peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "busy"}})
        peer.close()
        gone.set()

    with FakeDaemon(sock_path, refuse):
        conn = Connection(connect_socket(sock_path))
        assert gone.wait(JOIN_TIMEOUT)
        with conn, pytest.raises(ConnectionLost) as info:
            conn.request("daemon/status")
    assert str(info.value) == "The daemon closed the connection: busy"
