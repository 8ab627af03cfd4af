"""Previews on real servers (basedpyright and ruff): no concurrent client sees the preview's
text, a server killed during a preview leaves the servers with the disk's content and
nothing written, and the gate's own rules."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from codeward.daemon.lsp import service as service_module
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

LIB = "def greet(name: str) -> str:\n    return 'hi ' + name\n"
USE = "from lib import greet\n\nprint(greet(name='x'))\n"
BROKEN = LIB.replace("name: str", "name: str, extra: int")  # use.py's call misses `extra`


def by_file(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["file"]: f for f in result["diagnostics_after"]}


@needs("basedpyright", "ruff")
async def test_no_concurrent_client_sees_a_preview(
    open_client: OpenClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Client B asks while client A's preview holds the servers with the broken text: B's
    request waits for the preview's end and answers for the disk's content."""
    write(project, {"lib.py": LIB, "use.py": USE})
    a, b = await open_client(project), await open_client(project)
    await a.tool("get_diagnostics", path="use.py")
    shown, blocked = trio.Event(), trio.Event()
    real_show = service_module.LanguageService.show
    real_shared = Gate.shared

    async def show(self: Any, path: Path) -> None:
        await real_show(self, path)
        shown.set()
        await blocked.wait()  # the servers hold the preview text until B is waiting

    def shared(self: Gate) -> AbstractAsyncContextManager[None]:
        if self.writer and not self.held():
            blocked.set()  # a request of another client meets the preview
        return real_shared(self)

    monkeypatch.setattr(service_module.LanguageService, "show", show)
    monkeypatch.setattr(Gate, "shared", shared)
    results: dict[str, Any] = {}

    async def preview() -> None:
        results["a"] = await a.tool("edit_file", path="lib.py", content=BROKEN, mode="preview")

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(preview)
            await shown.wait()
            results["b"] = await b.tool("get_diagnostics", path="use.py")
            results["hover"] = await b.tool("get_hover_info", path="lib.py", line=1, character=5)
    assert blocked.is_set()
    assert by_file(results["a"])["use.py"]["introduced"], results["a"]
    assert results["b"]["diagnostics"] == []  # the disk's use.py is fine
    assert "extra" not in str(results["hover"])  # the disk's signature
    assert (project / "lib.py").read_text() == LIB


@needs("basedpyright", "ruff")
async def test_a_server_killed_during_a_preview(
    daemon: Daemon, client: RpcClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, {"lib.py": LIB, "use.py": USE})
    await client.tool("get_diagnostics", path="use.py")
    killed: list[int] = []
    real = LanguageServer.document_diagnostics

    async def dying(self: LanguageServer, doc: Any, settle: float) -> Any:
        if self.name == "basedpyright" and not killed and self.pid is not None:
            killed.append(self.pid)
            os.killpg(self.pid, signal.SIGKILL)  # dies with the request in flight
        return await real(self, doc, settle)

    show_real = service_module.LanguageService.show

    async def show(self: Any, path: Path) -> None:
        await show_real(self, path)
        monkeypatch.setattr(LanguageServer, "document_diagnostics", dying)

    monkeypatch.setattr(service_module.LanguageService, "show", show)
    with pytest.raises(RpcFailure) as info:
        await client.tool("edit_file", path="lib.py", content=BROKEN, mode="preview")
    monkeypatch.setattr(LanguageServer, "document_diagnostics", real)
    err = info.value
    assert killed and err.kind == "lsp_error" and "during the preview" in err.message
    assert "nothing was written" in err.message and err.data["server"] == "basedpyright"
    assert (project / "lib.py").read_text() == LIB
    # the restarted server has the disk's content: use.py is fine, lib.py unchanged
    with trio.fail_after(120):
        after = await client.tool("get_diagnostics", path="use.py")
    assert after["diagnostics"] == [] and not after.get("errors"), after
    (session,) = daemon.sessions.sessions.values()
    texts = [d.text for s in session.lsp.pool.servers.values() for d in s.open_documents()]
    assert BROKEN not in texts and LIB in texts


async def test_gate_rules() -> None:
    """Holders pass through their own gate; a waiting preview holds back new requests; a
    preview cannot start inside a request of the same gate; cancelled waiters leave no trace."""
    gate = Gate()
    order: list[str] = []
    in_reader = trio.Event()
    release_reader = trio.Event()

    async def reader(name: str, hold: trio.Event | None = None) -> None:
        async with gate.shared():
            order.append(f"{name} in")
            async with gate.shared():  # nested: passes through
                pass
            if hold is not None:
                in_reader.set()
                await hold.wait()
            order.append(f"{name} out")

    async def writer() -> None:
        async with gate.exclusive():
            order.append("writer in")
            assert gate.held() and gate.readers == 0
            order.append("writer out")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader, "r1", release_reader)
            await in_reader.wait()
            nursery.start_soon(writer)
            await wait_until(lambda: gate.writers_waiting == 1)
            nursery.start_soon(reader, "r2")  # arrives after the writer: waits for it
            await trio.testing.wait_all_tasks_blocked()
            release_reader.set()
    assert order == ["r1 in", "r1 out", "writer in", "writer out", "r2 in", "r2 out"]
    async with gate.shared():
        with pytest.raises(RuntimeError):
            async with gate.exclusive():
                pass
    # a preview cancelled while it waits lets the readers it held back go on
    release = trio.Event()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader, "r3", release)
            await trio.testing.wait_all_tasks_blocked()
            waiting = trio.CancelScope()
            nursery.start_soon(_exclusive_until_cancelled, gate, waiting)
            await wait_until(lambda: gate.writers_waiting == 1)
            waiting.cancel()
            await wait_until(lambda: gate.writers_waiting == 0)
            async with gate.shared():  # not held back any more
                order.append("r4")
            release.set()
    assert not gate.writer and gate.readers == 0 and order[-1] == "r3 out"


async def _exclusive_until_cancelled(gate: Gate, scope: trio.CancelScope) -> None:
    with scope:
        async with gate.exclusive():
            raise AssertionError("the reader still holds the gate")


async def wait_until(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await trio.testing.wait_all_tasks_blocked()
