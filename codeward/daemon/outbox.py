"""A connection's outgoing frames: written at once when the socket or pipe takes them, else
queued in order for one writer task. The queued bytes are counted (the connection's
backpressure reads them) and dropped all at once when the other end is gone. Both the
daemon's client connections and its language-server connections write through one."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable

import trio

from codeward.protocol.framing import Parts


class Outbox:
    """Frames on their way to one peer, in order."""

    def __init__(self, stream: trio.abc.SendStream, on_written: Callable[[], None]) -> None:
        self._stream = stream
        # A socket or a pipe can take a frame at once, without a hop through the writer task.
        self._direct = _direct(stream)
        self._on_written = on_written  # a queued frame went out whole
        self._frames: deque[bytes] = deque()
        self._wake: trio.Event | None = None  # the writer waits on it for frames
        self._flushed: trio.Event | None = None  # flush() waits on it for an empty queue
        self.queued_bytes = 0  # bytes handed to the writer task and not yet written
        self.peak_bytes = 0  # the most `queued_bytes` has been
        self.closed = False  # nothing more will be written: the other end is gone
        self.error = ""  # the failed write's exception class, when one closed the outbox

    def put(self, frame: bytes | Parts) -> None:
        """Send `frame` after every frame before it; dropped once the outbox is closed. A
        frame given as parts (a list, in order) is written as they are when the socket or
        pipe takes it at once (one `writev`: a large answer is not copied into a frame
        first), and joined only when some of it must wait for the writer."""
        if self.closed:
            return
        direct = self._direct
        fd = direct.fileno() if direct is not None and not self._frames else -1
        if fd >= 0:
            # Nothing waits to be written: write now (synchronously, so no cancellation can
            # cut a frame); what the socket cannot take yet goes to the writer, in order.
            try:
                written = os.writev(fd, frame) if isinstance(frame, list) else os.write(fd, frame)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self.error = exc.__class__.__name__
                self.close()
                return
            if isinstance(frame, list):
                if written == sum(map(len, frame)):
                    return
                frame = b"".join(frame)
            elif written == len(frame):
                return
            frame = frame[written:]
        elif isinstance(frame, list):
            frame = b"".join(frame)
        self._frames.append(frame)
        self.queued_bytes += len(frame)
        self.peak_bytes = max(self.peak_bytes, self.queued_bytes)
        if self._wake is not None:
            self._wake.set()

    def retarget(self, stream: trio.abc.SendStream) -> None:
        """Write to `stream` from now on (before anything is queued)."""
        assert not self._frames, "retarget() with frames queued"
        self._stream = stream
        self._direct = _direct(stream)

    @property
    def queued_frames(self) -> int:
        """Frames handed to the writer task and not yet written whole."""
        return len(self._frames)

    def close(self) -> None:
        """The client is gone: drop every queued frame now, and write nothing more."""
        self.closed = True
        self._frames.clear()
        self.queued_bytes = 0
        self._wakeup()
        self._on_written()

    async def run(self) -> None:
        """The writer task: write queued frames in order until the outbox is closed."""
        while not self.closed:
            if not self._frames:
                self._wakeup()
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            frame = self._frames[0]  # stays queued while it is written: put() keeps order
            try:
                await self._stream.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.error = exc.__class__.__name__
                self.close()
                return
            if self.closed:
                return
            self._frames.popleft()
            self.queued_bytes -= len(frame)
            # (not held while the writer waits for the next frame: a large answer's bytes
            # would stay in the daemon as long as the connection lasts)
            del frame
            self._on_written()

    async def flush(self) -> None:
        """Wait until every queued frame has been written (or the client is gone)."""
        while self._frames and not self.closed:
            if self._flushed is None:
                self._flushed = trio.Event()
            await self._flushed.wait()

    def _wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None
        if self._flushed is not None and not self._frames:
            self._flushed.set()
            self._flushed = None


def _direct(stream: trio.abc.SendStream) -> trio.socket.SocketType | trio.lowlevel.FdStream | None:
    """What a frame can be written to at once (`os.write` on its descriptor), if anything."""
    if isinstance(stream, trio.SocketStream):
        return stream.socket
    if isinstance(stream, trio.lowlevel.FdStream):
        return stream
    return None
