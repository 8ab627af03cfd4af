"""One real daemon process per test module (`codeward daemon` in its own process group),
so a module's language servers start once: its tests share one project root (each with
files of its own) and connect a fresh client each."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from tests.leaks import leftovers
from tests.rpc import RpcClient, connect
from tests.test_cli_e2e import Env, running_daemon


@dataclass
class SharedDaemon:
    env: Env
    process: subprocess.Popen[bytes]
    root: Path  # the project every test of the module works in


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[SharedDaemon]:
    base = Path(tempfile.mkdtemp(prefix="cwm-", dir="/tmp"))  # AF_UNIX paths are short
    env = Env(base)
    root = base / "project"
    root.mkdir()
    try:
        with running_daemon(env) as process:
            yield SharedDaemon(env, process, Path(os.path.realpath(root)))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_leaked_processes(shared_daemon: SharedDaemon) -> Iterator[None]:
    """conftest's check, but for the module's daemon (and the servers it owns)."""
    yield
    leaked = leftovers(keep={shared_daemon.process.pid})
    assert not leaked, f"processes left behind: {leaked}"


@pytest.fixture
async def shared_client(
    nursery: trio.Nursery, shared_daemon: SharedDaemon
) -> AsyncIterator[RpcClient]:
    """A client of the module's daemon, bound to the session of its root."""
    client = await connect(nursery, shared_daemon.env.socket)
    await client.call("session/open", {"root": str(shared_daemon.root)})
    yield client
    await client.stream.aclose()
