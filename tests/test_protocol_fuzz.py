"""Random and mutated frames into each dialect's sans-IO machine: the daemon's and the thin
client's JSON-RPC peers (newline and Content-Length framing, batches), the frame decoders,
and the MCP machine. None of them raises anything but `FrameError` (the connection closes);
what is not valid JSON-RPC comes out as an error reply for that message, bytes that are not
UTF-8 as a parse error, and every event can be answered (its reply encodes)."""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeward.protocol import lsp, mcp, methods
from codeward.protocol.errors import ErrorCode, RpcError
from codeward.protocol.framing import FrameError, Framing, encode_frame, make_decoder
from codeward.protocol.jsoncodec import JsonCodec
from codeward.protocol.messages import CODEC
from codeward.protocol.peer import (
    BatchReceived,
    CancelReceived,
    Event,
    InvalidMessage,
    LateResponse,
    NotificationReceived,
    Peer,
    RequestReceived,
    ResponseReceived,
    UnmatchedResponse,
)
from tests.wire_support import BAD_HEADERS, LSP, MCP, NATIVE, NOT_UTF8, bad_bodies

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None)
ERROR_CODES = {ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST}
# The params every method of either dialect decodes.
PARAMS: list[Any] = [
    Any,
    methods.InitializeParams,
    methods.SessionOpenParams,
    methods.SessionCloseParams,
    methods.TrustSetParams,
    methods.ToolsListParams,
    methods.ToolsCallParams,
    methods.LuaEvalParams,
    mcp.InitializeParams,
    mcp.ListToolsParams,
    mcp.CallToolParams,
    mcp.CancelledParams,
    mcp.BindParams,
    lsp.InitializeParams,
]


def not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def split(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *sorted(points), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def answer(peer: Peer[Any], event: Event) -> None:
    """Answer an event as the daemon would: every reply must encode and be JSON-RPC."""
    if isinstance(event, BatchReceived):
        errors = [e for e in event.events if isinstance(e, InvalidMessage)]
        for item in event.events:
            answer(peer, item)
        if errors:
            bodies = [peer.codec.error(e.id, e.error.code, e.error.message) for e in errors]
            assert len(reply_of(peer, peer.batch(bodies))) == len(errors)
    elif isinstance(event, InvalidMessage):
        assert event.error.code in ERROR_CODES, event.error
        reply = peer.respond_error(event.id, event.error.code, event.error.message)
        assert reply_of(peer, reply)["error"]["code"] == event.error.code
    elif isinstance(event, RequestReceived):
        message = event.message
        for type_ in PARAMS:
            if isinstance(peer.codec, JsonCodec):
                break  # the client's payloads are plain Python already
            try:
                message.params(type_)
            except RpcError as exc:
                assert exc.code == ErrorCode.INVALID_PARAMS
        assert "result" in reply_of(peer, peer.respond(message.id, {"ok": True}))
    elif isinstance(event, ResponseReceived | LateResponse | UnmatchedResponse):
        if not isinstance(peer.codec, JsonCodec) and not event.message.error:
            with contextlib.suppress(msgspec.DecodeError):
                event.message.decode()
    else:
        assert isinstance(event, NotificationReceived | CancelReceived), event


def reply_of(peer: Peer[Any], frame: bytes) -> Any:
    decoder = make_decoder(peer.framing or Framing.NDJSON)
    (body,) = decoder.feed(frame)
    return json.loads(body)


def drive(peer: Peer[Any], stream: bytes, points: list[int]) -> list[Event]:
    """Feed `stream` in pieces; the events until the end or a framing error (a close)."""
    events: list[Event] = []
    for piece in split(stream, points):
        try:
            events += peer.receive_data(piece)
        except FrameError:
            break
    return events


codecs = st.sampled_from(["daemon", "client"])
bodies = bad_bodies(NATIVE + MCP)


@pytest.mark.parametrize("framing", list(Framing))
@FUZZ
@given(codec=codecs, frames=st.lists(bodies, min_size=1, max_size=4), data=st.data())
def test_peers_answer_every_frame(
    framing: Framing, codec: str, frames: list[bytes], data: st.DataObject
) -> None:
    peer: Peer[Any] = Peer(
        CODEC if codec == "daemon" else JsonCodec(), framing, max_message=1 << 20
    )
    peer.send_request("client/confirm", {})  # a reply to it is matched ("codeward-1" is not)
    if framing is Framing.NDJSON:
        frames = [f.replace(b"\n", b" ") for f in frames]
    stream = b"".join(encode_frame(framing, f) for f in frames)
    points = data.draw(st.lists(st.integers(0, len(stream)), max_size=4))
    events = drive(peer, stream, points)
    for event in events:
        answer(peer, event)
    for frame in frames:  # each on its own: a frame that is not UTF-8 is a parse error
        if not_utf8(frame):
            alone: Peer[Any] = Peer(peer.codec, framing)
            for event in alone.receive_data(encode_frame(framing, frame)):
                assert isinstance(event, InvalidMessage), (frame, event)
                assert event.error.code == ErrorCode.PARSE_ERROR


@FUZZ
@given(stream=st.sampled_from(BAD_HEADERS) | st.binary(max_size=80), data=st.data())
def test_framing_breaks_only_as_a_frame_error(stream: bytes, data: st.DataObject) -> None:
    """Headers and first bytes of any kind: events, or the `FrameError` that closes."""
    peer: Peer[Any] = Peer(CODEC, max_header=64, max_message=1024)
    points = data.draw(st.lists(st.integers(0, len(stream)), max_size=3))
    for event in drive(peer, stream, points):
        answer(peer, event)


@FUZZ
@given(initialized=st.booleans(), frames=st.lists(bad_bodies(MCP), min_size=1, max_size=4))
def test_the_mcp_machine_answers_every_line(initialized: bool, frames: list[bytes]) -> None:
    machine = mcp.McpMachine()
    if initialized:
        assert isinstance(machine.receive(MCP[0]), mcp.Initialize)
    for frame in frames:
        assert mcp.is_opening(frame) in (True, False)
        event = machine.receive(frame)
        if isinstance(event, mcp.Send):
            reply = json.loads(event.data)
            assert "result" in reply or reply["error"]["code"] in {
                *ERROR_CODES, ErrorCode.INVALID_PARAMS, ErrorCode.METHOD_NOT_FOUND
            }  # fmt: skip
            if not_utf8(frame):
                assert reply["error"]["code"] in ERROR_CODES
        elif isinstance(event, mcp.CallTool):
            assert isinstance(event.arguments, dict) and isinstance(event.name, str)
        else:
            assert event is None or isinstance(event, mcp.Event)  # type: ignore[arg-type]


@FUZZ
@given(initialized=st.booleans(), frames=st.lists(bad_bodies(LSP), min_size=1, max_size=6))
def test_the_lsp_machine_answers_every_frame(initialized: bool, frames: list[bytes]) -> None:
    machine = lsp.LspMachine()
    if initialized:
        assert isinstance(machine.receive(LSP[0]), lsp.Initialize)
    for frame in frames:
        assert lsp.is_opening(frame) in (True, False)
        event = machine.receive(frame)
        if isinstance(event, lsp.Send):
            reply = json.loads(event.data)
            assert reply["error"]["code"] in {
                *ERROR_CODES, ErrorCode.INVALID_PARAMS, ErrorCode.SERVER_NOT_INITIALIZED
            }  # fmt: skip
            if not_utf8(frame):
                assert reply["error"]["code"] in ERROR_CODES
        elif isinstance(event, lsp.Call):
            assert event.id in machine.inbound  # answered later: the reply encodes
            json.loads(machine.result_message(event.id, msgspec.Raw(b"null")))
            assert event.id not in machine.inbound
        else:
            assert event is None or isinstance(event, lsp.Event)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", NOT_UTF8)
@pytest.mark.parametrize("where", ["arguments", "name", "root", "cancelled", "meta"])
def test_bytes_not_utf8_in_any_payload_are_a_parse_error(bad: bytes, where: str) -> None:
    """The regression: a payload's bytes were decoded only when a handler read it, and a
    `UnicodeDecodeError` there ended the daemon."""
    frames = {
        "arguments": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",'
        b'"arguments":{"a":"' + bad + b'"}}}',
        "name": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + bad + b'"}}',
        "root": b'{"jsonrpc":"2.0","method":"codeward/mcp","params":{"root":"' + bad + b'"}}',
        "cancelled": b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":'
        b'{"requestId":"' + bad + b'"}}',
        "meta": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",'
        b'"_meta":{"progressToken":"' + bad + b'"}}}',
    }
    frame = frames[where]
    assert not mcp.is_opening(frame)
    assert json.loads(mcp.McpMachine().receive(frame).data)["error"]["code"] == -32700  # type: ignore[union-attr]
    (event,) = Peer(CODEC, Framing.NDJSON).receive_data(frame + b"\n")
    assert isinstance(event, InvalidMessage) and event.error.code == ErrorCode.PARSE_ERROR
