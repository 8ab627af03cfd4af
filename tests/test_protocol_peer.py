"""The sans-IO JSON-RPC peer by itself: bytes in, events out; calls in, frames out; with the
daemon's msgspec codec and the thin client's stdlib codec alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import FrameError, Framing
from codeward.protocol.jsoncodec import JsonCodec
from codeward.protocol.messages import CODEC
from codeward.protocol.peer import (
    DUPLICATE_ID,
    BatchReceived,
    CancelReceived,
    Codec,
    Event,
    InvalidMessage,
    LateResponse,
    NotificationReceived,
    Peer,
    RequestReceived,
    ResponseReceived,
    UnmatchedResponse,
)

CODECS: list[Codec[Any]] = [CODEC, JsonCodec()]


@pytest.fixture(params=CODECS, ids=["msgspec", "json"])
def peer(request: pytest.FixtureRequest) -> Peer[Any]:
    return Peer(request.param, Framing.NDJSON)


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def one(peer: Peer[Any], message: Any) -> Event:
    [event] = peer.receive_data(line(message))
    return event


def decoded(frame: bytes) -> Any:
    assert frame.endswith(b"\n")
    return json.loads(frame)


# -- our requests --------------------------------------------------------------------------


def test_requests_get_fresh_ids_and_replies_find_their_request(peer: Peer[Any]) -> None:
    first, frame = peer.send_request("a", {"x": 1}, context="ctx-a")
    second, _ = peer.send_request("b", None, context="ctx-b")
    assert first != second
    assert decoded(frame) == {"jsonrpc": "2.0", "id": first, "method": "a", "params": {"x": 1}}
    event = one(peer, {"jsonrpc": "2.0", "id": second, "result": [1, 2]})
    assert isinstance(event, ResponseReceived)
    assert (event.id, event.context) == (second, "ctx-b")
    assert peer.pending == {first: "ctx-a"}
    error = one(peer, {"jsonrpc": "2.0", "id": first, "error": {"code": -1, "message": "no"}})
    assert isinstance(error, ResponseReceived) and error.context == "ctx-a"
    assert peer.pending == {}


def test_a_request_sent_before_the_peer_is_expected_and_later_ids_follow_it(
    peer: Peer[Any],
) -> None:
    """A request written on the stream before the peer took it (a server's `initialize`
    sent at its spawn): its reply finds it, and the peer's own requests never reuse its id."""
    peer.expect(5, context="early")
    later, _ = peer.send_request("a", None)
    assert isinstance(later, int) and later > 5
    event = one(peer, {"jsonrpc": "2.0", "id": 5, "result": {"capabilities": {}}})
    assert isinstance(event, ResponseReceived) and event.context == "early"
    assert peer.pending == {later: None}


def test_a_reply_to_no_request_is_unmatched(peer: Peer[Any]) -> None:
    msg_id, _ = peer.send_request("a", None)
    event = one(peer, {"jsonrpc": "2.0", "id": 999, "result": None})
    assert isinstance(event, UnmatchedResponse) and event.id == 999
    same_twice = [one(peer, {"jsonrpc": "2.0", "id": msg_id, "result": 1}) for _ in range(2)]
    assert [type(e) for e in same_twice] == [ResponseReceived, UnmatchedResponse]
    bye = {"code": -32001, "message": "bye"}
    farewell = one(peer, {"jsonrpc": "2.0", "id": None, "error": bye})
    assert isinstance(farewell, UnmatchedResponse) and farewell.id is None


def test_string_and_number_ids_are_not_confused() -> None:
    for codec in CODECS:
        peer = Peer(codec, Framing.NDJSON, id_prefix="codeward-")
        msg_id, _ = peer.send_request("a", None)
        assert msg_id == "codeward-1"
        assert isinstance(one(peer, {"id": 1, "result": 1}), UnmatchedResponse)
        assert isinstance(one(peer, {"id": "codeward-1", "result": 1}), ResponseReceived)
        numbered = Peer(codec, Framing.NDJSON)
        number, _ = numbered.send_request("a", None)
        assert number == 1
        assert isinstance(one(numbered, {"id": "1", "result": 1}), UnmatchedResponse)
        assert isinstance(one(numbered, {"id": 1, "result": 1}), ResponseReceived)


def test_ids_that_are_neither_numbers_nor_strings_are_invalid(peer: Peer[Any]) -> None:
    peer.send_request("a", None)  # id 1: `true` and `1.0` must not pass for it
    for bad in (True, 1.5, [1], {"a": 1}):
        event = one(peer, {"jsonrpc": "2.0", "id": bad, "result": 1})
        assert isinstance(event, InvalidMessage), bad
    assert peer.pending == {1: None}


def test_abandoned_requests_send_a_cancel_and_their_late_reply_is_recognised(
    peer: Peer[Any],
) -> None:
    msg_id, _ = peer.send_request("slow", None)
    frame = peer.abandon(msg_id, note="slow")
    assert frame is not None
    assert decoded(frame) == {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}
    assert peer.pending == {} and peer.abandoned == {msg_id: "slow"}
    late = one(peer, {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32800, "message": "x"}})
    assert isinstance(late, LateResponse) and late.note == "slow"
    assert peer.abandoned == {}
    assert peer.abandon(msg_id) is None  # answered already: nothing to cancel
    quiet, _ = peer.send_request("quiet", None)
    assert peer.abandon(quiet, cancel=False, track=False) is None
    assert peer.pending == {} and peer.abandoned == {}
    assert isinstance(one(peer, {"id": quiet, "result": 1}), UnmatchedResponse)


def test_fail_all_forgets_every_request(peer: Peer[Any]) -> None:
    a, _ = peer.send_request("a", None, context="A")
    b, _ = peer.send_request("b", None, context="B")
    peer.abandon(b)
    assert peer.fail_all() == {a: "A"}
    assert peer.pending == {} and peer.abandoned == {}


# -- their requests ------------------------------------------------------------------------


def test_id_zero_is_an_id_like_any_other(peer: Peer[Any]) -> None:
    event = one(peer, {"jsonrpc": "2.0", "id": 0, "method": "m"})
    assert isinstance(event, RequestReceived) and event.message.id == 0
    assert peer.inbound == {0: None}
    assert decoded(peer.respond(0, {"ok": True})) == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"ok": True},
    }
    assert peer.inbound == {}
    msg_id, _ = peer.send_request("x", None)
    peer.pending[0] = peer.pending.pop(msg_id)  # the other side's ids may start at 0 too
    assert isinstance(one(peer, {"id": 0, "result": None}), ResponseReceived)


def test_a_duplicate_id_in_flight_is_refused_until_answered(peer: Peer[Any]) -> None:
    assert isinstance(one(peer, {"jsonrpc": "2.0", "id": "a", "method": "m"}), RequestReceived)
    duplicate = one(peer, {"jsonrpc": "2.0", "id": "a", "method": "m"})
    assert isinstance(duplicate, InvalidMessage) and duplicate.id == "a"
    assert duplicate.error.code == ErrorCode.INVALID_REQUEST
    assert duplicate.error.message == DUPLICATE_ID
    assert "a" in peer.inbound  # the first one is still in flight
    reply = decoded(peer.respond_error("a", -32000, "failed", {"kind": "timeout"}))
    assert reply["error"] == {"code": -32000, "message": "failed", "data": {"kind": "timeout"}}
    assert isinstance(one(peer, {"jsonrpc": "2.0", "id": "a", "method": "m"}), RequestReceived)
    peer.finish("a")
    assert peer.inbound == {}


def test_cancel_reaches_a_request_in_flight_only(peer: Peer[Any]) -> None:
    one(peer, {"jsonrpc": "2.0", "id": 7, "method": "slow"})
    peer.attach(7, "scope-7")
    event = one(peer, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}})
    assert isinstance(event, CancelReceived) and (event.id, event.handle) == (7, "scope-7")
    peer.respond(7, None)
    finished = one(peer, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}})
    assert isinstance(finished, NotificationReceived)  # cancel of a finished request: nothing
    for params in ({"id": "7"}, {}, None, [7], {"id": None}):
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": "cancelRequest"}
        if params is not None:
            message["params"] = params
        assert isinstance(one(peer, message), NotificationReceived), params


def test_batches_keep_order_and_errors_in_place(peer: Peer[Any]) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "a"},
        5,
        {"jsonrpc": "2.0", "method": "note"},
        {"jsonrpc": "2.0", "id": 1, "method": "again"},
        {"jsonrpc": "1.0", "id": 2, "method": "old"},
        {"jsonrpc": "2.0", "id": 3},
    ]
    event = one(peer, batch)
    assert isinstance(event, BatchReceived)
    kinds = [type(e) for e in event.events]
    assert kinds == [
        RequestReceived,
        InvalidMessage,
        NotificationReceived,
        InvalidMessage,
        InvalidMessage,
        InvalidMessage,
    ]
    invalid = [e for e in event.events if isinstance(e, InvalidMessage)]
    assert [e.id for e in invalid] == [None, 1, None, None]
    assert all(e.error.code == ErrorCode.INVALID_REQUEST for e in invalid)
    bodies = [peer.codec.result(1, "done"), peer.codec.error(None, -32600, "bad")]
    assert json.loads(peer.batch(bodies)) == [
        {"jsonrpc": "2.0", "id": 1, "result": "done"},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad"}},
    ]


def test_an_empty_batch_is_invalid(peer: Peer[Any]) -> None:
    event = one(peer, [])
    assert isinstance(event, InvalidMessage) and event.error.code == ErrorCode.INVALID_REQUEST


# -- bytes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "garbage",
    [b"{not json}\n", b'{"id": 1, "method": "a"\n', b'"just a string"\n', b"\xff\xfe{}\n"],
)
def test_garbage_is_an_invalid_message_not_an_exception(peer: Peer[Any], garbage: bytes) -> None:
    [event] = peer.receive_data(garbage)
    assert isinstance(event, InvalidMessage) and event.id is None
    assert event.error.code in (ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST)


def test_framing_is_chosen_from_the_first_byte_and_frames_may_split() -> None:
    for codec in CODECS:
        peer = Peer(codec)
        assert peer.framing is None
        body = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
        data = b"\n  Content-Length: %d\r\n\r\n" % len(body) + body
        events = [e for k in range(len(data)) for e in peer.receive_data(data[k : k + 1])]
        assert peer.framing is Framing.CONTENT_LENGTH
        assert [type(e) for e in events] == [RequestReceived]
        assert peer.respond(1, None).startswith(b"Content-Length: ")
        ndjson = Peer(codec)
        assert ndjson.frame(b"{}") == b"{}\n"  # NDJSON until told otherwise
        assert ndjson.receive_data(b"   ") == []
        assert len(ndjson.receive_data(b'[{"id":1,"method":"m"}]\n{"method":"n"}\n')) == 2


def test_a_broken_framing_raises() -> None:
    with pytest.raises(FrameError):
        Peer(CODEC).receive_data(b"GET / HTTP/1.1\r\n")
    small = Peer(CODEC, Framing.NDJSON, max_message=16)
    with pytest.raises(FrameError):
        small.receive_data(b'{"x": "' + b"a" * 64)
    header = Peer(CODEC, Framing.CONTENT_LENGTH)
    with pytest.raises(FrameError):
        header.receive_data(b"Content-Length: nope\r\n\r\n")


def test_notifications_frame_and_omit_missing_params(peer: Peer[Any]) -> None:
    message = decoded(peer.notify("initialized", {}))
    assert message == {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    event = one(peer, {"jsonrpc": "2.0", "method": "$/progress", "params": {"token": 1}})
    assert isinstance(event, NotificationReceived) and event.message.method == "$/progress"
