"""`codeward lsp`: a stdio language server that is only a pump into the daemon, which speaks
LSP on the connection (the editor's root comes from its `initialize`).

As `codeward mcp` (`client.pump`): it connects to the daemon (starting it when none answers)
and, when stdin and stdout are pipes or sockets (as editors give them), hands both to the
daemon with the handoff frame (`SCM_RIGHTS`), then only waits for the daemon's last line,
which carries the exit code (0 after `shutdown` then `exit`, else 1). Otherwise it sends the
binding frame and copies bytes both ways until either side closes. Standard library only.
"""

# (no `from __future__ import annotations`: its module is one more import at every editor's
# start; the annotations naming what only type checkers import are strings)

import _socket
import sys

from codeward.client.pump import (
    CHUNK,
    EXIT_UNREACHABLE,
    Unreachable,
    can_hand_off,
    connect,
    copy,
)
from codeward.protocol.socket_path import socket_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

BIND_METHOD = "codeward/lsp"  # as codeward.protocol.lsp.BIND_METHOD (msgspec-free here)
HANDOFF_METHOD = "codeward/lsp-stdio"  # as codeward.protocol.lsp.HANDOFF_METHOD
ENDED = b'"codeward/lsp-ended"'


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


HANDOFF = frame(b'{"jsonrpc":"2.0","id":0,"method":"' + HANDOFF_METHOD.encode() + b'"}')
BINDING = frame(b'{"jsonrpc":"2.0","method":"' + BIND_METHOD.encode() + b'"}')


def _first_frame(sock: _socket.socket) -> tuple[bytes, bytes] | None:
    """The daemon's first frame on the socket and what followed it (None: it closed)."""
    received = b""
    while True:
        head, sep, rest = received.partition(b"\r\n\r\n")
        if sep:
            length = _length(head)
            if length is not None and len(rest) >= length:
                return rest[:length], rest[length:]
        data = sock.recv(CHUNK)
        if not data:
            return None
        received += data


def _length(head: bytes) -> int | None:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


def exit_code(last: bytes) -> int | None:
    """The code of the daemon's ended frame (`..."params":{"code":N}}`), if it came."""
    if ENDED not in last:
        return None
    _, _, after = last.rpartition(b'"code":')
    digits = after[: len(after) - len(after.lstrip(b"-0123456789"))]
    try:
        return int(digits)
    except ValueError:
        return None


def hand_off(sock: _socket.socket, in_fd: int, out_fd: int) -> int | None:
    """Give stdin and stdout to the daemon and wait for the session's end: the exit code the
    daemon sent (1 when it closed without one); None when it did not take them."""
    fds = in_fd.to_bytes(4, sys.byteorder, signed=True) + out_fd.to_bytes(
        4, sys.byteorder, signed=True
    )
    sock.sendmsg([HANDOFF], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    first = _first_frame(sock)
    if first is None:
        return None
    answer, rest = first
    if b'"result"' not in answer:
        return None
    while data := sock.recv(CHUNK):
        rest += data
    code = exit_code(rest)
    return EXIT_UNREACHABLE if code is None else code


def run(
    socket_arg: str | None,
    *,
    autostart: bool = True,
    stdin: "TextIO | None" = None,
    stdout: "TextIO | None" = None,
    stderr: "TextIO | None" = None,
) -> int:
    """Pump one editor's LSP session into the daemon: the exit code LSP asks for (0 after
    shutdown and exit, else 1); 3 when the daemon could not be reached or went away."""
    err = stderr or sys.stderr
    try:
        sock = connect(socket_file(socket_arg), autostart=autostart)
    except Unreachable as exc:
        err.write(f"codeward: {exc.message}\n")
        return EXIT_UNREACHABLE
    in_fd, out_fd = (stdin or sys.stdin).fileno(), (stdout or sys.stdout).fileno()
    code: int | None = None
    try:
        if can_hand_off(in_fd, out_fd):
            code = hand_off(sock, in_fd, out_fd)
            if code is None:
                sock.close()
                sock = connect(socket_file(socket_arg), autostart=False)
        if code is None:
            sock.sendall(BINDING)
            copy(sock, in_fd, out_fd)
            code = 0  # copied: the daemon closes after exit, as it does when it stops
    except Unreachable as exc:
        err.write(f"codeward: {exc.message}\n")
        return EXIT_UNREACHABLE
    except OSError:
        code = EXIT_UNREACHABLE
    finally:
        sock.close()
    if code == EXIT_UNREACHABLE:
        err.write("codeward: the daemon closed the connection (stopped?); restart the server.\n")
    return code


def main(options: dict[str, str]) -> int:
    """`codeward [--socket PATH] [--no-autostart] lsp`, from the console script."""
    try:
        return run(options.get("socket"), autostart="no-autostart" not in options)
    except KeyboardInterrupt:
        return 130
