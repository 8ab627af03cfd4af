"""A server started early is sent its `initialize` at once; the session that takes it adopts
the answer when it would have sent the same params, and starts its own process otherwise.

The shipped client capabilities are what `initialize.client_capabilities()` builds: after a
change there, write them again with `python -m tests.test_early_initialize`."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from codeward.daemon.config import Config, ServerConfig
from codeward.daemon.lsp import (
    early,
    early_conversation,
    early_initialize,
    early_process,
    initialize,
)
from codeward.daemon.lsp.connection import LspConnection
from codeward.daemon.lsp.early_initialize import CAPABILITIES
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.trust import TrustStore
from codeward.protocol.errors import ToolError
from tests.lsp_support import fake_config, fake_server, logged, methods, needs, running

MAIN = "import os\n\nprint(os.getcwd())\n"


def write_capabilities() -> None:
    """Write the client capabilities `initialize.initialize_params` sends as the data
    `early_initialize` ships."""
    params = initialize.initialize_params([Path("/")])
    data = msgspec.json.decode(msgspec.json.encode(params["capabilities"]))
    CAPABILITIES.write_text(json.dumps(data, indent=2) + "\n")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A trusted root (as its session and the early start see it) with a fake file."""
    path = Path(os.path.realpath(tmp_path)) / "proj ect"
    path.mkdir()
    (path / "a.fake").write_text("good\n")
    TrustStore().set(path, True)
    return path


def fake(mode: str, log: Path, init_options: Any = None) -> Config:
    server = msgspec.structs.replace(fake_server(mode, log), init_options=init_options)
    return fake_config({"fake": server})


@asynccontextmanager
async def offered(root: Path, config: Config) -> AsyncIterator[list[early.Spawned]]:
    """The root's servers started early (and sent initialize), offered to the sessions
    while inside; those not taken are stopped on exit."""
    spawned = early.spawn(root, config)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(early_process.keep, spawned, 600.0)
        await trio.testing.wait_all_tasks_blocked()  # offered
        yield spawned
        nursery.cancel_scope.cancel()


def waiting(one: early.Spawned) -> early_process.EarlyProcess:
    return early_process._waiting[one.key]  # pyright: ignore[reportPrivateUsage]


async def answered(one: early.Spawned) -> None:
    """Wait until the process offered answered its initialize (and was sent `initialized`
    if it accepted it), before any session took it."""
    with trio.fail_after(60):
        await waiting(one).conversation.answered.wait()


async def hover(manager: LanguageService, path: Path, line: int = 1, character: int = 1) -> Any:
    def params(ctx: Any) -> dict[str, Any]:
        return {"textDocument": ctx.text_document, "position": ctx.position(line, character)}

    return await manager.request(path, "textDocument/hover", params, wait_ready=False)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(
    ("roots", "options"),
    [
        (["/w/a"], None),
        (["/w/proj ect", "/w/été/b"], {"settings": {"x": [1, None, "é"]}, "on": True}),
        (["/"], {}),
    ],
)
def test_the_early_params_are_those_the_session_builds(roots: list[str], options: Any) -> None:
    """The params `early_initialize` builds without lsprotocol, shipped capabilities
    included, equal those of `initialize.initialize_params` once normalised (regenerate
    the capabilities with `python -m tests.test_early_initialize` when this fails)."""
    paths = [Path(r) for r in roots]
    built = early_initialize.normalised(initialize.initialize_params(paths, options))
    shipped = early_initialize.normalised(early_initialize.initialize_params(paths, options))
    assert shipped["capabilities"] == built["capabilities"]
    assert shipped == built
    assert early_initialize.differences(shipped, built) == []


def test_a_server_of_more_folders_or_other_options_is_told_apart() -> None:
    """What makes a session's params differ from those sent early for its root: a second
    folder (a repository's roots sharing the server), other options."""
    root, other = Path("/w/a"), Path("/w/b")
    sent = early_initialize.normalised(early_initialize.initialize_params([root], {"x": 1}))
    folders = early_initialize.normalised(initialize.initialize_params([root, other], {"x": 1}))
    options = early_initialize.normalised(initialize.initialize_params([root], {"x": 2}))
    assert early_initialize.differences(sent, folders) == ["workspaceFolders"]
    assert early_initialize.differences(sent, options) == ["initializationOptions"]


async def test_the_session_adopts_the_answer_waiting_for_it(root: Path, tmp_path: Path) -> None:
    """The server answered the initialize it was sent at spawn, and was sent `initialized`
    and its settings, before the session took it: the session reads that answer and sends
    neither again; the server saw one of each; the session's requests are numbered after
    the initialize."""
    log = tmp_path / "fake.log"
    config = fake(log=log, mode="ok", init_options={"early": True})
    handshake = ["initialize", "initialized", "workspace/didChangeConfiguration"]
    async with offered(root, config) as [one]:
        await answered(one)
        assert waiting(one).conversation.initialized
        async with running(root, config) as (manager, _):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            assert manager.pool.servers["fake"].pid == one.popen.pid
    got = methods(log)
    assert got[:3] == handshake and all(got.count(method) == 1 for method in handshake)
    [sent] = [m for m in logged(log) if m.get("method") == "initialize"]
    assert sent["id"] == early_initialize.INITIALIZE_ID
    assert sent["params"]["initializationOptions"] == {"early": True}
    ids = [m["id"] for m in logged(log) if "id" in m and "method" in m]
    assert len(ids) == len(set(ids))  # no request of the session reused the early one's id


@needs("basedpyright")
async def test_basedpyright_started_early_serves_its_session_with_one_initialize(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real basedpyright started early for a Python root and sent its initialize: the
    session takes it, adopts its answer (never sending initialize itself) and hovers."""
    (root / "main.py").write_text(MAIN)
    (root / "a.fake").unlink()
    requested: list[str] = []
    adopted: list[tuple[str, int]] = []
    real_request, real_adopt = LspConnection.request, LspConnection.adopt

    async def request(self: LspConnection, method: str, *args: Any, **kwargs: Any) -> Any:
        requested.append(method)
        return await real_request(self, method, *args, **kwargs)

    async def adopt(self: LspConnection, method: str, request_id: int, **kwargs: Any) -> Any:
        adopted.append((method, request_id))
        return await real_adopt(self, method, request_id, **kwargs)

    monkeypatch.setattr(LspConnection, "request", request)
    monkeypatch.setattr(LspConnection, "adopt", adopt)
    config = Config()
    async with offered(root, config) as [one]:
        await answered(one)
        with trio.fail_after(60):  # it has its settings: it loads the workspace meanwhile
            await waiting(one).conversation.configured.wait()
        async with running(root, config) as (manager, _):
            with trio.fail_after(120):
                answer = await hover(manager, root / "main.py", 3, 10)
            assert "getcwd" in str(answer.result)
            [server] = [s for s in manager.pool.servers.values() if s.pid is not None]
            assert server.pid == one.popen.pid
    assert adopted == [("initialize", early_initialize.INITIALIZE_ID)]
    assert "initialize" not in requested


async def test_other_params_stop_the_early_process_and_start_the_sessions_own(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same command, directory and environment, but the session's initialize params
    differ (its options here): the early process is stopped and reaped, the session starts
    its own, which gets the session's params; the log says why."""
    caplog.set_level(logging.INFO, "codeward.daemon.lsp.early_process")
    log = tmp_path / "fake.log"
    async with offered(root, fake("ok", log, {"from": "early"})) as [one]:
        await answered(one)
        async with running(root, fake("ok", log, {"from": "session"})) as (manager, _):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            assert manager.pool.servers["fake"].pid != one.popen.pid
            assert gone(one.popen.pid)
    sent = [m["params"] for m in logged(log) if m.get("method") == "initialize"]
    assert [p["initializationOptions"] for p in sent] == [{"from": "early"}, {"from": "session"}]
    assert "initializationOptions differ" in caplog.text


async def test_other_settings_sent_stop_the_early_process(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The early process was sent `initialized` and its config's settings; the session's
    settings differ: it is stopped, the session starts its own, which gets them."""
    caplog.set_level(logging.INFO, "codeward.daemon.lsp.early_process")
    log = tmp_path / "fake.log"
    config = fake("ok", log)
    other = msgspec.structs.replace(
        config,
        servers={"fake": msgspec.structs.replace(config.servers["fake"], settings={"b": 1})},
    )
    async with offered(root, config) as [one]:
        await answered(one)
        async with running(root, other) as (manager, _):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            assert manager.pool.servers["fake"].pid != one.popen.pid
            assert gone(one.popen.pid)
    sent = [
        m["params"] for m in logged(log) if m.get("method") == "workspace/didChangeConfiguration"
    ]
    assert sent == [{"settings": {"fake": {"answer": 42}}}, {"settings": {"b": 1}}]
    assert "it was sent other settings" in caplog.text


async def test_an_early_process_gone_before_it_is_taken_is_replaced(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "codeward.daemon.lsp.early_process")
    log = tmp_path / "fake.log"
    config = fake("ok", log)
    async with offered(root, config) as [one]:
        pidfd = os.pidfd_open(one.popen.pid)
        os.killpg(one.popen.pid, signal.SIGKILL)
        with trio.fail_after(10):
            await trio.lowlevel.wait_readable(pidfd)  # it has exited (not reaped yet)
        os.close(pidfd)
        async with running(root, config) as (manager, _):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            assert manager.pool.servers["fake"].pid != one.popen.pid
            assert manager.pool.servers["fake"].restarts == 0  # no crash: never taken
    assert gone(one.popen.pid)
    assert "exited with code -9 before it was taken" in caplog.text


async def test_an_early_initialize_refused_fails_the_start_as_the_sessions_own(
    root: Path, tmp_path: Path
) -> None:
    """The answer waiting for the session is an error: the start fails as when the session
    sends initialize itself (the server's message in the error), the process is stopped."""
    log = tmp_path / "fake.log"
    config = fake("refuse-initialize", log)
    async with offered(root, config) as [one]:
        await answered(one)
        async with running(root, config) as (manager, _):
            with trio.fail_after(30), pytest.raises(ToolError) as info:
                await hover(manager, root / "a.fake")
            assert "refused initialize (fake: no project)" in info.value.message
            assert gone(one.popen.pid)


async def test_a_server_writing_what_is_not_lsp_before_it_is_taken_fails_its_start(
    root: Path,
) -> None:
    """What it wrote is kept for the session's connection, which says it is not LSP."""
    script = (
        "import sys, time; sys.stdout.write('hello\\r\\n\\r\\n'); sys.stdout.flush(); "
        "time.sleep(60)"
    )
    server = ServerConfig(command=[sys.executable, "-c", script], untrusted="run")
    config = fake_config({"fake": server})
    async with offered(root, config) as [one]:
        await answered(one)
        assert not waiting(one).conversation.initialized
        async with running(root, config) as (manager, _):
            with trio.fail_after(30), pytest.raises(ToolError) as info:
                await hover(manager, root / "a.fake")
            assert "not LSP" in info.value.message
            assert gone(one.popen.pid)


async def test_a_failure_while_conversing_early_stops_the_process_not_the_daemon(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the conversation (its answer to workspace/configuration raises here): it is
    logged, the process is not used, the session starts its own."""

    def broken(settings: Any, section: str | None) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(early_conversation, "setting", broken)
    log = tmp_path / "fake.log"
    config = fake("talk-first", log)
    async with offered(root, config) as [one]:
        with trio.fail_after(30):
            await waiting(one).conversation.done.wait()
        assert waiting(one).conversation.failed
        async with running(root, config) as (manager, _):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            assert manager.pool.servers["fake"].pid != one.popen.pid
            assert gone(one.popen.pid)
    assert "the conversation before its session failed" in caplog.text


async def test_what_the_server_says_before_it_is_taken_is_handled(
    root: Path, tmp_path: Path
) -> None:
    """Before any session took it, the server wrote a log message and a request before its
    answer, and at `initialized` asked for its settings (answered at once, from its config)
    and registered definitions: the log message reaches the session, the request is
    answered, the registration counts (read once the session's run is set up)."""
    log = tmp_path / "fake.log"
    config = fake("talk-first", log)
    async with offered(root, config) as [one]:
        await answered(one)
        with trio.fail_after(30):
            await waiting(one).conversation.configured.wait()
        async with running(root, config) as (manager, progress):
            with trio.fail_after(30):
                await hover(manager, root / "a.fake")
            server = manager.pool.servers["fake"]
            assert server.pid == one.popen.pid
            assert server.capabilities.supports("textDocument/definition")
            notices = [p for p in progress if p.get("notice") == "window/logMessage"]
            assert [n["message"] for n in notices] == ["starting"]
    answers = {m["id"]: m for m in logged(log) if "id" in m and "method" not in m}
    assert answers[1001]["result"] == [42, {"fake": {"answer": 42}}]  # its settings
    assert answers["talk-first"] == {"jsonrpc": "2.0", "id": "talk-first", "result": None}
    assert answers[1002] == {"jsonrpc": "2.0", "id": 1002, "result": None}  # registered


def test_a_server_that_cannot_be_sent_initialize_is_not_offered(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write of its initialize fails (EPIPE: it exited at once): the process is
    reaped at once and not offered; its session starts its own."""
    pids: list[int] = []

    def broken(fd: int, data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    real_popen = early.subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        process = real_popen(*args, **kwargs)
        pids.append(process.pid)
        return process

    monkeypatch.setattr(early, "write_now", broken)
    monkeypatch.setattr(early.subprocess, "Popen", popen)
    assert early.spawn(root, fake("ok", tmp_path / "fake.log")) == []
    assert len(pids) == 1 and gone(pids[0])  # killed and reaped


if __name__ == "__main__":
    write_capabilities()
