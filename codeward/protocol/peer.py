"""One JSON-RPC 2.0 peer, sans-IO (h11-style): bytes in, events out; calls in, frames out.

A `Peer` keeps the state of one end of a connection and does no I/O: the daemon's client
connections, the language-server connections and the thin client each drive one. It owns

- the framing (chosen from the first byte unless given) and the message codec;
- id allocation for its own requests, and the table of those still unanswered (`pending`),
  which matches each reply to its request; a request given up on (`abandon`) sends
  `$/cancelRequest` and is remembered in `abandoned` until its late reply comes;
- the table of the other side's requests in flight (`inbound`): a duplicate id is refused,
  a `$/cancelRequest` for one of them becomes a `CancelReceived` event, and answering one
  (`respond`, `respond_error`, `finish`) takes it out;
- batches: a batch frame becomes one `BatchReceived` event holding an event per element.

The codec is pluggable so that the thin client can use the standard library's `json`
(it loads no msgspec), while the daemon uses msgspec (`codeward.protocol.messages`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar

from codeward.protocol.errors import ErrorCode, RpcError
from codeward.protocol.framing import (
    DEFAULT_MAX_HEADER,
    DEFAULT_MAX_MESSAGE,
    FrameDecoder,
    Framing,
    Parts,
    detect_framing,
    encode_frame,
    frame_parts,
    make_decoder,
)

Id = int | str
CANCEL_METHODS = frozenset({"$/cancelRequest", "cancelRequest"})


class MessageView(Protocol):
    """What the peer reads of a decoded message (its payload stays the codec's business)."""

    @property
    def kind(self) -> str: ...  # "request", "notification" or "response"

    @property
    def id(self) -> Id | None: ...

    @property
    def method(self) -> str: ...


M = TypeVar("M", bound=MessageView)


class Codec(Protocol[M]):
    """Turns frames into messages and calls into message bodies (without framing)."""

    def decode(self, frame: bytes) -> tuple[list[M | RpcError], bool]:
        """The messages of one frame, and whether it was a batch; raises `RpcError` when the
        frame as a whole is not JSON-RPC (an element that is not comes back in its place)."""
        ...

    def cancel_target(self, message: M) -> Id | None:
        """The id a `$/cancelRequest` notification names, if it names one."""
        ...

    def request(self, msg_id: Id, method: str, params: Any) -> bytes: ...

    def notification(self, method: str, params: Any) -> bytes: ...

    def result(self, msg_id: Id, result: Any) -> bytes: ...

    def error(self, msg_id: Id | None, code: int, message: str, data: Any = None) -> bytes:
        """An error response; `data` None leaves the member out."""
        ...


# -- events --------------------------------------------------------------------------------


class Event:
    __slots__ = ()


class RequestReceived(Event, Generic[M]):
    """A request from the other side, now in `inbound` until it is answered."""

    __slots__ = ("message",)

    def __init__(self, message: M) -> None:
        self.message = message


class NotificationReceived(Event, Generic[M]):
    """A notification (other than a cancellation of a request in flight)."""

    __slots__ = ("message",)

    def __init__(self, message: M) -> None:
        self.message = message


class CancelReceived(Event):
    """The other side cancelled its request `id`, still in flight here; `handle` is what the
    I/O layer attached to it with `Peer.attach` (None if nothing)."""

    __slots__ = ("handle", "id")

    def __init__(self, msg_id: Id, handle: Any) -> None:
        self.id = msg_id
        self.handle = handle


class ResponseReceived(Event, Generic[M]):
    """The reply to one of our requests; `context` is what `send_request` was given."""

    __slots__ = ("context", "id", "message")

    def __init__(self, msg_id: Id, message: M, context: Any) -> None:
        self.id = msg_id
        self.message = message
        self.context = context


class LateResponse(Event, Generic[M]):
    """The reply to a request we gave up on (`abandon`): nobody waits for it any more."""

    __slots__ = ("id", "message", "note")

    def __init__(self, msg_id: Id, message: M, note: Any) -> None:
        self.id = msg_id
        self.message = message
        self.note = note


class UnmatchedResponse(Event, Generic[M]):
    """A reply whose id matches no request of ours (a null id: an error about no request,
    such as a farewell before the other side closes)."""

    __slots__ = ("id", "message")

    def __init__(self, msg_id: Id | None, message: M) -> None:
        self.id = msg_id
        self.message = message


class InvalidMessage(Event):
    """A message that is not valid JSON-RPC, or a request whose id is already in flight.

    `id` is the request's id when known (answer it with `error`), else None."""

    __slots__ = ("error", "id")

    def __init__(self, msg_id: Id | None, error: RpcError) -> None:
        self.id = msg_id
        self.error = error


class BatchReceived(Event):
    """A batch: one event per element, in order (its replies go out as one array)."""

    __slots__ = ("events",)

    def __init__(self, events: list[Event]) -> None:
        self.events = events


DUPLICATE_ID = "Invalid request: this id is already in flight on this connection; use a new id."


# -- the peer ------------------------------------------------------------------------------


class Peer(Generic[M]):
    """The state of one end of a JSON-RPC connection (see the module docstring)."""

    def __init__(
        self,
        codec: Codec[M],
        framing: Framing | None = None,
        *,
        id_prefix: str = "",
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_header: int = DEFAULT_MAX_HEADER,
    ) -> None:
        self.codec = codec
        self.framing = framing
        self.max_message = max_message
        self.max_header = max_header
        self._decoder: FrameDecoder | None = (
            None if framing is None else make_decoder(framing, max_message, max_header)
        )
        self._ids: Iterator[int] = itertools.count(1)
        self._id_prefix = id_prefix
        self.pending: dict[Id, Any] = {}  # our requests awaiting a reply: id -> context
        self.abandoned: dict[Id, Any] = {}  # given up on, reply still due: id -> note
        self.inbound: dict[Id, Any] = {}  # their requests in flight: id -> handle

    # -- bytes in ------------------------------------------------------------------------------

    def frames(self, data: bytes | bytearray) -> list[bytes]:
        """The whole frames `data` completes; raises `FrameError` when the stream broke a
        framing rule (the connection cannot go on). Leading blank bytes choose no framing."""
        decoder = self._decoder
        if decoder is None:
            data = data.lstrip()
            if not data:
                return []
            self.framing = detect_framing(data)
            decoder = self._decoder = make_decoder(self.framing, self.max_message, self.max_header)
        return decoder.feed(data)

    def receive_data(self, data: bytes | bytearray) -> list[Event]:
        """The events of the frames `data` completes (raises `FrameError` as `frames`)."""
        decoder = self._decoder
        frames = decoder.feed(data) if decoder is not None else self.frames(data)
        return [self.receive_frame(frame) for frame in frames]

    def receive_frame(self, frame: bytes) -> Event:
        """The event of one whole frame."""
        try:
            items, is_batch = self.codec.decode(frame)
        except RpcError as exc:
            return InvalidMessage(None, exc)
        if is_batch:
            return BatchReceived([self._event(item) for item in items])
        item = items[0]
        if not isinstance(item, RpcError) and item.kind == "response":  # the hot case: a reply
            msg_id, pending = item.id, self.pending
            if msg_id in pending:
                return ResponseReceived(msg_id, item, pending.pop(msg_id))  # type: ignore[arg-type]
        return self._event(item)

    def _event(self, item: M | RpcError) -> Event:
        if isinstance(item, RpcError):
            return InvalidMessage(None, item)
        kind = item.kind
        if kind == "response":
            return self._response(item)
        msg_id = item.id
        if kind == "request":
            assert msg_id is not None
            if msg_id in self.inbound:
                return InvalidMessage(msg_id, RpcError(ErrorCode.INVALID_REQUEST, DUPLICATE_ID))
            self.inbound[msg_id] = None
            return RequestReceived(item)
        if item.method in CANCEL_METHODS:
            target = self.codec.cancel_target(item)
            if target is not None and target in self.inbound:
                return CancelReceived(target, self.inbound[target])
        return NotificationReceived(item)

    def _response(self, item: M) -> Event:
        msg_id = item.id
        if msg_id is not None:
            pending = self.pending
            if msg_id in pending:
                return ResponseReceived(msg_id, item, pending.pop(msg_id))
            abandoned = self.abandoned
            if msg_id in abandoned:
                return LateResponse(msg_id, item, abandoned.pop(msg_id))
        return UnmatchedResponse(msg_id, item)

    # -- their requests ------------------------------------------------------------------------

    def attach(self, msg_id: Id, handle: Any) -> None:
        """Attach the I/O layer's handle (a cancel scope, a task) to request `msg_id`."""
        self.inbound[msg_id] = handle

    def finish(self, msg_id: Id) -> None:
        """Request `msg_id` is answered (or will never be): its id may be used again."""
        self.inbound.pop(msg_id, None)

    def respond(self, msg_id: Id, result: Any) -> bytes:
        """The frame answering request `msg_id` with `result`."""
        self.inbound.pop(msg_id, None)
        return self.frame(self.codec.result(msg_id, result))

    def respond_error(self, msg_id: Id | None, code: int, message: str, data: Any = None) -> bytes:
        """The frame answering request `msg_id` (None: no request) with an error."""
        if msg_id is not None:
            self.inbound.pop(msg_id, None)
        return self.frame(self.codec.error(msg_id, code, message, data))

    # -- our requests --------------------------------------------------------------------------

    def send_request(self, method: str, params: Any, context: Any = None) -> tuple[Id, bytes]:
        """A new request's id and frame; its reply will come as a `ResponseReceived` event
        carrying `context`."""
        number = next(self._ids)
        msg_id: Id = f"{self._id_prefix}{number}" if self._id_prefix else number
        self.pending[msg_id] = context
        return msg_id, self.frame(self.codec.request(msg_id, method, params))

    def expect(self, msg_id: int, context: Any = None) -> None:
        """Await the reply to request `msg_id`, sent on this stream by someone else before
        (it comes as a `ResponseReceived` carrying `context`); ours are numbered after it."""
        self.pending[msg_id] = context
        self._ids = itertools.count(max(next(self._ids), msg_id + 1))

    def notify(self, method: str, params: Any = None) -> bytes:
        return self.frame(self.codec.notification(method, params))

    def abandon(
        self, msg_id: Id, note: Any = None, *, cancel: bool = True, track: bool = True
    ) -> bytes | None:
        """Give up on our request `msg_id`: the `$/cancelRequest` frame to send (None when
        `cancel` is false or it was answered already). With `track`, its late reply is
        expected: it stays in `abandoned` with `note`, then comes as a `LateResponse`."""
        if msg_id not in self.pending:
            return None
        del self.pending[msg_id]
        if track:
            self.abandoned[msg_id] = note
        return self.notify("$/cancelRequest", {"id": msg_id}) if cancel else None

    def fail_all(self) -> dict[Id, Any]:
        """Forget every request of ours (the connection is gone): their contexts, to fail."""
        pending, self.pending = self.pending, {}
        self.abandoned.clear()
        return pending

    # -- frames out ----------------------------------------------------------------------------

    def frame(self, body: bytes) -> bytes:
        """`body` framed as this connection frames (NDJSON until the framing is known)."""
        return encode_frame(self.framing or Framing.NDJSON, body)

    def frame_parts(self, parts: Parts) -> Parts:
        """`frame` of the body `parts` make, as parts (`framing.frame_parts`)."""
        return frame_parts(self.framing or Framing.NDJSON, parts)

    def batch(self, bodies: list[bytes]) -> bytes:
        """The frame of a batch's replies (bodies made with the codec)."""
        return self.frame(b"[" + b",".join(bodies) + b"]")
