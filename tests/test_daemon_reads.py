"""Reads of sockets and pipes allocate what arrived, not the read size (issue 13's RSS growth)."""

from __future__ import annotations

import errno
import os
import re
import socket
import struct
import threading
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from codeward.daemon import reads
from codeward.daemon.reads import READ_SIZE, receive_some


@contextmanager
def stream_pair() -> Iterator[tuple[trio.SocketStream, socket.socket]]:
    """A daemon-side trio socket stream and the blocking client end of it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    try:
        yield stream, theirs
    finally:
        stream.socket.close()
        theirs.close()


@contextmanager
def pipe() -> Iterator[tuple[trio.lowlevel.FdStream, int]]:
    """The read end of a pipe as trio's FdStream (as a child's stdout), and the write end."""
    read_fd, write_fd = os.pipe()
    stream = trio.lowlevel.FdStream(read_fd)
    try:
        yield stream, write_fd
    finally:
        stream.close()
        os.close(write_fd)


async def allocated_peak(read: Callable[[], Awaitable[bytes]]) -> tuple[bytes, int]:
    """What `read` returned, and the most memory it held allocated at once (tracemalloc)."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        data = await read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return data, peak - before


async def test_a_small_socket_read_allocates_what_arrived_where_trio_allocates_the_read_size() -> (
    None
):
    with stream_pair() as (stream, client):
        client.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n')
        data, peak = await allocated_peak(lambda: stream.receive_some(READ_SIZE))
        assert data.startswith(b'{"jsonrpc"')
        assert peak >= READ_SIZE  # the pattern that fragments the heap

        client.sendall(b'{"jsonrpc":"2.0","id":2,"method":"daemon/status"}\n')
        data, peak = await allocated_peak(lambda: receive_some(stream))
        assert data == b'{"jsonrpc":"2.0","id":2,"method":"daemon/status"}\n'
        assert peak < READ_SIZE // 8


async def test_a_small_pipe_read_allocates_what_arrived() -> None:
    with pipe() as (stream, write_fd):
        os.write(write_fd, b"Content-Length: 2\r\n\r\n{}")
        data, peak = await allocated_peak(lambda: receive_some(stream))
        assert data == b"Content-Length: 2\r\n\r\n{}"
        assert peak < READ_SIZE // 8


async def test_more_than_the_buffer_arrives_in_pieces_of_at_most_its_size_byte_for_byte() -> None:
    payload = bytes(range(256)) * (3 * READ_SIZE // 256 + 7)
    with stream_pair() as (stream, client):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, client.sendall, payload)
            received = bytearray()
            while len(received) < len(payload):
                chunk = await receive_some(stream)
                assert 0 < len(chunk) <= READ_SIZE
                received += chunk
        assert bytes(received) == payload


async def test_max_bytes_bounds_a_read_and_must_be_positive() -> None:
    with pipe() as (stream, write_fd):
        os.write(write_fd, b"abcdef")
        assert await receive_some(stream, 4) == b"abcd"
        assert await receive_some(stream, 10 * READ_SIZE) == b"ef"
        with pytest.raises(ValueError, match="max_bytes"):
            await receive_some(stream, 0)


async def test_end_of_file_is_empty_bytes() -> None:
    with stream_pair() as (stream, client):
        client.sendall(b"last")
        client.shutdown(socket.SHUT_WR)
        assert await receive_some(stream) == b"last"
        assert await receive_some(stream) == b""
    read_fd, write_fd = os.pipe()
    os.close(write_fd)
    pipe_stream = trio.lowlevel.FdStream(read_fd)
    try:
        assert await receive_some(pipe_stream) == b""
    finally:
        pipe_stream.close()


async def test_a_read_waits_for_data_and_a_cancelled_wait_loses_nothing() -> None:
    with stream_pair() as (stream, client):
        got: list[bytes] = []

        async def reader() -> None:
            got.append(await receive_some(stream))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert not got  # waiting, not polling an empty socket into b""
            nursery.cancel_scope.cancel()
        client.sendall(b"late")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
        assert got == [b"late"]


async def test_a_stream_closed_before_or_during_a_read_raises_closed() -> None:
    with stream_pair() as (stream, _client):
        stream.socket.close()
        with pytest.raises(trio.ClosedResourceError):
            await receive_some(stream)
    with stream_pair() as (stream, _client):
        failures: list[BaseException] = []

        async def reader() -> None:
            try:
                await receive_some(stream)
            except trio.ClosedResourceError as exc:
                failures.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            await stream.aclose()
        assert len(failures) == 1
    with pipe() as (pipe_stream, _write_fd):
        await pipe_stream.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await receive_some(pipe_stream)


async def test_a_failed_read_raises_broken_with_the_cause() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    try:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # linger 0: the connection is reset
        with pytest.raises(trio.BrokenResourceError) as caught:
            await receive_some(stream)
        cause = caught.value.__cause__
        assert isinstance(cause, OSError)
        assert cause.errno == errno.ECONNRESET
    finally:
        stream.socket.close()


async def test_a_stream_without_a_descriptor_is_read_as_it_is() -> None:
    send, receive = trio.testing.memory_stream_pair()
    await send.send_all(b"in memory")
    assert await receive_some(receive) == b"in memory"


def test_each_thread_reads_into_a_buffer_of_its_own() -> None:
    views: list[memoryview] = []
    thread = threading.Thread(target=lambda: views.append(reads._buffer.view))
    thread.start()
    thread.join()
    assert views[0].obj is not reads._buffer.view.obj
    assert len(views[0]) == READ_SIZE


def test_the_daemon_reads_sockets_and_pipes_only_through_receive_some() -> None:
    package = Path(reads.__file__).parent
    direct = [
        f"{path.relative_to(package)}:{n}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "reads.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.receive_some\(", line)
    ]
    assert direct == []
