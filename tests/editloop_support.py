"""One real daemon process per test module (`codeward daemon` in its own process group),
so a module's language servers start once: its tests share one project root (each with
files of its own) and connect a fresh client each."""

from __future__ import annotations

import contextlib
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
from tests.test_cli_e2e import CODEWARD, Env, kill_group, wait_ready


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
    env.log.parent.mkdir(parents=True, exist_ok=True)
    with open(env.log, "ab") as log:
        process = subprocess.Popen(
            [CODEWARD, "daemon", "--socket", str(env.socket)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env.vars,
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_ready(env.socket, process, env.log)
        yield SharedDaemon(env, process, Path(os.path.realpath(root)))
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            env.run("stop")
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait(10)
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
