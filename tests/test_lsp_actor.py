"""The language-server actor owns its process, documents and pending requests: a command's
captured edits, the order of syncs and requests, cancellation, a crash during a command,
and the turns of what it runs one at a time."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from lsprotocol import types as lsp

from codeward.daemon.lsp import supervisor
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.shapes import structure
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import fake_config, fake_server, logged, running


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\n")
    return path


def _edit(label: str) -> dict[str, Any]:
    """A WorkspaceEdit told apart by `label` (a file it names)."""
    return {"changes": {f"file:///{label}": []}}


async def _server(manager: Any) -> LanguageServer:
    server: LanguageServer = await manager.pool.started("fake")
    return server


async def test_a_commands_edits_go_to_that_command_only(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    got: dict[str, list[Any]] = {"one": [], "two": [], "three": []}
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        server = await _server(manager)
        server.sync(doc, "fake", b"good\n")

        def handler(name: str) -> Any:
            async def on_edit(edit: Any, documents: tuple[Document, ...]) -> None:
                got[name].append((edit, [d.uri for d in documents]))
                await trio.lowlevel.checkpoint()
                if name == "three":
                    raise ToolError(ErrorKind.STALE_EDIT, "refused by its handler")

            return on_edit

        captures: dict[str, Any] = {}

        async def run(name: str, command: str) -> None:
            captures[name] = await server.execute_command(command, [_edit(name)], handler(name))

        async with trio.open_nursery() as nursery:  # concurrent: each still gets its own
            nursery.start_soon(run, "one", "edit")
            nursery.start_soon(run, "two", "answer-then-edit")
            nursery.start_soon(run, "three", "edit")
    assert got["one"] == [(structure(_edit("one"), lsp.WorkspaceEdit), [doc.as_uri()])]
    assert got["two"] == [(structure(_edit("two"), lsp.WorkspaceEdit), [doc.as_uri()])]
    assert {name: c.applied for name, c in captures.items()} == {"one": 1, "two": 1, "three": 0}
    assert [e.message for e in captures["three"].refused] == ["refused by its handler"]
    answers = [m["result"] for m in logged(log) if "method" not in m and "result" in m]
    assert {"applied": False, "failureReason": "refused by its handler"} in answers
    # one command at a time: each edit request answered before the next command is sent
    order = [m.get("method") or "answer" for m in logged(log)]
    commands = [i for i, m in enumerate(order) if m == "workspace/executeCommand"]
    assert all("answer" in order[a:b] for a, b in itertools.pairwise(commands))


async def test_sync_and_requests_on_one_document_are_ordered(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        server = await _server(manager)

        async def change_then_ask(i: int) -> None:
            for _ in range(i % 3):
                await trio.lowlevel.checkpoint()
            synced = server.sync(doc, "fake", f"text {i}\n".encode())
            position = {"line": synced.version, "character": i}
            params = {"textDocument": {"uri": synced.uri}, "position": position}
            answer = await server.request("textDocument/hover", params)
            assert answer["range"]["start"] == position

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(change_then_ask, i)
    seen = 0  # the last version the server was sent before each request
    asked = 0
    for message in logged(log):
        params = message.get("params") or {}
        if message.get("method") in ("textDocument/didOpen", "textDocument/didChange"):
            assert params["textDocument"]["version"] > seen
            seen = params["textDocument"]["version"]
        if message.get("method") == "textDocument/hover":
            asked += 1
            assert params["position"]["line"] <= seen  # built for a version it already has
    assert asked == 20


async def test_a_cancelled_command_reaches_the_server(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        server = await _server(manager)

        async def on_edit(edit: Any, documents: tuple[Document, ...]) -> None:
            raise AssertionError("a command that hangs asks for no edit")

        with trio.move_on_after(60) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(server.execute_command, "hang", [], on_edit)
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        # still usable: the lane took the next command
        capture = await server.execute_command("edit", [_edit("after")], _noop)
        assert capture.applied == 1
    messages = logged(log)
    hung = next(m["id"] for m in messages if (m.get("params") or {}).get("command") == "hang")
    cancels = [m for m in messages if m.get("method") == "$/cancelRequest"]
    assert cancels == [{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": hung}}]


async def _noop(edit: Any, documents: tuple[Document, ...]) -> None:
    await trio.lowlevel.checkpoint()


async def test_a_crash_during_a_command_fails_it_clearly_and_restarts(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.01)
    async with running(tmp_path, fake_config({"fake": fake_server("ok")})) as (manager, _):
        server = await _server(manager)
        pid = server.pid
        with pytest.raises(ToolError) as info:
            await server.execute_command("edit-then-crash", [_edit("x")], _noop)
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert "stopped while running its command 'edit-then-crash'" in info.value.message
        applied = info.value.details["applied"]  # the edit may have been handled in time
        assert ("1 edit(s) it asked for were written" if applied else "nothing it asked") in (
            info.value.message
        )
        assert "It restarts by itself" in info.value.message
        capture = await server.execute_command("edit", [_edit("again")], _noop)
        assert capture.applied == 1 and server.pid != pid and server.restarts == 1


async def test_an_exclusive_command_runs_to_its_end_when_its_caller_leaves(tmp_path: Path) -> None:
    """A method the server runs one at a time (`exclusive_methods`) waits for its turn in
    its caller's task; once sent it is never cancelled: a caller who leaves leaves it
    running (its edits still captured) and the next waits for it; a caller who leaves
    before its turn is never sent."""
    log = tmp_path / "log"
    config = msgspec.structs.replace(
        fake_server("ok", log), exclusive_methods=["workspace/executeCommand"]
    )
    gate = trio.Event()
    got: list[str] = []

    def handler(name: str) -> Any:
        async def on_edit(edit: Any, documents: tuple[Document, ...]) -> None:
            if name == "one":
                await gate.wait()
            got.append(name)

        return on_edit

    async with running(tmp_path, fake_config({"fake": config})) as (manager, _):
        server = await _server(manager)
        captures: list[Any] = []

        async def run(name: str) -> None:
            captures.append(await server.execute_command("edit", [_edit(name)], handler(name)))

        scopes: dict[str, trio.CancelScope] = {}

        async def leaving(name: str) -> None:
            with trio.CancelScope() as scopes[name]:
                await run(name)

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(leaving, "one")
                await trio.testing.wait_all_tasks_blocked()  # sent; its edit waits
                nursery.start_soon(leaving, "two")
                await trio.testing.wait_all_tasks_blocked()  # waits for its turn
                nursery.start_soon(run, "three")
                await trio.testing.wait_all_tasks_blocked()
                scopes["one"].cancel()  # leaves once sent: "one" runs on, "three" waits
                scopes["two"].cancel()  # leaves before its turn: never sent
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
    [capture] = captures  # the callers who left got no result
    assert got == ["one", "three"] and capture.applied == 1  # "two" left before its turn
    messages = logged(log)
    order = [
        (m.get("params") or {}).get("arguments", [{}])[0] if m.get("method") else "answer"
        for m in messages
        if m.get("method") == "workspace/executeCommand" or "applied" in (m.get("result") or {})
    ]
    assert order == [_edit("one"), "answer", _edit("three"), "answer"]
    assert not [m for m in messages if m.get("method") == "$/cancelRequest"]


async def test_fresh_diagnostics_answer_for_the_content_given(tmp_path: Path, doc: Path) -> None:
    async with running(tmp_path, fake_config({"fake": fake_server("ok")})) as (manager, _):
        server = await _server(manager)
        first, items = await server.fresh_diagnostics(doc, "fake", b"good\nbad\n", 5.0)
        assert items is not None and [d.message for d in items] == ["bad line 2"]
        second, items = await server.fresh_diagnostics(doc, "fake", b"bad\n", 5.0)
        assert items is not None and [d.message for d in items] == ["bad line 1"]
        assert second.version == first.version + 1 and first.text == "good\nbad\n"  # snapshots
        assert server.document(doc.as_uri()) is second
        assert server.open_documents() == (second,)


async def test_concurrent_flushes_send_each_change_once(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        await manager.diagnostics(doc)  # opens it
        doc.write_text("bad\n")
        manager.files_changed([doc])
        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(manager.flush)
        found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 1"]
    changes = [m for m in logged(log) if m.get("method") == "textDocument/didChange"]
    assert [c["params"]["contentChanges"][0]["text"] for c in changes] == ["bad\n"]
