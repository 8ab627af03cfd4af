"""Incremental frame decoders and encoders: newline-delimited JSON and `Content-Length`.

Sans-IO: feed bytes in, take whole message bodies out. The framing of a connection is
chosen from its first byte (`{` or `[`: NDJSON; `C`: Content-Length headers).
"""

from __future__ import annotations

from enum import StrEnum

DEFAULT_MAX_HEADER = 8 * 1024
DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024
_LENGTH = b"Content-Length: "  # a frame's first header, when it is its only one
_HEAD = b"Content-Length: %d\r\n\r\n"
Parts = list[bytes | memoryview]  # a message or frame in parts, in order (one `writev`)


class Framing(StrEnum):
    NDJSON = "ndjson"
    CONTENT_LENGTH = "content-length"


class FrameError(Exception):
    """The stream broke a framing rule; the connection cannot go on."""


def detect_framing(first: bytes | bytearray) -> Framing:
    """The framing a connection uses, from its first non-blank byte."""
    if first[:1] in (b"{", b"["):
        return Framing.NDJSON
    if first[:1] in (b"C", b"c"):
        return Framing.CONTENT_LENGTH
    raise FrameError("Unknown framing: start with '{', '[' or a Content-Length header.")


class NdjsonDecoder:
    """One JSON message per line; blank lines are skipped, a trailing `\\r` is dropped."""

    def __init__(self, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_message = max_message
        self._buffer = bytearray()
        self._scanned = 0

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        self._buffer += data
        messages: list[bytes] = []
        start = 0
        while True:
            end = self._buffer.find(b"\n", max(start, self._scanned))
            if end < 0:
                break
            line = bytes(self._buffer[start:end]).rstrip(b"\r")
            if len(line) > self.max_message:
                raise FrameError(f"Message over the {self.max_message}-byte limit.")
            if line.strip():
                messages.append(line)
            start = end + 1
            self._scanned = start
        del self._buffer[:start]
        self._scanned = len(self._buffer)
        if self._scanned > self.max_message:
            raise FrameError(f"Message over the {self.max_message}-byte limit.")
        return messages

    @property
    def pending(self) -> int:
        return len(self._buffer)


class ContentLengthDecoder:
    """LSP base protocol: `Content-Length: N` (other headers ignored), a blank line, N bytes.

    A body longer than what one read brings is kept as the parts that came and joined once
    whole: one copy of a large reply, not one per read (each a new buffer the size of
    everything so far)."""

    def __init__(
        self, max_message: int = DEFAULT_MAX_MESSAGE, max_header: int = DEFAULT_MAX_HEADER
    ) -> None:
        self.max_message = max_message
        self.max_header = max_header
        self._buffer = bytearray()  # headers, and what follows them until a body is split off
        self._length: int | None = None  # the length of the body being read, once known
        self._parts: list[bytes | bytearray | memoryview] = []  # the body so far, if it spans reads
        self._have = 0  # bytes in `_parts`

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        messages: list[bytes] = []
        if self._parts:  # a body that spans reads
            data = self._go_on(data, messages)
            if self._parts or not data:
                return messages
        if self._length is None and not self._buffer:
            data = self._split_off(data, messages)
            if not data:
                return messages
        buffer = self._buffer
        buffer += data
        while True:
            if self._length is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > self.max_header:
                        raise FrameError(f"Header block over the {self.max_header}-byte limit.")
                    break
                if end > self.max_header:
                    raise FrameError(f"Header block over the {self.max_header}-byte limit.")
                self._length = self._parse_headers(bytes(buffer[:end]))
                del buffer[: end + 4]
            if len(buffer) < self._length:
                if buffer:  # the body's first part: later reads add to it
                    self._parts.append(bytes(buffer))
                    self._have = len(buffer)
                    buffer.clear()
                break
            with memoryview(buffer) as view:
                messages.append(bytes(view[: self._length]))
            del buffer[: self._length]
            self._length = None
        return messages

    def _go_on(self, data: bytes | bytearray, messages: list[bytes]) -> bytes | bytearray:
        """Add `data` to the body that spans reads; the bytes after that body."""
        assert self._length is not None
        need = self._length - self._have
        if len(data) < need:
            self._parts.append(bytes(data))  # (no copy of bytes)
            self._have += len(data)
            return b""
        self._parts.append(data[:need])
        messages.append(b"".join(self._parts))
        self._parts, self._have, self._length = [], 0, None
        return data[need:]

    def _split_off(self, data: bytes | bytearray, messages: list[bytes]) -> bytes | bytearray:
        """The common case, with no copy into the buffer: frames that start where `data`
        starts, Content-Length their only header (an editor's requests, a server's replies),
        split off `data` itself; a body that goes on past `data` is kept from where it
        starts (a view of `data`: a large reply is copied once, when it is whole). The bytes
        from the first frame that is not so on, for the general way."""
        start, size = 0, len(data)
        while start < size and data[start : start + 16] == _LENGTH:
            end = data.find(b"\r\n\r\n", start + 17, start + 40)
            digits = data[start + 16 : end]
            if end < 0 or not digits.isdigit():
                break
            length = int(digits)
            if length > self.max_message:
                raise FrameError(f"Message over the {self.max_message}-byte limit.")
            body = end + 4
            if size - body < length:
                part = memoryview(data)[body:] if type(data) is bytes else bytes(data[body:])
                self._parts.append(part)
                self._have, self._length = size - body, length
                return b""
            messages.append(bytes(data[body : body + length]))
            start = body + length
        return data[start:] if start else data

    def _parse_headers(self, block: bytes) -> int:
        length: int | None = None
        for line in block.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:
                raise FrameError("Malformed header line: expected 'Name: value'.")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FrameError("Content-Length is not a number.") from None
        if length is None or length < 0:
            raise FrameError("Missing Content-Length header.")
        if length > self.max_message:
            raise FrameError(f"Message over the {self.max_message}-byte limit.")
        return length

    @property
    def pending(self) -> int:
        return len(self._buffer) + self._have


FrameDecoder = NdjsonDecoder | ContentLengthDecoder


def make_decoder(
    framing: Framing, max_message: int = DEFAULT_MAX_MESSAGE, max_header: int = DEFAULT_MAX_HEADER
) -> FrameDecoder:
    if framing is Framing.NDJSON:
        return NdjsonDecoder(max_message)
    return ContentLengthDecoder(max_message, max_header)


def encode_frame(framing: Framing, body: bytes) -> bytes:
    if framing is Framing.NDJSON:
        return body + b"\n"
    return _HEAD % len(body) + body


def frame_parts(framing: Framing, parts: Parts) -> Parts:
    """`encode_frame` of the body `parts` make, as parts (to write with `writev`: a large
    body is not copied to be framed)."""
    if framing is Framing.NDJSON:
        return [*parts, b"\n"]
    return [_HEAD % sum(map(len, parts)), *parts]
