"""What the other end of a Unix stream socket did after its last byte: half-closed or gone.

A read returns end-of-file both when the client called `shutdown(SHUT_WR)` (it still reads
our replies) and when it closed the socket. Only the second raises POLLHUP on Linux.
"""

from __future__ import annotations

import select

import trio


def hung_up(fd: int) -> bool:
    """Whether the peer of socket `fd` closed both directions (not just its writing side)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return any(events & (select.POLLHUP | select.POLLERR) for _fd, events in poller.poll(0))


async def wait_hung_up(fd: int) -> None:
    """Return once the peer of socket `fd` has closed both directions.

    The socket is readable for good after end-of-file, so it is watched through an epoll
    descriptor of its own that reports hang-ups only (EPOLLHUP needs no subscription).
    """
    epoll = select.epoll()
    try:
        epoll.register(fd, 0)
        while not epoll.poll(0):
            await trio.lowlevel.wait_readable(epoll.fileno())
    finally:
        trio.lowlevel.notify_closing(epoll.fileno())
        epoll.close()
