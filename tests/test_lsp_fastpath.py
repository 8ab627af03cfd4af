"""The hot path's shortcuts give the same answers as the long way: kernel-resolved real
paths, input resolution by string, cached languages and URIs, the deduplicated stat sweep,
and frames written straight to a pipe or socket without the writer task."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon import paths
from codeward.daemon.config import Config
from codeward.daemon.intel.inputs import resolve_inside
from codeward.daemon.intel.locations import Locator, finish
from codeward.daemon.lsp import texts as texts_module
from codeward.daemon.lsp import uris
from codeward.daemon.lsp.connection import ConnectionClosed, LspConnection, RequestTimeout
from codeward.daemon.lsp.defaults import language_of
from codeward.daemon.lsp.documents import DocumentStore
from codeward.daemon.lsp.positions import ENCODINGS, LineIndex
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.lsp.types import Position, Range
from codeward.daemon.outbox import Outbox
from codeward.daemon.paths import resolve_input_path
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.protocol.framing import ContentLengthDecoder


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A root with files, symlinks inside and out, and a secret folder outside it."""
    root = Path(os.path.realpath(tmp_path / "root"))
    outside = Path(os.path.realpath(tmp_path / "outside"))
    (root / "pkg").mkdir(parents=True)
    outside.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "pkg" / "b.py").write_text("y = 2\n")
    (outside / "s.py").write_text("secret = 1\n")
    (root / "inner.py").symlink_to(root / "a.py")
    (root / "pkgdir").symlink_to(root / "pkg")
    (root / "out.py").symlink_to(outside / "s.py")
    (root / "outdir").symlink_to(outside)
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    (root / "loop.py").symlink_to(root / "loop.py")
    return root, outside


def test_real_path_matches_realpath(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    names = [
        "a.py", "pkg/b.py", "inner.py", "pkgdir/b.py", "out.py", "outdir/s.py",
        "pkg/../a.py", "pkgdir/../a.py", "missing.py", "dangling.py", "loop.py", "pkg", ".",
    ]  # fmt: skip
    for name in names:
        path = f"{root}/{name}"
        assert uris.real_path(path) == os.path.realpath(path), name
        assert uris.real_path(Path(path)) == os.path.realpath(path), name
    assert uris.real_path(f"{root}/outdir/s.py") == str(outside / "s.py")


def test_real_path_falls_back_without_o_path(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = tree
    monkeypatch.setattr(paths, "_O_PATH", 0)
    assert uris.real_path(f"{root}/inner.py") == str(root / "a.py")
    monkeypatch.undo()
    # A file deleted between the open and the readlink shows as "(deleted)": not trusted
    # (the fallback reads no link here: no part of this path is one).
    real_readlink = os.readlink
    monkeypatch.setattr(os, "readlink", lambda p: real_readlink(p) + " (deleted)")
    assert uris.real_path(f"{root}/pkg/../a.py") == str(root / "a.py")
    monkeypatch.setattr(os, "readlink", lambda p: "anon_inode:[x]")
    assert uris.real_path(f"{root}/a.py") == str(root / "a.py")

    def broken(p: str) -> str:
        raise OSError("no /proc")

    monkeypatch.setattr(os, "readlink", broken)
    assert uris.real_path(f"{root}/a.py") == str(root / "a.py")


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ToolError as exc:
        return exc.kind, exc.message


def test_resolve_inside_agrees_with_resolve_input_path(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    inputs = [
        "a.py", "pkg/b.py", "./a.py", "pkg//b.py", "inner.py", "pkgdir/b.py", "out.py",
        "outdir/s.py", "../outside/s.py", "pkg/../../outside/s.py", str(root / "a.py"),
        str(outside / "s.py"), "/etc/passwd", "missing.py", "dangling.py", "loop.py", "pkg",
        ".", "", "a\x00.py",
    ]  # fmt: skip
    for name in inputs:
        fast = outcome(resolve_inside, root, name)
        slow = outcome(lambda r, p: resolve_input_path(r, p, must_exist=False), root, name)
        assert fast == slow, name
    assert outcome(resolve_inside, root, "out.py")[0] is ErrorKind.PATH_OUTSIDE_PROJECT
    assert outcome(resolve_inside, root, "")[0] is ErrorKind.INVALID_ARGUMENTS


def test_path_to_uri_and_uri_to_path() -> None:
    path = Path("/tmp/a b/ü#?.py")
    assert uris.path_to_uri(path) == path.as_uri()
    assert uris.path_to_uri(path) is uris.path_to_uri(Path(str(path)))  # remembered
    assert uris.uri_to_path(path.as_uri()) == path
    assert uris.uri_to_path("file:///tmp/x.py?query#frag") == Path("/tmp/x.py")
    assert uris.uri_to_path("file://host/tmp/x.py") == Path("/tmp/x.py")
    assert uris.uri_to_path("untitled:Untitled-1") is None


def test_locator_resolves_links_every_call(tree: tuple[Path, Path]) -> None:
    """A Locator is per answer; a link retargeted between two answers is seen by the second."""
    root, outside = tree
    manager = LanguageService(root, Config(), lambda _: None)
    link = root / "moving.py"
    link.symlink_to(root / "a.py")
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    first = Locator(manager).location(link.as_uri(), rng, "utf-16")
    assert first is not None and first["path"] == "a.py" and first["preview"] == "x = 1"
    link.unlink()
    link.symlink_to(outside / "s.py")
    assert Locator(manager).location(link.as_uri(), rng, "utf-16") is None
    assert Locator(manager).place(root.as_uri()) == (".", True)
    assert Locator(manager).place("untitled:x") is None


def test_language_cache_agrees(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    manager = LanguageService(root, Config(), lambda _: None)
    for name in ("a.py", "pkg/b.py", "notes.txt", "main.go", "x.c"):
        path = root / name
        expected = language_of(path, root, manager.languages.configs)
        assert manager.language_or_none(path) == expected
        assert manager.language_or_none(path) == expected  # from the cache
    with pytest.raises(ToolError) as info:
        manager.language(root / "notes.txt")
    assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE


def test_line_index_plain() -> None:
    assert LineIndex("x = 1\ny = 'é'\n").plain
    assert not LineIndex("x = '\ufffd'\n").plain
    assert not LineIndex("x\x00y\n").plain


def store_with(manager: LanguageService, paths: list[Path]) -> DocumentStore:
    store = DocumentStore(100)
    for path in paths:
        data, stat = manager.texts.read(path)
        assert data is not None
        store.sync(path, path.as_uri(), "python", data, 0, stat)
    return store


def test_stale_sweep_stats_each_path_once(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = tree
    monkeypatch.setattr(texts_module, "RACY_NS", 0)  # trust the stats of files just written
    paths = [root / "a.py", root / "pkg" / "b.py"]
    manager = LanguageService(root, Config(), lambda _: None)
    for name, running in (("one", True), ("two", True), ("stopped", False)):
        documents = tuple(store_with(manager, paths).documents.values())
        manager.pool.servers[name] = SimpleNamespace(  # type: ignore[assignment]
            running=running, open_documents=lambda documents=documents: documents
        )
    seen: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, **kw: seen.append(str(p)) or real_stat(p, **kw))
    assert manager.events.stale_documents() == []
    assert sorted(seen) == sorted(str(p) for p in paths)
    paths[1].write_text("y = 22\n")  # another size: another stat
    assert manager.events.stale_documents() == [paths[1], paths[1]]  # both running servers
    paths[1].unlink()
    assert manager.events.stale_documents() == [paths[1], paths[1]]


# -- frames straight to the pipe -------------------------------------------------------------


def read_frames(fd: int, count: int) -> list[Any]:
    """`count` frames from the read end of a pipe (blocking)."""
    decoder = ContentLengthDecoder(max_message=1 << 26)
    frames: list[bytes] = []
    os.set_blocking(fd, True)
    while len(frames) < count:
        frames += decoder.feed(os.read(fd, 1 << 20))
    return [msgspec.json.decode(frame) for frame in frames]


@contextlib.contextmanager
def piped_connection(
    max_message: int = 1 << 20, *, server_gone: bool = False
) -> Iterator[tuple[LspConnection, int, int]]:
    """An LspConnection on two pipes standing for a server's stdin and stdout. Yields it,
    the end the server would read its stdin from (closed at once when `server_gone`) and the
    end the server would write to; every end is closed after."""
    sent, stdin_end = os.pipe()
    stdout_end, said = os.pipe()
    stdin, stdout = trio.lowlevel.FdStream(stdin_end), trio.lowlevel.FdStream(stdout_end)
    conn = LspConnection(
        "test",
        stdin,
        stdout,
        on_request=lambda *_: None,
        on_notification=lambda *_: None,
        max_message=max_message,
    )
    ours = [said]
    if server_gone:
        os.close(sent)
    else:
        ours.append(sent)
    try:
        yield conn, sent, said
    finally:
        for fd in ours:
            os.close(fd)
        stdin.close()
        stdout.close()


async def test_lsp_frames_go_straight_to_the_pipe_and_keep_their_order() -> None:
    # the server's stdout never says anything
    with piped_connection(1 << 26) as (conn, read_end, _):
        async with trio.open_nursery() as nursery:
            await nursery.start(conn.run)
            conn.notify("small", {"n": 1})  # idle: written at once, before any checkpoint
            os.set_blocking(read_end, False)
            assert read_frames(read_end, 1)[0]["method"] == "small"
            big = "x" * (1 << 20)  # more than the pipe takes at once
            conn.notify("big", {"text": big})
            conn.notify("after", {"n": 2})  # must wait behind the rest of `big`
            assert conn._outbox.queued_frames == 2
            frames = await trio.to_thread.run_sync(read_frames, read_end, 2)
            assert [f["method"] for f in frames] == ["big", "after"]
            assert frames[0]["params"]["text"] == big
            with trio.fail_after(5):
                while conn._outbox.queued_frames:
                    await trio.sleep(0)
            conn.notify("direct again", None)
            assert conn._outbox.queued_frames == 0
            assert read_frames(read_end, 1)[0]["method"] == "direct again"
            conn.close("done")


async def test_a_closed_pipe_fails_requests_at_once() -> None:
    with piped_connection(server_gone=True) as (conn, _, _):
        async with trio.open_nursery() as nursery:
            await nursery.start(conn.run)
            with trio.fail_after(5), pytest.raises(ConnectionClosed, match="stdin closed"):
                await conn.request("textDocument/hover", {}, timeout=60)
            assert conn.closed.is_set()
            conn.notify("dropped")  # after close: nothing, no error


async def test_replies_go_straight_to_the_socket_and_keep_their_order() -> None:
    mine, theirs = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(mine))
    outbox = Outbox(stream, lambda: None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        outbox.put(b'{"n":1}\n')  # idle: on the socket before any checkpoint
        theirs.setblocking(False)
        assert theirs.recv(100) == b'{"n":1}\n'
        big = b'{"big":"' + b"x" * (4 << 20) + b'"}'  # more than the socket buffer
        outbox.put(big + b"\n")
        outbox.put(b'{"n":2}\n')
        queued = outbox.queued_bytes
        assert len(b'{"n":2}\n') < queued <= len(big) + len(b'\n{"n":2}\n')

        def drain() -> bytes:
            theirs.setblocking(True)
            data = b""
            while not data.endswith(b'{"n":2}\n'):
                data += theirs.recv(1 << 20)
            return data

        data = await trio.to_thread.run_sync(drain)
        assert data == big + b'\n{"n":2}\n'
        with trio.fail_after(5):
            await outbox.flush()
        assert outbox.queued_bytes == 0 and outbox.peak_bytes == queued
        theirs.close()  # the client goes away: a write fails and the connection is closed
        for _ in range(3):
            outbox.put(b'{"n":3}\n')
        assert outbox.closed and outbox.queued_bytes == 0
        nursery.cancel_scope.cancel()
    mine.close()


def test_locate_agrees_with_to_client() -> None:
    index = LineIndex("plain line\nnon-ascii é 𝄞 x\n\tindented\n")
    spans = [
        (0, 0, 0, 5),
        (1, 10, 1, 14),
        (0, 3, 1, 12),
        (1, 99, 2, 3),
        (5, 1, 7, 2),
        (-1, 0, 0, 0),
    ]
    for encoding in ENCODINGS:
        for line, char, end_line, end_char in spans:
            expected = (
                *index.to_client(line, char, encoding),
                *index.to_client(end_line, end_char, encoding),
                index.line(line).strip(),
            )
            assert index.locate(line, char, end_line, end_char, encoding) == expected


def test_bulk_locations_agree_with_one_by_one(tree: tuple[Path, Path]) -> None:
    """`Locator.locations` (the 1,000-location path) gives what `finish(location(...))`
    gives: duplicates dropped, files without text, dropped URIs, non-ASCII lines, ranges
    past the end, project files before indicators."""
    root, _ = tree
    (root / "u.py").write_text("s = 'é𝄞' + name\nplain = name\n")
    (root / "v.py").write_text("name\n")
    manager = LanguageService(root, Config(), lambda _: None)
    u, v, gone = ((root / n).as_uri() for n in ("u.py", "v.py", "gone.py"))

    def loc(uri: str, line: int, char: int, end_line: int, end_char: int) -> LspLocation:
        return LspLocation(uri, Range(Position(line, char), Position(end_line, end_char)))

    items = [
        loc(v, 0, 0, 0, 4),
        loc(u, 1, 8, 1, 12),
        loc(u, 0, 12, 0, 16),
        loc(u, 1, 8, 1, 12),  # a duplicate
        loc("untitled:x", 0, 0, 0, 1),  # dropped
        loc("untitled:x", 1, 0, 1, 1),
        loc(gone, 3, 2, 3, 5),  # no text
        loc(u, 9, 0, 9, 3),  # past the end
        loc(u, 0, 99, 1, 3),  # over two lines
        loc(v, 0, 0, 0, 4),
    ]
    for encoding in ENCODINGS:
        one_by_one = finish(Locator(manager).location(i.uri, i.range, encoding) for i in items)
        assert msgspec.to_builtins(Locator(manager).locations(items, encoding)) == one_by_one
    assert Locator(manager).locations([], "utf-16") == []


def test_location_from_structs_and_dicts_agree(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    (root / "u.py").write_text("s = 'é𝄞' + name\n")
    manager = LanguageService(root, Config(), lambda _: None)
    uri = (root / "u.py").as_uri()
    raw = {"start": {"line": 0, "character": 12}, "end": {"line": 0, "character": 16}}
    as_dict = Locator(manager).location(uri, raw, "utf-16")
    as_struct = Locator(manager).location(uri, msgspec.convert(raw, Range), "utf-16")
    assert as_dict == as_struct
    assert as_dict is not None and (as_dict["character"], as_dict["end_character"]) == (12, 16)
    assert as_dict["preview"] == "s = 'é𝄞' + name"
    gone = (root / "gone.py").as_uri()  # no text: positions shown as they came, 1-based
    assert Locator(manager).location(gone, raw, "utf-16") == {
        "path": "gone.py", "line": 1, "character": 13, "end_line": 1, "end_character": 17,
        "preview": "",
    }  # fmt: skip


async def test_requests_go_in_one_write_and_each_times_out_alone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """`requests` sends its calls at once; each answer comes back in its place, and one
    the server never answers times out alone, by the connection's timer, with its
    `$/cancelRequest` sent (a request needs no cancel scope of its own)."""
    with piped_connection() as (conn, to_server, from_server):
        os.set_blocking(to_server, False)
        async with trio.open_nursery() as nursery:
            await nursery.start(conn.run)
            calls = [("textDocument/hover", {}, Any), ("textDocument/definition", {}, Any)]
            asking = trio.Event()
            results: list[Any] = []

            async def ask() -> None:
                asking.set()
                results.extend(await conn.requests(calls, timeout=30))

            nursery.start_soon(ask)
            await asking.wait()
            await trio.sleep(0)  # the frames are written before the first checkpoint
            hover, definition = read_frames(to_server, 2)  # both there before any answer
            assert [hover["method"], definition["method"]] == [c[0] for c in calls]
            answer = msgspec.json.encode({"jsonrpc": "2.0", "id": hover["id"], "result": "h"})
            os.write(from_server, b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))
            with trio.fail_after(60):
                while not results:
                    await trio.sleep(1)
            assert results[0] == "h"
            assert isinstance(results[1], RequestTimeout)
            assert "within 30 s" in str(results[1])
            [cancel] = read_frames(to_server, 1)
            assert cancel["method"] == "$/cancelRequest"
            assert cancel["params"] == {"id": definition["id"]}
            assert conn.in_flight == 0 and list(conn.abandoned) == [definition["id"]]
            conn.close("done")
