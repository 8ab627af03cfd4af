"""What a closed session leaves in the daemon: nothing. Sessions opened, used (servers,
edits, diagnostics) and closed leave no session, no shared server state and no entries in
the process-wide caches keyed by their paths (`caches.keyed_by_paths`)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing
from lsprotocol import types as lsp

from codeward.daemon import caches
from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.lsp.coverage import Checked, Kept
from codeward.daemon.lsp.diagnostics import found
from codeward.daemon.lsp.positions import LineIndex
from codeward.daemon.outbox import Outbox
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.lsp_support import fake_config, fake_server

SESSIONS = 4


@pytest.fixture
def daemon_config(request: pytest.FixtureRequest) -> Config:
    """`*.fake` files, its server a process of the session's own (or, "shared", one the
    roots of a repository share); a session ends 50 ms after its last client left."""
    server = fake_server("ok")
    if getattr(request, "param", "own") == "shared":
        server = msgspec.structs.replace(server, folders=True)
    config = fake_config({"fake": server})
    return msgspec.structs.replace(config, daemon=DaemonConfig(idle_timeout=0.05))


async def test_closed_sessions_leave_nothing_behind(
    open_client: OpenClient, daemon: Daemon, tmp_path: Path
) -> None:
    for i in range(SESSIONS):
        root = tmp_path / f"root{i}"
        root.mkdir()
        (root / "a.fake").write_text("good\nbad\n")
        client = await open_client(root)
        with trio.fail_after(30):
            await client.tool("get_hover_info", path="a.fake", line=1, character=1)
            await client.tool("get_diagnostics", path="a.fake")
            await client.tool("edit_file", path="a.fake", content="good\n", mode="safe")
        (session,) = [s for s in daemon.sessions.sessions.values() if s.root == root.resolve()]
        assert any(size for size in caches.sizes().values())  # in use while it lives
        await client.aclose()
        with trio.fail_after(30):
            await session.stopped.wait()
            await trio.testing.wait_all_tasks_blocked()
        assert daemon.sessions.sessions == {}
        assert caches.sizes() == dict.fromkeys(caches.sizes(), 0), caches.sizes()
    assert daemon.sessions.shared._servers == {}
    assert daemon.sessions.shared._repositories == {}


@pytest.fixture
def collected_only_by_the_trim() -> Iterator[None]:
    """No automatic collection: what is in reference cycles is freed by `caches.trim`'s."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("ending", ["terminate", "idle"])
@pytest.mark.parametrize("daemon_config", ["own", "shared"], indirect=True)
@pytest.mark.usefixtures("collected_only_by_the_trim")
async def test_a_trim_after_a_session_ends_frees_the_session(
    open_client: OpenClient,
    daemon: Daemon,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ending: str,
) -> None:
    """A session's parts know each other (reference cycles), so a collection frees it, not
    its last reference going; the daemon, quiet once it closed, runs no automatic one for a
    long time (the sympy session's 3.7x). So its end asks for a trim once nothing holds it:
    not the task that ran it, not the close that terminated it, not a shared process still
    stopping after its last root left (its progress went to the session): the trim that
    shared process's end asks for frees it then."""
    freed = trio.Event()
    trim = caches.trim

    def spy() -> None:
        trim()
        if session() is None:
            trio.from_thread.run_sync(freed.set)

    monkeypatch.setattr(caches, "trim", spy)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.fake").write_text("good\nbad\n")
    client = await open_client(tmp_path)
    with trio.fail_after(30):
        await client.tool("get_diagnostics", path="a.fake")
        await client.tool("edit_file", path="a.fake", content="good\n", mode="safe")
    (live,) = daemon.sessions.sessions.values()
    assert daemon.sessions.shared.shares(live.lsp.pool.servers["fake"]) == (
        daemon.sessions.config.servers["fake"].folders is True
    )
    session = weakref.ref(live)
    del live
    with trio.fail_after(30):
        if ending == "terminate":
            assert await client.call("session/close", {"terminate": True}) == {}
        else:
            await client.aclose()
        await freed.wait()


@pytest.mark.usefixtures("collected_only_by_the_trim")
async def test_a_client_still_bound_to_a_terminated_session_frees_it_when_it_leaves(
    open_client: OpenClient, daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One client terminates the session another still uses: that other connection holds
    it past the trim of its end; when it leaves (or opens a session again) a trim frees it."""
    freed, trimmed = trio.Event(), trio.Event()
    trim = caches.trim

    def spy() -> None:
        trim()
        trio.from_thread.run_sync(trimmed.set)
        if session() is None:
            trio.from_thread.run_sync(freed.set)

    monkeypatch.setattr(caches, "trim", spy)
    (tmp_path / "a.fake").write_text("good\nbad\n")
    closing, staying = await open_client(tmp_path), await open_client(tmp_path)
    with trio.fail_after(30):
        await staying.tool("get_diagnostics", path="a.fake")
    (live,) = daemon.sessions.sessions.values()
    session = weakref.ref(live)
    del live
    with trio.fail_after(30):
        assert await closing.call("session/close", {"terminate": True}) == {}
        await trimmed.wait()  # the trim after its end: still held
    assert session() is not None
    with trio.fail_after(30):
        await staying.aclose()
        await freed.wait()


def _rss() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_trim_gives_freed_memory_back() -> None:
    """What a session freed in the C heap, below a block still in use, goes back to the
    system with `caches.trim` (glibc keeps it otherwise)."""
    blocks = [bytes(4096) + bytes([i % 256]) for i in range(16384)]  # 64 MiB of heap blocks
    kept = bytes(4096) + b"kept"  # allocated last: the heap's top stays in use
    held = _rss()
    del blocks
    caches.trim()
    assert _rss() < held - 32 * 1024 * 1024
    assert kept.endswith(b"kept")


async def test_a_written_frame_is_not_held_by_the_outbox() -> None:
    """The writer task lets go of a frame once it is written: a project's diagnostics
    answer (megabytes) stayed in the daemon as long as its connection lasted."""
    sent, received = trio.testing.memory_stream_pair()  # (no descriptor: queued, then written)
    outbox = Outbox(sent, lambda: None)
    frame = b"x" * (1 << 20) + b"\n"
    alone = sys.getrefcount(frame)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        outbox.put(frame)
        assert sys.getrefcount(frame) > alone  # queued
        got = b""
        while len(got) < len(frame):
            got += await received.receive_some()
        await outbox.flush()
        await trio.testing.wait_all_tasks_blocked()  # the writer waits for the next frame
        assert sys.getrefcount(frame) == alone
        outbox.close()
    assert got == frame


def test_checked_files_keep_their_diagnostics_as_one_small_object_each() -> None:
    """What folders' diagnostics checked is kept for later calls as `Kept` (no `data`: ruff
    sends its fixes there, many small objects a diagnostic), codes and sources shared, and
    answers the same as the server's diagnostic did."""

    def diagnostic(line: int) -> lsp.Diagnostic:
        return lsp.Diagnostic(
            range=lsp.Range(lsp.Position(line, 4), lsp.Position(line, 9)),
            message=f"`os.path.join` imported but unused ({line})",
            severity=lsp.DiagnosticSeverity.Warning,
            code="F401",
            source="Ruff",
            data={"edits": [{"range": {}, "newText": ""}], "noqa_row": line},
        )

    checked = Checked()
    served = [diagnostic(0), diagnostic(1)]
    checked["file:///r/a.py"] = served
    checked.update({"file:///r/b.py": [diagnostic(2)], "file:///r/c.py": []})
    kept = [*checked["file:///r/a.py"], *checked["file:///r/b.py"]]
    assert all(type(d) is Kept for d in kept) and checked["file:///r/c.py"] == ()
    assert not any(gc.is_tracked(d) for d in kept)
    assert len({id(d.code) for d in kept}) == 1 and len({id(d.source) for d in kept}) == 1
    assert sorted(checked) == ["file:///r/a.py", "file:///r/b.py", "file:///r/c.py"]
    del checked["file:///r/c.py"]
    assert len(checked) == 2 and "file:///r/c.py" not in checked
    index = LineIndex("import os\nfrom os.path import join\n")
    for server, mine in zip(served, kept[:2], strict=True):
        assert found("a.py", mine, index, "utf-16", Path("/r"), "ruff") == found(
            "a.py", server, index, "utf-16", Path("/r"), "ruff"
        )
    checked["file:///r/a.py"] = kept[:1]  # kept again as it is
    assert checked["file:///r/a.py"][0] is kept[0]
