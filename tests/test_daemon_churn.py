"""Churn: the daemon's open descriptors stay bounded over 2,000 connect/disconnect cycles."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from codeward.daemon.server import Daemon
from tests.conftest import OpenClient

CYCLES = 2000
WARM_UP = 100


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_descriptors_stay_flat_over_connect_disconnect_cycles(
    open_client: OpenClient, daemon: Daemon, project: Path
) -> None:
    async def cycle(i: int) -> None:
        client = await open_client(project)  # attaches to the one session of the root
        if i % 3 == 0:
            await client.call("daemon/status")
        elif i % 3 == 1:  # goes away with a request unanswered
            await client.send({"jsonrpc": "2.0", "id": 1, "method": "session/list"})
        await client.aclose()

    async def settle() -> None:
        """Wait until the daemon has closed every connection of the cycles so far."""
        for conn in list(daemon.connections.values()):
            await conn.done.wait()

    with trio.fail_after(120):
        for i in range(WARM_UP):
            await cycle(i)
        await settle()
        before = open_fds()
        for i in range(CYCLES):
            await cycle(i)
        await settle()
    assert daemon.connections == {}
    assert len(daemon.sessions.sessions) == 1
    assert open_fds() <= before, f"{open_fds() - before} descriptors more after {CYCLES} cycles"
