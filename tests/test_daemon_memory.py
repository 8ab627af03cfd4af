"""What a closed session leaves in the daemon: nothing. Sessions opened, used (servers,
edits, diagnostics) and closed leave no session, no shared server state and no entries in
the process-wide caches keyed by their paths (`caches.keyed_by_paths`)."""

from __future__ import annotations

import gc
import os
import weakref
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from codeward.daemon import caches
from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.lsp_support import fake_config, fake_server

SESSIONS = 4


@pytest.fixture
def daemon_config() -> Config:
    """`*.fake` files; a session ends 50 ms after its last client left."""
    config = fake_config({"fake": fake_server("ok")})
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
@pytest.mark.usefixtures("collected_only_by_the_trim")
async def test_the_trim_after_a_session_ends_frees_the_session(
    open_client: OpenClient,
    daemon: Daemon,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ending: str,
) -> None:
    """A session's parts know each other (reference cycles), so a collection frees it, not
    its last reference going: when its end collects and trims, nothing holds it any more
    (not the task that ran it, not the close that terminated it), and what it held goes
    back to the system then (the sympy session's 3.7x, the daemon quiet after it, so no
    automatic collection came)."""
    freed: list[bool] = []
    trimmed = trio.Event()
    trim = caches.trim

    def spy() -> None:
        trim()
        freed.append(session() is None)
        trio.from_thread.run_sync(trimmed.set)

    monkeypatch.setattr(caches, "trim", spy)
    (tmp_path / "a.fake").write_text("good\nbad\n")
    client = await open_client(tmp_path)
    with trio.fail_after(30):
        await client.tool("get_diagnostics", path="a.fake")
        await client.tool("edit_file", path="a.fake", content="good\n", mode="safe")
    session = weakref.ref(next(iter(daemon.sessions.sessions.values())))
    with trio.fail_after(30):
        if ending == "terminate":
            assert await client.call("session/close", {"terminate": True}) == {}
        else:
            await client.aclose()
        await trimmed.wait()
    assert freed == [True]


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
