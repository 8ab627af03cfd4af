"""The outbox's writes: a frame given as parts (a large answer passed on as it came) goes
out as the same bytes and in the same order as one given whole, whether the pipe takes it
at once, in part, or only after the frames queued before it."""

from __future__ import annotations

import fcntl
import os

import trio
import trio.testing

from codeward.daemon.outbox import Outbox

PIPE_BYTES = 4096  # (the least a pipe holds: the writes below fill it)


async def read_all(fd: int, size: int) -> bytes:
    got = b""
    while len(got) < size:
        await trio.lowlevel.wait_readable(fd)
        got += os.read(fd, 1 << 20)
    return got


async def test_parts_taken_at_once_are_written_as_they_are() -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    stream = trio.lowlevel.FdStream(write)
    outbox = Outbox(stream, lambda: None)
    body = bytearray(b"x" * 1000)
    outbox.put([b"head:", memoryview(body)[10:20], b":tail"])
    assert outbox.queued_frames == 0 and outbox.queued_bytes == 0  # (one writev, nothing left)
    body[10:20] = b"y" * 10  # the parts are not held once written
    assert os.read(read, 100) == b"head:" + b"x" * 10 + b":tail"
    os.close(read)
    await stream.aclose()


async def test_parts_the_pipe_takes_in_part_follow_in_order() -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    stream = trio.lowlevel.FdStream(write)
    written: list[int] = []
    outbox = Outbox(stream, lambda: written.append(outbox.queued_frames))
    first = b"a" * (PIPE_BYTES * 3)  # in part at once, the rest queued
    large = memoryview(b"b" * (PIPE_BYTES * 5))
    outbox.put(first)
    outbox.put([b"<", large[PIPE_BYTES:], b">"])  # queued behind it, joined
    outbox.put(b"c")
    assert outbox.queued_frames == 3
    expected = first + b"<" + bytes(large[PIPE_BYTES:]) + b">" + b"c"
    assert outbox.queued_bytes == len(expected) - PIPE_BYTES
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        assert await read_all(read, len(expected)) == expected
        await outbox.flush()
        nursery.cancel_scope.cancel()
    assert outbox.queued_bytes == 0 and written[-1] == 0

    empty_pipe_parts = [b"<<", large, b">>"]  # more than the pipe holds: taken in part
    outbox.put(empty_pipe_parts)
    assert 0 < outbox.queued_bytes < len(large)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        assert await read_all(read, len(large) + 4) == b"<<" + bytes(large) + b">>"
        await outbox.flush()
        nursery.cancel_scope.cancel()
    os.close(read)
    await stream.aclose()


async def test_parts_to_a_closed_pipe_close_the_outbox() -> None:
    read, write = os.pipe()
    os.close(read)
    stream = trio.lowlevel.FdStream(write)
    outbox = Outbox(stream, lambda: None)
    outbox.put([b"x", memoryview(b"y")])
    assert outbox.closed and outbox.error == "BrokenPipeError" and outbox.queued_bytes == 0
    outbox.put([b"more"])  # dropped
    assert outbox.queued_frames == 0
    await stream.aclose()


async def test_parts_to_a_stream_with_no_descriptor_are_queued_joined() -> None:
    """A stream the outbox cannot write to at once (no descriptor): the parts go to the
    writer task as one frame, counted as queued until written."""
    sent, received = trio.testing.memory_stream_pair()
    outbox = Outbox(sent, lambda: None)
    outbox.put([b"head:", memoryview(b"xbodyx")[1:5], b":tail"])
    assert outbox.queued_frames == 1 and outbox.queued_bytes == len(b"head:body:tail")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        got = b""
        while len(got) < len(b"head:body:tail"):
            got += await received.receive_some()
        await outbox.flush()
        nursery.cancel_scope.cancel()
    assert got == b"head:body:tail" and outbox.queued_bytes == 0
