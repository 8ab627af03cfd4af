"""The floor of any relay between an editor and its server: bytes copied both ways, nothing
parsed. bench/editor.py runs it as one more side: `python bench/byte_relay.py COMMAND...`
starts the server COMMAND and copies the editor's stdin to the server's and the server's
stdout to the editor's, with the daemon's own way of I/O (trio: wait until readable, one
`readv`, `os.write` at once). What it adds over the editor talking to the server directly
is the cost of one more process on the way (two more wake-ups per request), which
`codeward lsp` pays too before any work of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import trio

from codeward.daemon.reads import READ_SIZE


async def copy(source: int, target: int, done: trio.CancelScope) -> None:
    """Copy `source` to `target` until `source` ends; then `done` is cancelled."""
    buffer = bytearray(READ_SIZE)  # as much as the daemon reads at once
    view = memoryview(buffer)
    while True:
        await trio.lowlevel.wait_readable(source)
        size = os.readv(source, [buffer])
        if not size:
            done.cancel()
            return
        written = 0
        while written < size:
            try:
                written += os.write(target, view[written:size])
            except BlockingIOError:
                await trio.lowlevel.wait_writable(target)


async def relay(command: list[str]) -> None:
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdin is not None and server.stdout is not None
    ends = [0, 1, server.stdin.fileno(), server.stdout.fileno()]
    for fd in ends:
        os.set_blocking(fd, False)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(copy, 0, ends[2], nursery.cancel_scope)
            nursery.start_soon(copy, ends[3], 1, nursery.cancel_scope)
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    trio.run(relay, sys.argv[1:])
