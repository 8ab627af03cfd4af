"""Faults, with the scripted fake server: each gives a clear error and the session goes on."""

from __future__ import annotations

import fcntl
import functools
import logging
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig, LspConfig, ServerConfig
from codeward.daemon.lsp import server_offers, supervisor
from codeward.daemon.lsp.defaults import command_available
from codeward.daemon.lsp.process import STDOUT_PIPE_BYTES, ServerProcess
from codeward.daemon.lsp.service import Answer, LanguageService
from codeward.daemon.lsp.watched_tree import CHANGED, CREATED, DELETED
from codeward.daemon.process_groups import group_members, wait_group_gone
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import fake_config, fake_server, logged, methods, running


def hover_params(ctx):  # type: ignore[no-untyped-def]
    return {"textDocument": ctx.text_document, "position": ctx.position(1, 1)}


async def hover(manager: LanguageService, path: Path, **kwargs):  # type: ignore[no-untyped-def]
    return await manager.request(
        path, "textDocument/hover", hover_params, wait_ready=False, **kwargs
    )


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "a.fake"
    path.write_text("good\nbad line\n")
    return path


async def test_hover_and_push_diagnostics(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        answer = await hover(manager, doc)
        assert answer.server == "fake" and answer.result["contents"]["value"] == "hover"
        found = await manager.diagnostics(doc)
        assert [(d.line, d.message) for d in found.diagnostics] == [(2, "bad line 2")]
        assert not found.partial
        # Edited on disk between two calls: the second sees the new content only.
        doc.write_text("bad\ngood\n")
        found = await manager.diagnostics(doc)
        assert [(d.line, d.message) for d in found.diagnostics] == [(1, "bad line 1")]
        assert found.content_hash.startswith("sha256:")
    assert methods(log)[:3] == ["initialize", "initialized", "workspace/didChangeConfiguration"]
    assert methods(log)[-2:] == ["shutdown", "exit"]
    change = [m for m in logged(log) if m.get("method") == "textDocument/didChange"][-1]
    assert change["params"]["contentChanges"] == [{"text": "bad\ngood\n"}]


async def test_crash_at_start_is_reported_and_others_keep_working(
    tmp_path: Path, doc: Path
) -> None:
    servers = {"broken": fake_server("crash-at-start"), "fake": fake_server("ok")}
    async with running(tmp_path, fake_config(servers)) as (manager, _):
        with pytest.raises(ToolError) as info:
            await manager.pool.server_for("broken").connection()
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert "could not start" in info.value.message and "code 3" in info.value.message
        # Diagnostics merge: the broken server is named, the working one answers.
        found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
        assert found.partial and [e.details["server"] for e in found.errors] == ["broken"]
        status = {s["name"]: s for s in manager.status()}
        # Its stderr, paths outside the root scrubbed.
        assert status["broken"]["stderr"] == ["fake: cannot start: <path> is missing"]
        assert status["fake"]["state"] == "running" and status["fake"]["pid"] > 0


async def test_crash_mid_request_fails_at_once_and_restarts(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.01)
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("crash-on-hover", log)})) as (
        manager,
        _,
    ):
        with trio.fail_after(5), pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert "stopped during textDocument/hover" in info.value.message
        # It comes back by itself, with its documents open again.
        server = manager.pool.servers["fake"]
        with trio.fail_after(5):
            await server.connection()
            found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
        assert server.restarts == 1
    assert methods(log).count("initialize") == 2
    assert methods(log).count("textDocument/didOpen") == 2


async def test_no_answer_to_initialize_is_killed_and_reported(tmp_path: Path, doc: Path) -> None:
    config = fake_config({"fake": fake_server("no-initialize")}, initialize_timeout=0.5)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert "did not answer initialize within 0.5 s" in info.value.message
        assert manager.pool.servers["fake"].state.value in ("restarting", "starting")


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("garbage", "not LSP"),
        ("huge", "limit"),
        ("close-stdout", "stdout closed"),
    ],
)
async def test_broken_output_fails_the_request_and_the_server_restarts(
    tmp_path: Path, doc: Path, mode: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.01)
    config = msgspec.structs.replace(
        fake_config({"fake": fake_server(mode)}), daemon=DaemonConfig(max_message_bytes=1 << 20)
    )
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_ERROR and words in info.value.message
        with trio.fail_after(5):
            found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
        assert manager.pool.servers["fake"].restarts == 1


async def test_a_large_answer_that_is_not_json_fails_that_request_alone(
    tmp_path: Path, doc: Path
) -> None:
    """A large answer is taken by its head (`protocol.messages`): one that is not JSON
    fails where it is read, that request alone; the server goes on, not restarted."""
    config = fake_config({"fake": fake_server("huge-broken")})
    async with running(tmp_path, config) as (manager, _):
        for _ in range(2):
            with trio.fail_after(5), pytest.raises(ToolError) as info:
                await hover(manager, doc)
            assert info.value.kind is ErrorKind.LSP_ERROR
            assert "does not have the LSP shape" in info.value.message
        with trio.fail_after(5):
            found = await manager.diagnostics(doc)
        assert [d.message for d in found.diagnostics] == ["bad line 2"]
        assert manager.pool.servers["fake"].restarts == 0


async def test_timeout_and_cancellation_send_cancel_request(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    config = fake_config(
        {"fake": fake_server("silent-hover", log)}, method_timeouts={"textDocument/hover": 0.2}
    )
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5), pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.TIMEOUT and "0.2 s" in info.value.message
        with trio.move_on_after(0.2) as scope:
            await hover(manager, doc, timeout=30)
        assert scope.cancelled_caught
        await manager.diagnostics(doc)  # still answers; and flushes the cancel to the log
    cancels = [m["params"]["id"] for m in logged(log) if m.get("method") == "$/cancelRequest"]
    hovers = [m["id"] for m in logged(log) if m.get("method") == "textDocument/hover"]
    assert cancels == hovers and len(cancels) == 2


async def test_server_requests_are_answered(
    tmp_path: Path, doc: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "log"
    caplog.set_level(logging.DEBUG, logger="codeward.lsp")
    async with running(tmp_path, fake_config({"fake": fake_server("server-requests", log)})) as (
        manager,
        progress,
    ):
        server = manager.pool.servers.get("fake") or manager.pool.server_for("fake")
        await server.connection()
        await manager.diagnostics(doc)  # a round trip after the server's requests
        with trio.fail_after(5):
            await server.wait_for(
                lambda: server.capabilities.supports("textDocument/formatting"), 5
            )
    answers = {m["id"]: m for m in logged(log) if "method" not in m}  # all read by shutdown
    assert answers[1001]["error"]["code"] == -32601
    assert answers[1002]["result"] == [42, {"fake": {"answer": 42}}]
    assert answers[1003]["result"]["applied"] is False
    assert answers[1004]["result"] is None
    assert answers[1006]["result"] is None
    assert answers[1007]["result"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
    assert answers[1008]["result"] == {"success": False}
    assert answers[1009]["error"]["code"] == -32602  # invalid params
    notices = [p for p in progress if "notice" in p]  # messages for the people, routed apart
    questions = [notices.pop(i) for i in (1, 0) if "question" in notices[i]]
    assert [(p["kind"], p["title"]) for p in progress if "notice" not in p] == [
        ("begin", "Indexing"),
        ("end", "Indexing"),
    ]
    # a message request: logged, offered to the editors (asked, then who declared it: no
    # one here), nothing chosen, and shown to the people as a message
    assert "fake: hello" in caplog.messages
    assert [(q["notice"], q["message"], q["question"].taken) for q in questions] == [
        ("window/showMessageRequest", "hello", False)
    ] * 2
    assert notices == [
        {"server": "fake", "notice": "window/showMessage", "type": 1, "message": "hello"}
    ]


async def test_stop_kills_the_whole_process_group(tmp_path: Path, doc: Path) -> None:
    config = fake_config({"fake": fake_server("ignore-term")}, shutdown_timeout=0.3)
    async with running(tmp_path, config) as (manager, _):
        await hover(manager, doc)
        pgid = manager.pool.servers["fake"].pid
        assert pgid is not None
        assert len(_group(pgid)) == 2  # the server and its child
    assert _group(pgid) == []  # zombies aside (the test process reaps them)


GROUP = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _ in range(3):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("ready", flush=True)
time.sleep(600)
"""


async def test_terminate_returns_once_every_member_is_gone(tmp_path: Path) -> None:
    process = await ServerProcess.spawn("group", [sys.executable, "-c", GROUP], tmp_path, {})
    try:
        output = b""
        with trio.fail_after(10):
            while not output.endswith(b"\n"):
                output += await process.stdout.receive_some(100)
        assert output == b"ready\n"
        assert sorted(group_members(process.pid)) == sorted(_group(process.pid))
        assert len(group_members(process.pid)) == 4  # all ignore SIGTERM
    finally:
        with trio.fail_after(10):
            await process.terminate(0.05)
    # Checked at once: a killed member still waiting to run would show here.
    assert group_members(process.pid) == [] and _group(process.pid) == []
    assert process.returncode == -9
    with trio.fail_after(1):
        await wait_group_gone(process.pid)  # nothing left: at once


def _group(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


async def test_repeated_crashes_fail_until_asked_again(
    tmp_path: Path, doc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_START", 0.001)
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("crash-at-start", log)})) as (
        manager,
        _,
    ):
        server = manager.pool.server_for("fake")
        with pytest.raises(ToolError):
            await server.connection()
        with trio.fail_after(10):
            await server.wait_for(lambda: server.state.value == "failed", 10)
        assert server.restarts == 4
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert "failed 5 times" in info.value.message and "retry in" in info.value.message
        # session/open asks again: the server gets a new chance.
        server.config = fake_server("ok")
        manager.restart_failed()
        with trio.fail_after(5):
            answer = await hover(manager, doc)
        assert answer.result["contents"]["value"] == "hover"


async def test_missing_binary_and_unknown_files(tmp_path: Path, doc: Path) -> None:
    missing = ServerConfig(command=["no-such-server-xyz"], install_hint="pip install xyz")
    async with running(tmp_path, fake_config({"fake": missing})) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        assert "pip install xyz" in info.value.message
        assert manager.status()[0]["state"] == "unavailable"
        with pytest.raises(ToolError) as info:
            await manager.diagnostics(doc)
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        other = tmp_path / "x.unknown"
        other.write_text("")
        with pytest.raises(ToolError) as info:
            await hover(manager, other)
        assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE


async def test_method_no_server_offers(tmp_path: Path, doc: Path) -> None:
    """Not supported is an error naming the servers and the capability, in every form of
    request: never an empty list (nothing found), never `lsp_unavailable` (not installed)."""
    config = fake_config({"one": fake_server("ok"), "two": fake_server("ok")})
    async with running(tmp_path, config) as (manager, _):
        with pytest.raises(ToolError) as info:
            await manager.request(doc, "textDocument/references", hover_params, wait_ready=False)
        assert info.value.kind is ErrorKind.UNSUPPORTED_BY_SERVER
        assert info.value.details["servers"] == ["one", "two"]
        assert info.value.details["capability"] == "referencesProvider"
        assert "one and two do not offer textDocument/references" in info.value.message
        with pytest.raises(ToolError) as info:
            await manager.request_all(doc, "textDocument/codeAction", hover_params)
        assert info.value.kind is ErrorKind.UNSUPPORTED_BY_SERVER
        assert info.value.details["capability"] == "codeActionProvider"
        with pytest.raises(ToolError) as info:
            await manager.workspace_request("workspace/symbol", {"query": ""}, languages=["fake"])
        assert info.value.kind is ErrorKind.UNSUPPORTED_BY_SERVER
        assert info.value.details["method"] == "workspace/symbol"
        # What one of them offers is answered.
        answers, errors = await manager.request_all(doc, "textDocument/hover", hover_params)
        assert [a.server for a in answers] == ["one", "two"] and errors == []


async def test_a_failing_diagnostic_pull_does_not_fail_other_requests(
    tmp_path: Path, doc: Path
) -> None:
    """The wait for a document's analysis pulls its diagnostics; when that pull fails (the
    server's own error), the request it was waiting for is still asked and answered."""
    config = fake_config({"fake": fake_server("failing-pull")})
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(10):
            answer = await manager.request(doc, "textDocument/hover", hover_params)
        assert answer.result["contents"]["value"] == "hover" and not answer.partial
        # get_diagnostics reports the failure as the server's, beside nothing else
        with pytest.raises(ToolError) as info:
            await manager.diagnostics(doc)
        assert info.value.kind is ErrorKind.LSP_ERROR
        assert "textDocument/diagnostic" in info.value.message


async def test_files_changed_and_lru(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    config = fake_config({"fake": fake_server("ok", log)}, max_open_documents=2)
    other = [tmp_path / f"o{i}.fake" for i in range(3)]
    for path in other:
        path.write_text("good\n")
    async with running(tmp_path, config) as (manager, _):
        for path in [doc, *other[:2]]:
            await manager.diagnostics(path)
        assert len(manager.pool.servers["fake"].open_documents()) == 2  # doc was evicted
        doc.write_text("bad\n")  # not open any more: a watched-file event
        other[1].write_text("bad\nbad\n")  # open: didChange
        manager.files_changed([doc, other[1], tmp_path / "gone.fake"])
        await manager.flush()
        found = await manager.diagnostics(other[1])
        assert len(found.diagnostics) == 2
    events = [m for m in logged(log) if m.get("method") == "workspace/didChangeWatchedFiles"]
    assert events[0]["params"]["changes"] == [
        {"uri": doc.as_uri(), "type": 2},
        {"uri": (tmp_path / "gone.fake").as_uri(), "type": 3},
    ]
    closes = [
        m["params"]["textDocument"]["uri"]
        for m in logged(log)
        if m.get("method") == "textDocument/didClose"
    ]
    assert closes == [doc.as_uri()]


async def test_a_new_file_written_after_its_creation_is_told_as_created(
    tmp_path: Path, doc: Path
) -> None:
    """inotify reports a new file's writes after its creation (and a new folder's walk finds
    its files before their writes): the servers hear of one creation, never a change, as
    basedpyright reads the folders again for imports only on a creation or deletion."""
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)})) as (manager, _):
        await manager.diagnostics(doc)
        new, gone, again = (tmp_path / f"{name}.fake" for name in ("new", "gone", "again"))
        new.write_text("good\n")
        again.write_text("good\n")
        manager.events.on_watch([(new, CREATED), (gone, CREATED), (again, DELETED)])
        manager.events.on_watch([(new, CHANGED), (gone, DELETED), (again, CREATED)])
        manager.files_changed([new, again])  # an edit of codeward's, after the watcher's
        await manager.flush()
    events = [m for m in logged(log) if m.get("method") == "workspace/didChangeWatchedFiles"]
    assert [e["params"]["changes"] for e in events] == [
        [
            {"uri": new.as_uri(), "type": CREATED},
            {"uri": gone.as_uri(), "type": DELETED},
            {"uri": again.as_uri(), "type": CREATED},
        ]
    ]


async def test_a_project_question_waits_until_new_files_are_taken_in(
    tmp_path: Path, doc: Path
) -> None:
    """A server that takes in new files only after a quiet moment (basedpyright): after a
    creation, a question about the whole project waits until it was sent nothing for
    `quiet_after_new_files`; the next one does not, nor one after a mere change."""
    quiet = 0.4
    server = msgspec.structs.replace(fake_server("ok"), quiet_after_new_files=quiet)
    async with running(tmp_path, fake_config({"fake": server})) as (manager, _):
        await manager.diagnostics(doc)
        actor = manager.pool.servers["fake"]
        (tmp_path / "new.fake").write_text("good\n")
        manager.files_changed([tmp_path / "new.fake"], [tmp_path / "new.fake"])
        told = trio.current_time()
        await manager.flush()
        await manager.diagnostics(doc)  # a file's question: at once
        await actor.request("workspace/symbol", {"query": "x"})
        assert trio.current_time() >= told + quiet
        again = trio.current_time()
        await actor.request("workspace/symbol", {"query": "x"})
        asked_again = trio.current_time() - again
        manager.files_changed([doc])  # a change, not a creation: nothing waits
        await manager.flush()
        started = trio.current_time()
        await actor.request("workspace/symbol", {"query": "x"})
        after_change = trio.current_time() - started
    assert asked_again < quiet and after_change < quiet


async def test_watcher_reports_changes_on_disk(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    (tmp_path / "node_modules").mkdir()
    async with running(tmp_path, fake_config({"fake": fake_server("ok", log)}), watch=True) as (
        manager,
        _,
    ):
        await manager.diagnostics(doc)
        (tmp_path / "node_modules" / "skip.fake").write_text("x")
        (tmp_path / "new.fake").write_text("bad\n")
        with trio.fail_after(10):
            while not any(
                m.get("method") == "workspace/didChangeWatchedFiles" for m in logged(log)
            ):
                await trio.sleep(0.05)  # polling a file another process writes
    event = next(m for m in logged(log) if m.get("method") == "workspace/didChangeWatchedFiles")
    uris = [c["uri"] for c in event["params"]["changes"]]
    assert (tmp_path / "new.fake").as_uri() in uris
    assert not any("node_modules" in u for u in uris)


async def test_request_all_merges_and_workspace_requests(tmp_path: Path, doc: Path) -> None:
    servers = {
        "one": fake_server("ok"),
        "two": fake_server("ok"),
        "gone": fake_server("crash-at-start"),
    }
    async with running(tmp_path, fake_config(servers)) as (manager, _):
        answers, errors = await manager.request_all(doc, "textDocument/hover", hover_params)
        assert [a.server for a in answers] == ["one", "two"]
        assert [e.details["server"] for e in errors] == ["gone"]
        uri = doc.as_uri()
        assert answers[0].span(uri, answers[0].result["range"]) == (1, 1, 1, 1)
        assert manager.relative(uri) == "a.fake" and manager.source_line(uri, 2) == "bad line"
        assert manager.relative("file:///etc/passwd") is None
        with pytest.raises(ToolError) as info:
            await manager.workspace_request("workspace/symbol", {"query": "x"}, languages=["fake"])
        assert info.value.details["server"] == "gone"


async def test_a_servers_edit_outside_a_command_is_refused(tmp_path: Path, doc: Path) -> None:
    log = tmp_path / "log"
    async with running(tmp_path, fake_config({"fake": fake_server("server-requests", log)})) as (
        manager,
        _,
    ):
        await manager.diagnostics(doc)
    answers = {m["id"]: m for m in logged(log) if "method" not in m}
    assert answers[1003]["result"] == {
        "applied": False,
        "failureReason": "codeward applies a server's edits only during its commands",
    }


async def test_missing_servers_are_named_together_in_routing_order(
    tmp_path: Path, doc: Path
) -> None:
    servers = {
        name: ServerConfig(command=[f"/nonexistent/{name}"], install_hint=f"pip install {name}")
        for name in ("zeta", "alpha")
    }
    config = fake_config(servers, order=["zeta", "alpha"])
    expected = (
        "The zeta and alpha language servers are not installed; pip install zeta; "
        "pip install alpha."
    )
    async with running(tmp_path, config) as (manager, _):
        for attempt in range(4):  # concurrent asks once answered in any order
            for ask in (
                lambda: hover(manager, doc),
                lambda: manager.diagnostics(doc),
                lambda: manager.request_all(doc, "textDocument/hover", hover_params),
                lambda: manager.workspace_diagnostics(["fake"]),
            ):
                with pytest.raises(ToolError) as info:
                    await ask()
                assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
                assert info.value.message == expected, attempt
                assert info.value.details["servers"] == ["zeta", "alpha"]
    servers["alpha"] = fake_server("ok")  # one present: it answers, the other is named
    async with running(tmp_path, fake_config(servers, order=["zeta", "alpha"])) as (manager, _):
        found = await manager.diagnostics(doc)
        assert found.partial and [e.details["server"] for e in found.errors] == ["zeta"]
        assert [d.message for d in found.diagnostics] == ["bad line 2"]


@pytest.mark.parametrize("restricted", [False, True])
async def test_elixir_servers_are_named_in_routing_order(tmp_path: Path, restricted: bool) -> None:
    """The built-in Elixir servers (neither installed here; neither starts in an untrusted
    root): every request names both, elixir-ls then lexical, whichever way it asks."""
    source = tmp_path / "a.ex"
    source.write_text("defmodule A do\nend\n")
    config = Config(lsp=LspConfig(initialize_timeout=5.0))
    assert config.languages == {} and not command_available(["elixir-ls"])
    manager = LanguageService(tmp_path, config, lambda _: None, restricted=restricted)
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(manager.run, watch=False))
        for _ in range(3):  # concurrent asks once answered in any order
            for ask in (
                lambda: hover(manager, source),
                lambda: manager.diagnostics(source),
                lambda: manager.request_all(source, "textDocument/hover", hover_params),
                lambda: manager.workspace_diagnostics(["elixir"]),
                lambda: manager.workspace_request("workspace/symbol", {}, languages=["elixir"]),
            ):
                with pytest.raises(ToolError) as info:
                    await ask()
                assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
                assert info.value.details["servers"] == ["elixir-ls", "lexical"]
                assert "The elixir-ls and lexical language servers" in info.value.message
                if restricted:
                    assert info.value.details["restricted"] is True
                    assert "untrusted root" in info.value.message
                else:
                    assert info.value.message.index("ElixirLS") < info.value.message.index(
                        "Lexical"
                    )
        nursery.cancel_scope.cancel()


PYTHON = sys.executable


def _late_server(path: Path) -> None:
    """Install (as pip would) a program that runs the fake server."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexec {PYTHON} {fake_server('ok').command[1]} ok\n")
    path.chmod(0o755)


async def test_a_server_installed_later_is_looked_for_at_most_once_a_second(
    tmp_path: Path, doc: Path, mock_clock: trio.testing.MockClock
) -> None:
    program = tmp_path / "bin" / "late-server"
    config = fake_config({"fake": ServerConfig(command=[str(program)], install_hint="get it")})
    async with running(tmp_path, config) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        _late_server(program)
        mock_clock.jump(0.5)
        with pytest.raises(ToolError):  # looked for less than a second ago: not again yet
            await hover(manager, doc)
        assert manager.status()[0]["state"] == "unavailable"
        mock_clock.jump(0.6)
        answer = await hover(manager, doc)  # the next request that needs it finds it
        assert answer.result["contents"]["value"] == "hover"
        assert manager.status()[0]["state"] == "running"


async def test_a_default_server_installed_beside_the_daemon_is_found(
    tmp_path: Path, doc: Path, mock_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pip install ruff` into the daemon's environment after its session started: the
    default command is resolved again (it was the bare name, not on PATH)."""
    venv_bin = tmp_path / "venv" / "bin"
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    config = fake_config({}, order=["ruff"])
    async with running(tmp_path, config) as (manager, _):
        with pytest.raises(ToolError) as info:
            await hover(manager, doc)
        assert info.value.message == (
            "The ruff language server is not installed; run `codeward servers install ruff`."
        )
        _late_server(venv_bin / "ruff")  # `ruff server` runs the fake one: hover answers
        mock_clock.jump(1.0)
        answer = await hover(manager, doc)
        assert answer.server == "ruff" and answer.result["contents"]["value"] == "hover"


@pytest.mark.parametrize("expected", [True, False])
async def test_a_registration_the_config_expects_is_awaited_past_the_short_grace(
    tmp_path: Path, doc: Path, mock_clock: trio.testing.MockClock, expected: bool
) -> None:
    """basedpyright registers pull diagnostics only after a settings round trip, which a
    loaded machine stretches past the short grace: a server whose config names the
    method is waited for (up to `lsp.ready_timeout`), any other gets the short grace."""
    late = fake_server("late-register")
    late.registers = ["textDocument/diagnostic"] if expected else []
    async with running(tmp_path, fake_config({"fake": late})) as (manager, _):
        server = manager.pool.server_for("fake")
        await server.connection()
        answers: list[bool] = []
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                answers.append(await server.offers("workspace/diagnostic"))

            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(server_offers.REGISTRATION_GRACE + 1)
            await trio.testing.wait_all_tasks_blocked()
            await hover(manager, doc)  # the fake registers before it answers
        assert answers == [expected]
        assert server.capabilities.supports("workspace/diagnostic")


async def test_a_servers_stdout_pipe_holds_a_big_reply(tmp_path: Path) -> None:
    """The server's stdout pipe is enlarged, so a reply of thousands of locations is written
    at once; its stdin keeps the system's default."""
    process = await ServerProcess.spawn("cat", ["cat"], tmp_path, {})
    try:
        stdout, stdin = process.stdout, process.stdin
        assert isinstance(stdout, trio.lowlevel.FdStream)
        assert isinstance(stdin, trio.lowlevel.FdStream)
        assert fcntl.fcntl(stdout.fileno(), fcntl.F_GETPIPE_SZ) == STDOUT_PIPE_BYTES
        assert fcntl.fcntl(stdin.fileno(), fcntl.F_GETPIPE_SZ) < STDOUT_PIPE_BYTES
        await stdin.send_all(b"x" * 100_000)  # echoed back: 100 KB
        echoed = b""
        with trio.fail_after(10):
            while len(echoed) < 100_000:
                echoed += await stdout.receive_some(1 << 16)
        assert echoed == b"x" * 100_000
    finally:
        with trio.fail_after(10):
            await process.terminate(1)


def definition_params(ctx):  # type: ignore[no-untyped-def]
    return {"textDocument": ctx.text_document, "position": ctx.position(1, 1)}


HOVER_AND_DEFINITION = [
    ("textDocument/hover", hover_params, Any),
    ("textDocument/definition", definition_params, Any),
]


@pytest.mark.parametrize("exclusive", [False, True])
async def test_requests_together_not_awaited_once_the_first_is_enough(
    tmp_path: Path, doc: Path, exclusive: bool
) -> None:
    """`request_together(..., enough=)`: once the first answer is enough, the definition sent
    with it is given up on (`$/cancelRequest`); one the server runs one at a time is not
    even sent. Its place holds a `cancelled` error; without `enough`, it is awaited."""
    log = tmp_path / "log"
    server = fake_server("silent-definition", log)
    if exclusive:
        server = msgspec.structs.replace(server, exclusive_methods=["textDocument/definition"])
    config = fake_config({"fake": server}, request_timeout=0.3)
    async with running(tmp_path, config) as (manager, _):
        with trio.fail_after(5):
            hovered, definition = await manager.request_together(
                doc, HOVER_AND_DEFINITION, wait_ready=False, enough=lambda result: True
            )
            assert isinstance(hovered, Answer) and "pkg.sub" in hovered.result["contents"]["value"]
            assert isinstance(definition, ToolError) and definition.kind is ErrorKind.CANCELLED
            _, waited = await manager.request_together(
                doc, HOVER_AND_DEFINITION, wait_ready=False, enough=lambda result: False
            )
            assert isinstance(waited, ToolError) and waited.kind is ErrorKind.TIMEOUT
    definitions = [m["id"] for m in logged(log) if m.get("method") == "textDocument/definition"]
    cancels = [m["params"]["id"] for m in logged(log) if m.get("method") == "$/cancelRequest"]
    if exclusive:  # one at a time: the first never sent, the second not cancelled (shielded)
        assert len(definitions) == 1
    else:
        assert len(definitions) == 2 and cancels == definitions


async def test_requests_together_to_two_servers_not_awaited(tmp_path: Path, doc: Path) -> None:
    """The definition routed to another server than the hover's is asked beside it; once the
    hover is enough, that request is cancelled and its place holds a `cancelled` error."""
    log = tmp_path / "log"
    servers = {"hover": fake_server("ok"), "definition": fake_server("silent-definition", log)}
    async with running(tmp_path, fake_config(servers)) as (manager, _):
        with trio.fail_after(5):
            hovered, definition = await manager.request_together(
                doc, HOVER_AND_DEFINITION, wait_ready=False, enough=lambda result: True
            )
        assert isinstance(hovered, Answer) and hovered.server == "hover"
        assert isinstance(definition, ToolError) and definition.kind is ErrorKind.CANCELLED
    # (read once the servers stopped: each logged everything before its shutdown)
    definitions = [m["id"] for m in logged(log) if m.get("method") == "textDocument/definition"]
    cancels = [m["params"]["id"] for m in logged(log) if m.get("method") == "$/cancelRequest"]
    assert len(definitions) <= 1 and cancels == definitions
