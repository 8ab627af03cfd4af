"""A blocking JSON-RPC connection to the daemon: NDJSON over a Unix socket, stdlib only.

Requests are answered one at a time; while a reply is awaited, the daemon's own requests
(`client/confirm`) are answered and its notifications (`$/progress`) are passed on. The
JSON-RPC state is the sans-IO `Peer` the daemon uses too, with the stdlib `json` codec.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeward import __version__
from codeward.client.reach import CONNECT_TIMEOUT, ClientError
from codeward.client.reach import DaemonUnreachable as DaemonUnreachable
from codeward.client.reach import connect_socket as connect_socket
from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import DEFAULT_MAX_MESSAGE, FrameError, Framing
from codeward.protocol.jsoncodec import JsonCodec, JsonMessage
from codeward.protocol.peer import (
    BatchReceived,
    Event,
    Id,
    InvalidMessage,
    NotificationReceived,
    Peer,
    RequestReceived,
    ResponseReceived,
    UnmatchedResponse,
)

PROTOCOL_VERSION = 1

ConfirmHandler = Callable[[dict[str, Any]], bool]
ProgressHandler = Callable[[dict[str, Any]], None]


class ConnectionLost(ClientError):
    """The daemon closed the connection, or broke the protocol, before it replied."""


class RequestTimeout(ClientError):
    """No reply came within the request's timeout (the request was cancelled)."""


class RemoteError(ClientError):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data

    @property
    def kind(self) -> str | None:
        """`data.kind` of a tool error (code -32000), else None."""
        if self.code == ErrorCode.TOOL_ERROR and isinstance(self.data, dict):
            kind = self.data.get("kind")
            return kind if isinstance(kind, str) else None
        return None

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class Connection:
    """One connection to the daemon. Not thread-safe: one request at a time."""

    def __init__(
        self,
        sock: socket.socket,
        *,
        on_confirm: ConfirmHandler | None = None,
        on_progress: ProgressHandler | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
    ) -> None:
        self._sock = sock
        self._peer = Peer(JsonCodec(), Framing.NDJSON, max_message=max_message)
        self._events: deque[Event] = deque()
        self._closed = False
        self._farewell = ""  # why the daemon closes this connection, when it said so
        self.on_confirm = on_confirm
        self.on_progress = on_progress

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sock.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and return its result; raise `RemoteError` for an error reply,
        `ConnectionLost`, or `RequestTimeout` (after sending `$/cancelRequest`)."""
        self._ensure_open()
        msg_id, frame = self._peer.send_request(method, params)
        deadline = None if timeout is None else time.monotonic() + timeout
        self._send(frame)
        try:
            while True:
                event = self._receive(deadline)
                if event is None:
                    self._cancel(msg_id, method)
                    raise RequestTimeout(
                        f"No reply to {method} within {timeout:g} s; the request was cancelled."
                    )
                answer = self._handle(event, msg_id)
                if answer is not None:
                    return self._result_of(answer)
        except KeyboardInterrupt:
            self._cancel(msg_id, method)
            raise

    def notify(self, method: str, params: Any = None) -> None:
        self._ensure_open()
        self._send(self._peer.notify(method, params))

    def initialize(self, client_name: str = "codeward-cli") -> dict[str, Any]:
        """Declare who we are and which daemon-to-client requests we can take."""
        return self.request(
            "initialize",
            {
                "protocol_version": PROTOCOL_VERSION,
                "client": {"name": client_name, "version": __version__},
                "capabilities": {
                    "confirm": self.on_confirm is not None,
                    "progress": self.on_progress is not None,
                },
            },
        )

    def open_session(self, root: Path | str) -> dict[str, Any]:
        return self.request("session/open", {"root": str(root)})

    def wait_closed(self, timeout: float) -> bool:
        """Read (and handle) messages until the daemon closes the connection; False if it
        is still open after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                event = self._receive(deadline)
                if event is None:
                    return False
                self._handle(event, None)
        except ConnectionLost:
            return True

    # -- internals -------------------------------------------------------------------------

    def _ensure_open(self) -> None:
        if self._closed:
            raise ConnectionLost("The connection to the daemon is closed.")

    def _send(self, frame: bytes) -> None:
        self._ensure_open()
        try:
            self._sock.settimeout(CONNECT_TIMEOUT)
            self._sock.sendall(frame)
        except OSError as exc:
            self._read_farewell()
            self.close()
            raise ConnectionLost(
                self._farewell or f"The daemon closed the connection ({exc.strerror})."
            ) from None

    def _read_farewell(self) -> None:
        """After a failed write, read what the daemon sent before it closed: a refusal
        (all connections busy, shutting down) says why, where a broken pipe says nothing."""
        with contextlib.suppress(OSError, FrameError):
            self._sock.setblocking(False)
            while data := self._sock.recv(65536):
                for event in self._peer.receive_data(data):
                    self._handle(event, None)

    def _cancel(self, msg_id: Id, method: str) -> None:
        frame = self._peer.abandon(msg_id, method)
        if frame is not None:
            with contextlib.suppress(ConnectionLost):
                self._send(frame)

    def _receive(self, deadline: float | None) -> Event | None:
        """The next event, or None when `deadline` passed first."""
        while not self._events:
            self._ensure_open()
            if deadline is None:
                self._sock.settimeout(None)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                return None
            except OSError as exc:
                self.close()
                raise ConnectionLost(
                    self._farewell or f"The connection to the daemon broke ({exc.strerror})."
                ) from None
            if not data:
                self.close()
                raise ConnectionLost(
                    self._farewell or "The daemon closed the connection before it replied."
                )
            try:
                self._events.extend(self._peer.receive_data(data))
            except FrameError as exc:
                self.close()
                raise ConnectionLost(f"The daemon sent a bad frame: {exc}") from None
        return self._events.popleft()

    def _handle(self, event: Event, awaited: Id | None) -> JsonMessage | None:
        """Handle one event (or batch); return the reply to `awaited` if it is that."""
        if isinstance(event, ResponseReceived):
            return event.message if event.id == awaited else None
        if isinstance(event, BatchReceived):
            reply = None
            for item in event.events:
                reply = self._handle(item, awaited) or reply
            return reply
        if isinstance(event, RequestReceived):
            self._answer(event.message)
        elif isinstance(event, NotificationReceived):
            message = event.message
            if message.method == "$/progress" and self.on_progress is not None:
                params = message.payload
                self.on_progress(params if isinstance(params, dict) else {})
        elif isinstance(event, UnmatchedResponse):
            error = event.message.error
            if event.id is None and isinstance(error, dict):  # the daemon says goodbye
                self._farewell = f"The daemon closed the connection: {error.get('message')}"
        elif isinstance(event, InvalidMessage) and event.error.code == ErrorCode.PARSE_ERROR:
            self.close()
            raise ConnectionLost("The daemon sent a message that is not JSON.")
        return None

    def _answer(self, message: JsonMessage) -> None:
        """Reply to a request from the daemon."""
        msg_id = message.id
        assert msg_id is not None
        if message.method == "client/confirm" and self.on_confirm is not None:
            params = message.payload
            approved = bool(self.on_confirm(params if isinstance(params, dict) else {}))
            self._send(self._peer.respond(msg_id, {"approved": approved}))
            return
        self._send(
            self._peer.respond_error(
                msg_id,
                int(ErrorCode.METHOD_NOT_FOUND),
                f"This client does not handle {message.method}.",
            )
        )

    @staticmethod
    def _result_of(reply: JsonMessage) -> Any:
        error = reply.error
        if error is not None:
            if not isinstance(error, dict):
                raise RemoteError(int(ErrorCode.INTERNAL_ERROR), "The daemon sent a bad error.")
            code = error.get("code")
            if not isinstance(code, int):
                code = int(ErrorCode.INTERNAL_ERROR)
            raise RemoteError(code, str(error.get("message", "")), error.get("data"))
        return reply.payload
