"""Reads from sockets and pipes that allocate only the bytes that arrived.

trio's `receive_some(n)` allocates `n` bytes and shrinks them to what the read returned.
With 64 KiB reads, every read of a small frame leaves a hole of almost 64 KiB in glibc's
main heap that the next 64 KiB read does not fit; under many clients, language servers and
git processes the heap grows with holes while what is in use stays flat (issue 13's RSS
growth under the soak). Here a read goes into one buffer per thread, reused, and only what
arrived is copied out. A read takes up to 256 KiB, what a server's stdout pipe holds
(`lsp.process.STDOUT_PIPE_BYTES`): a 300 KB answer comes in two reads, not five trips
through the scheduler.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading

import trio

READ_SIZE = 256 * 1024


class _Buffer(threading.local):
    def __init__(self) -> None:
        self.view = memoryview(bytearray(READ_SIZE))


_buffer = _Buffer()


def _fd(stream: trio.abc.ReceiveStream) -> int | None:
    if isinstance(stream, trio.SocketStream):
        return stream.socket.fileno()
    if isinstance(stream, trio.lowlevel.FdStream):
        return stream.fileno()
    return None


async def receive_some(
    stream: trio.abc.ReceiveStream, max_bytes: int = READ_SIZE
) -> bytes | bytearray:
    """What `stream.receive_some(max_bytes)` returns (b"" at end of file), at most READ_SIZE.

    For a socket or pipe stream the bytes are read into the thread's buffer and copied out;
    the same errors as trio's: `ClosedResourceError` once the stream is closed, and
    `BrokenResourceError` for any other failure of the read. Any other stream is read as is.
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be >= 1")
    fd = _fd(stream)
    if fd is None:
        return await stream.receive_some(max_bytes)
    view = _buffer.view[: min(max_bytes, READ_SIZE)]
    while True:
        # The wait is the checkpoint: a reader that just handled a message finds nothing to
        # read yet, so it waits first rather than reading into EAGAIN (a system call and a
        # second trip through the scheduler per message). Data already there: ready at once.
        if fd < 0:
            raise trio.ClosedResourceError("the stream was closed")
        await trio.lowlevel.wait_readable(fd)
        try:
            # Read and copy with no checkpoint in between: no other task touches the buffer.
            return bytes(view[: os.readv(fd, [view])])
        except BlockingIOError:
            continue  # readiness that another reader took first
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise trio.ClosedResourceError("the stream was closed") from None
            raise trio.BrokenResourceError(exc) from exc


def read_available(fd: int) -> bytes:
    """One read of the non-blocking descriptor `fd` (b"" at end of file), at most READ_SIZE
    bytes, through the thread's buffer; BlockingIOError when nothing is there yet."""
    view = _buffer.view
    return bytes(view[: os.readv(fd, [view])])


async def receive_with_fds(
    sock: trio.socket.SocketType, max_fds: int
) -> tuple[bytes, list[int], bool]:
    """`receive_some` of a Unix socket, with the descriptors the bytes carry (SCM_RIGHTS,
    close-on-exec): (bytes, descriptors, whether more than `max_fds` came; the kernel
    closed those)."""
    await trio.lowlevel.checkpoint()
    view = _buffer.view
    fd = sock.fileno()
    while True:
        # The stdlib's recvmsg_into on the same descriptor (detached after: trio's socket
        # keeps it), then the copy, with no checkpoint in between: the buffer is shared.
        raw = socket.socket(fileno=fd)
        try:
            size, ancillary, flags, _ = raw.recvmsg_into(
                [view], socket.CMSG_SPACE(4 * max_fds), socket.MSG_CMSG_CLOEXEC
            )
            data = bytes(view[:size])
            break
        except BlockingIOError:
            pass
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise trio.ClosedResourceError("the stream was closed") from None
            raise trio.BrokenResourceError(exc) from exc
        finally:
            raw.detach()
        await trio.lowlevel.wait_readable(fd)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [
                int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True)
                for i in range(0, usable, 4)
            ]
    return data, fds, bool(flags & socket.MSG_CTRUNC)
