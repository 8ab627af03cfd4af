"""The sans-IO protocol core: framing, envelopes, encoding, tool rendering."""

from __future__ import annotations

import itertools
import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeward.protocol.errors import ErrorCode, ErrorKind, RpcError, ToolError
from codeward.protocol.framing import (
    ContentLengthDecoder,
    FrameError,
    Framing,
    NdjsonDecoder,
    detect_framing,
    encode_frame,
    make_decoder,
)
from codeward.protocol.messages import (
    CODEC,
    LARGE_RESPONSE_BYTES,
    Notification,
    Request,
    Response,
    decode_batch,
    decode_message,
    encode,
    error_response,
)
from codeward.protocol.socket_path import socket_path
from codeward.protocol.tools import ToolFormat, ToolSpec, render_tool

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.integers(0, 2**31) | st.text(min_size=1, max_size=10)
methods = st.text(min_size=1, max_size=20)
messages = st.one_of(
    st.builds(
        Request,
        id=ids,
        method=methods,
        params=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    ),
    st.builds(Notification, method=methods, params=json_values),
    st.builds(Response, id=ids, result=json_values),
)


def split_points(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(data)), max_size=8).map(sorted)


def chunks(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("framing", list(Framing))
@settings(max_examples=60, deadline=None)
@given(batch=st.lists(messages, min_size=1, max_size=5), data=st.data())
def test_any_split_yields_the_same_messages(
    framing: Framing, batch: list, data: st.DataObject
) -> None:
    bodies = [encode(m) for m in batch]
    stream = b"".join(encode_frame(framing, b) for b in bodies)
    points = data.draw(split_points(stream))
    decoder = make_decoder(framing)
    out: list[bytes] = []
    for chunk in chunks(stream, points):
        out.extend(decoder.feed(chunk))
    assert out == bodies
    assert decoder.pending == 0


@settings(max_examples=100, deadline=None)
@given(message=messages)
def test_encode_then_decode_is_identity(message) -> None:
    decoded = decode_message(encode(message))
    if isinstance(message, Request):
        assert (decoded.kind, decoded.id, decoded.method) == ("request", message.id, message.method)
        assert decoded.decode() == message.params
    elif isinstance(message, Notification):
        assert (decoded.kind, decoded.method) == ("notification", message.method)
        assert msgspec.json.decode(bytes(decoded.payload)) == message.params
    else:
        assert (decoded.kind, decoded.id) == ("response", message.id)
        assert msgspec.json.decode(bytes(decoded.payload)) == message.result


def test_null_result_and_zero_id_survive() -> None:
    body = encode(Response(id=0, result=None))
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 0, "result": None}
    decoded = decode_message(body)
    assert decoded.kind == "response" and decoded.id == 0


LARGE = {"items": [{"label": f"name_{i}", "detail": "d" * 40} for i in range(600)]}


@pytest.mark.parametrize("msg_id", [0, 17, -3, 2**52, "req-1"])
def test_a_large_response_as_libraries_write_it_is_taken_by_its_head(msg_id: int | str) -> None:
    """`{"jsonrpc":"2.0","id":..,"result":..}` with no spaces (vscode-jsonrpc's, msgspec's):
    the result is the bytes up to the closing brace, not parsed, the same as a parse gives."""
    body = encode(Response(id=msg_id, result=LARGE))
    assert len(body) >= LARGE_RESPONSE_BYTES and body.startswith(b'{"jsonrpc":"2.0","id":')
    for decoded in (decode_message(body), CODEC.decode(body)[0][0], decode_message(body + b"\r\n")):
        assert decoded.kind == "response" and decoded.id == msg_id  # type: ignore[union-attr]
        assert decoded.decode() == LARGE  # type: ignore[union-attr]
    (in_batch, other), is_batch = decode_batch(b"[" + body + b',{"method":"n"}]')
    assert is_batch and in_batch.decode() == LARGE and other.kind == "notification"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 5, "result": %s}',  # spaces: parsed
        b'{"jsonrpc":"2.0","result":%s,"id":5}',  # the id last (Go's order): parsed
        b'{"id":5,"jsonrpc":"2.0","result":%s}',
        b'{"jsonrpc":"2.0","id":5,"result":%s}',  # (the same, taken by its head)
    ],
)
def test_a_large_response_in_any_order_decodes_alike(body: bytes) -> None:
    result = msgspec.json.encode(LARGE)
    decoded = decode_message(body % result)
    assert decoded.kind == "response" and decoded.id == 5 and decoded.decode() == LARGE


@pytest.mark.parametrize(
    "head",
    [
        b'{"jsonrpc":"2.0","id":05,"result":',  # a leading zero: not JSON
        b'{"jsonrpc":"2.0","id":1.5,"result":',  # not an id
    ],
)
def test_a_large_response_whose_head_is_not_plain_is_parsed(head: bytes) -> None:
    """A head the fast way does not take goes through the parse, errors and all."""
    with pytest.raises(RpcError) as info:
        decode_message(head + msgspec.json.encode(LARGE) + b"}")
    assert info.value.code in (ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST)
    escaped = b'{"jsonrpc":"2.0","id":"a\\"b","result":' + msgspec.json.encode(LARGE) + b"}"
    assert decode_message(escaped).id == 'a"b'  # (parsed: the fast way takes no escapes)


def test_a_large_result_that_is_not_json_fails_where_it_is_read() -> None:
    """Taken by its head, a result that is not JSON is found out by whoever reads it:
    `decode` raises `msgspec.DecodeError`, as for any payload; the frame stays a response.
    A small one is refused with the frame, as before; bytes that are not UTF-8 always are."""
    broken = b'{"jsonrpc":"2.0","id":3,"result":{"a":"' + b"x" * LARGE_RESPONSE_BYTES + b'",}}'
    decoded = decode_message(broken)
    assert decoded.kind == "response" and decoded.id == 3
    with pytest.raises(msgspec.DecodeError):
        decoded.decode()
    with pytest.raises(RpcError) as info:
        decode_message(b'{"jsonrpc":"2.0","id":3,"result":{"a":1,}}')
    assert info.value.code == ErrorCode.PARSE_ERROR
    not_utf8 = broken.replace(b"xx", b"\xff", 1)
    with pytest.raises(RpcError) as info:
        CODEC.decode(not_utf8)
    assert info.value.code == ErrorCode.PARSE_ERROR
    for unended in (broken[:-2], broken[:-1] + b"]"):  # no closing brace: parsed, refused
        with pytest.raises(RpcError):
            decode_message(unended)


def test_error_response_shape() -> None:
    body = encode(error_response(7, ErrorCode.TOOL_ERROR, "Nope.", {"kind": "timeout"}))
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32000, "message": "Nope.", "data": {"kind": "timeout"}},
    }
    decoded = decode_message(body)
    assert decoded.kind == "response" and decoded.error.code == -32000


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"garbage", ErrorCode.PARSE_ERROR),
        (b'{"a": "\xff"}', ErrorCode.PARSE_ERROR),
        (b"[" * 100_000 + b"]" * 100_000, ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "x"}', ErrorCode.INVALID_REQUEST),
        (b'{"id": 1}', ErrorCode.INVALID_REQUEST),
        (b'{"id": null, "method": "x"}', ErrorCode.INVALID_REQUEST),
        (b'{"id": [1], "method": "x"}', ErrorCode.INVALID_REQUEST),
        (b'{"method": 5}', ErrorCode.INVALID_REQUEST),
        (b"[]", ErrorCode.INVALID_REQUEST),
    ],
)
def test_bad_messages_raise_the_right_code(raw: bytes, code: ErrorCode) -> None:
    with pytest.raises(RpcError) as info:
        decode_batch(raw)
    assert info.value.code == code


def test_deep_nesting_inside_params_is_a_parse_error() -> None:
    raw = b'{"id": 1, "method": "x", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(RpcError) as info:
        decode_batch(raw)
    assert info.value.code == ErrorCode.PARSE_ERROR
    assert "deeply" in info.value.message


def test_batch_mixes_valid_and_invalid_elements() -> None:
    items, is_batch = decode_batch(b'[{"id": 1, "method": "a"}, 5, {"method": "n"}]')
    assert is_batch
    assert items[0].kind == "request"  # type: ignore[union-attr]
    assert isinstance(items[1], RpcError) and items[1].code == ErrorCode.INVALID_REQUEST
    assert items[2].kind == "notification"  # type: ignore[union-attr]


def test_detect_framing() -> None:
    assert detect_framing(b"{") is Framing.NDJSON
    assert detect_framing(b"[{") is Framing.NDJSON
    assert detect_framing(b"Content-Length: 2") is Framing.CONTENT_LENGTH
    with pytest.raises(FrameError):
        detect_framing(b"\x00garbage")


def test_ndjson_skips_blank_lines_and_crlf() -> None:
    decoder = NdjsonDecoder()
    assert decoder.feed(b'{"a":1}\r\n\n  \n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']


def test_ndjson_limit() -> None:
    decoder = NdjsonDecoder(max_message=10)
    with pytest.raises(FrameError, match="limit"):
        decoder.feed(b"x" * 11)
    decoder = NdjsonDecoder(max_message=10)
    with pytest.raises(FrameError, match="limit"):
        decoder.feed(b"x" * 20 + b"\n")


def test_content_length_limits_and_errors() -> None:
    with pytest.raises(FrameError, match="Header block"):
        ContentLengthDecoder(max_header=16).feed(b"Content-Length: 1" + b"x" * 20)
    with pytest.raises(FrameError, match="limit"):
        ContentLengthDecoder(max_message=4).feed(b"Content-Length: 5\r\n\r\n")
    with pytest.raises(FrameError, match="Missing"):
        ContentLengthDecoder().feed(b"Content-Type: x\r\n\r\n")
    with pytest.raises(FrameError, match="not a number"):
        ContentLengthDecoder().feed(b"Content-Length: abc\r\n\r\n")
    with pytest.raises(FrameError, match="Malformed"):
        ContentLengthDecoder().feed(b"Content-Length 4\r\n\r\n")


def test_content_length_body_over_many_reads() -> None:
    """A body that spans reads is kept in parts (counted as pending) and joined once."""
    body = b"[" + b"1," * 50_000 + b"2]"
    decoder = ContentLengthDecoder()
    wire = b"Content-Length: %d\r\n\r\n" % len(body) + body + b"Content-Length: 2\r\n\r\n{}"
    assert decoder.feed(wire[:30_000]) == []
    assert decoder.pending == 30_000 - wire.index(b"[")
    assert decoder.feed(wire[30_000:60_000]) == []
    assert decoder.feed(wire[60_000:]) == [body, b"{}"]
    assert decoder.pending == 0


def test_content_length_frames_then_a_body_that_goes_on_in_later_reads() -> None:
    """Whole frames at the head of a read are split off it, and a body that goes on past
    it is kept from where it starts: the same bodies as any other cut; bytes fed as a
    bytearray that the reader then reuses are copied, never held as a view."""
    body = b"[" + b"7," * 40_000 + b"8]"
    wire = (b"Content-Length: 2\r\n\r\n{}" + b"Content-Length: %d\r\n\r\n" % len(body)
            + body + b"Content-Length: 4\r\n\r\nnull")  # fmt: skip
    cut = wire.index(b"[") + 1000
    for kind in (bytes, bytearray):
        decoder = ContentLengthDecoder()
        first = kind(wire[:cut])
        assert decoder.feed(first) == [b"{}"]
        assert decoder.pending == 1000
        if isinstance(first, bytearray):
            first[:] = b"!" * len(first)  # (the reader's buffer, reused)
        second = kind(wire[cut : cut + 50_000])
        assert decoder.feed(second) == []
        if isinstance(second, bytearray):
            second[:] = b"!" * len(second)
        assert decoder.feed(kind(wire[cut + 50_000 :])) == [body, b"null"]
        assert decoder.pending == 0


def test_content_length_ignores_other_headers() -> None:
    decoder = ContentLengthDecoder()
    frame = b"Content-Type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    assert decoder.feed(frame) == [b"{}"]


def test_content_length_whole_frames_however_the_reads_cut_them() -> None:
    """A read holding one whole frame (the common case, taken without the buffer) and any
    other cut of the same bytes give the same frames; a body read after its header alone
    is a body even when it reads like a header."""
    bodies = [b"{}", b'{"id":1}', b"Content-Length: 3\r\n\r\nabc", b"x" * 70]
    headers = [b"Content-Length: %d\r\n\r\n", b"Content-Type: a/b\r\nContent-Length: %d\r\n\r\n"]
    wire = [headers[i % 2] % len(body) + body for i, body in enumerate(bodies)]
    for each in wire:  # one frame a read
        assert ContentLengthDecoder().feed(each) in ([body] for body in bodies)
    joined = b"".join(wire)
    for cut in range(len(joined) + 1):
        decoder = ContentLengthDecoder()
        assert decoder.feed(joined[:cut]) + decoder.feed(joined[cut:]) == bodies
    decoder, inner = ContentLengthDecoder(), b"Content-Length: 3\r\n\r\nabc"
    assert decoder.feed(b"Content-Length: %d\r\n\r\n" % len(inner)) == []
    assert decoder.feed(inner) == [inner]
    with pytest.raises(FrameError, match="limit"):
        ContentLengthDecoder(max_message=2).feed(b"Content-Length: 3\r\n\r\nabc")


def test_tool_error_data() -> None:
    exc = ToolError(ErrorKind.TIMEOUT, "Try again.", seconds=3)
    assert exc.to_data() == {"kind": "timeout", "seconds": 3}
    assert "timeout" in repr(exc)


def test_every_design_error_kind_exists() -> None:
    kinds = {
        "invalid_arguments", "no_session", "session_not_found", "path_outside_project",
        "file_not_found", "unsupported_file_type", "not_a_git_repository",
        "subcommand_not_allowed", "argument_not_allowed", "blocked_destructive",
        "confirmation_required", "confirmation_denied", "unsafe_repository_config",
        "git_failed", "timeout", "lsp_unavailable", "lsp_error", "stale_edit", "write_failed",
        "lua_error", "lua_timeout", "lua_memory", "cancelled", "output_too_large",
        "unsupported_by_server",
    }  # fmt: skip
    assert {k.value for k in ErrorKind} == kinds


@pytest.mark.parametrize("fmt", list(ToolFormat))
def test_render_tool_formats(fmt: ToolFormat) -> None:
    spec = ToolSpec("t", "does t", {"type": "object", "properties": {}})
    rendered = render_tool(spec, fmt)
    text = json.dumps(rendered)
    assert '"t"' in text and "does t" in text
    key = {
        "openai": "parameters",
        "anthropic": "input_schema",
        "mcp": "inputSchema",
        "native": "input",
    }[fmt.value]
    assert key in text


def test_socket_path_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    assert str(socket_path("/x/s.sock", {})) == "/x/s.sock"
    assert str(socket_path(None, {"CODEWARD_SOCKET": "/y.sock"})) == "/y.sock"
    assert str(socket_path(None, {"XDG_RUNTIME_DIR": "/run/u"})) == "/run/u/codeward/codeward.sock"
    import os

    assert str(socket_path(None, {"TMPDIR": "/t"})) == f"/t/codeward-{os.getuid()}/codeward.sock"
    assert str(socket_path(None, {})) == f"/tmp/codeward-{os.getuid()}/codeward.sock"
