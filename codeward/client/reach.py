"""Reaching the daemon's socket, and the failures the client reports: light to import (the
autostart of `codeward mcp` needs these and no JSON-RPC machinery)."""

from __future__ import annotations

import socket

TYPE_CHECKING = False  # (typing is not imported on `codeward mcp`'s path)
if TYPE_CHECKING:
    from pathlib import Path

CONNECT_TIMEOUT = 5.0


class ClientError(Exception):
    """Base of every failure the client reports."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DaemonUnreachable(ClientError):
    """No daemon answers on the socket (and none could be started)."""


def connect_socket(path: Path, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A connected Unix stream socket; raises OSError (ConnectionRefusedError,
    FileNotFoundError, ...) as `socket.connect` does."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
    except BaseException:
        sock.close()
        raise
    return sock
