"""The stdio handoff of `codeward mcp` and `codeward lsp`: the stdin and stdout their first
message passes (SCM_RIGHTS), taken as the connection's streams, and the socket kept as the
pump's lifeline."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat

import trio

from codeward.daemon.hangup import wait_hung_up

PASSED_MAX = 2  # the descriptors a handoff passes: stdin and stdout
# A handed stdout pipe holds this much (Linux's default is 64 KiB): an answer of a few
# hundred KiB (an editor's completion list) goes in one write, not one per time the host
# is scheduled to read 64 KiB of it.
STDOUT_PIPE_BYTES = 1024 * 1024


def take_stdio(
    sock: trio.socket.SocketType, fds: list[int], ack: bytes
) -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream] | None:
    """The streams of the stdin and stdout `fds`, once the framed `ack` went on `sock`;
    None, with `fds` closed, unless they are two pipes or sockets and the ack went."""
    if len(fds) != 2 or not all(_pipe_or_socket(fd) for fd in fds):
        close_all(fds)
        return None
    try:
        written = os.write(sock.fileno(), ack)
    except OSError:
        written = -1
    if written != len(ack):  # a fresh socket takes a line: this is a broken one
        close_all(fds)
        return None
    with contextlib.suppress(OSError):  # a socket, or over the system's limit: as it is
        fcntl.fcntl(fds[1], fcntl.F_SETPIPE_SZ, STDOUT_PIPE_BYTES)
    return trio.lowlevel.FdStream(fds[0]), trio.lowlevel.FdStream(fds[1])


async def watch_pump(fd: int, stdin: trio.lowlevel.FdStream) -> None:
    """The pump went away: stop reading its host's stdin, as a closed socket would."""
    await wait_hung_up(fd)
    await stdin.aclose()


async def end_lifeline(lifeline: trio.abc.Stream, fd: int, ended: bytes | None) -> None:
    """Tell the pump that the host ended the session (`ended`: it exits 0; else 3), and
    close."""
    if ended is not None:
        with contextlib.suppress(OSError):
            os.write(fd, ended)
    await trio.aclose_forcefully(lifeline)


def close_all(fds: list[int]) -> list[int]:
    """Close `fds`; the empty list that is left."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    return []


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
