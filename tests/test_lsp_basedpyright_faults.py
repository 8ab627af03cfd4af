"""Faults on the real basedpyright: a cancelled references request must not break references
for the root, a hung (SIGSTOPped) server must answer again after SIGCONT, and a missing
server is named, not hidden behind ruff's answer."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, LspConfig, ServerConfig
from codeward.daemon.lsp.server import ServerState
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.protocol.messages import Incoming
from tests.lsp_support import needs, running

pytestmark = needs("basedpyright", "ruff")

REFERENCES = "textDocument/references"
CREATE = "window/workDoneProgress/create"


def project(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    root.mkdir()
    (root / "a.py").write_text("def foo() -> int:\n    return 1\n\n\nfoo()\nfoo()\n")
    (root / "b.py").write_text("from a import foo\n\nfoo()\n")
    return root


def references_params(ctx: DocumentContext) -> dict[str, Any]:
    return {
        "textDocument": ctx.text_document,
        "position": ctx.position(1, 5),
        "context": {"includeDeclaration": True},
    }


async def references(manager: LanguageService, root: Path, **kwargs: Any) -> int:
    answer = await manager.request(root / "a.py", REFERENCES, references_params, **kwargs)
    return len(answer.result)


def without_ruff() -> Config:
    """The default servers, ruff's program gone."""
    return Config(
        lsp=LspConfig(check_interval=0.2),
        servers={"ruff": ServerConfig(command=["no-such-ruff-xyz", "server"])},
    )


async def test_cancelled_references_do_not_break_basedpyright(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with running(root, without_ruff()) as (manager, _):
        with trio.fail_after(60):
            assert await references(manager, root) == 5
        server = manager.pool.servers["basedpyright"]
        conn = await server.connection()
        answer = conn._on_request  # pyright: ignore[reportPrivateUsage]
        scope = trio.CancelScope()

        # 1. The caller goes away at the worst moment: while basedpyright waits for the
        # answer to its progress token. A `$/cancelRequest` then would break it for good.
        def cancel_then_answer(method: str, message: Incoming) -> Any:
            if method == CREATE:
                scope.cancel()
            return answer(method, message)

        conn._on_request = cancel_then_answer  # pyright: ignore[reportPrivateUsage]
        with scope:
            await references(manager, root)
        assert scope.cancelled_caught
        conn._on_request = answer  # pyright: ignore[reportPrivateUsage]
        with trio.fail_after(30):
            for _ in range(3):
                assert await references(manager, root) == 5
        assert server.restarts == 0  # it never broke

        # 2. Broken anyway (here by a cancel sent behind codeward's back): detected,
        # restarted, and the request retried once: the caller sees the answer.
        def cancel_behind_the_back(method: str, message: Incoming) -> Any:
            if method == CREATE:
                for request_id in list(conn.peer.pending):
                    conn.notify("$/cancelRequest", {"id": request_id})
            return answer(method, message)

        conn._on_request = cancel_behind_the_back  # pyright: ignore[reportPrivateUsage]
        with pytest.raises(ToolError):  # this one was cancelled: basedpyright says so
            await references(manager, root)
        conn._on_request = answer  # pyright: ignore[reportPrivateUsage]
        with trio.fail_after(60):
            assert await references(manager, root) == 5
        assert server.restarts == 1
        status = next(s for s in manager.status() if s["name"] == "basedpyright")
        assert "_token.cancel is not a function" in status["restart_reason"]
        assert str(root) not in status["restart_reason"]

        # basedpyright answers a cancelled workspace pull only when the next pull comes: that
        # open pull is not a request it ignores (it would be restarted for it).
        with trio.fail_after(60):
            result = await manager.workspace_diagnostics(["python"])
        assert [e.details["server"] for e in result.errors] == ["ruff"]
        assert not server.busy and manager.status()[0]["state"] == "running"

        # 3. Hung (SIGSTOP): the request times out; after SIGCONT references work again.
        assert server.pid is not None
        os.kill(server.pid, signal.SIGSTOP)
        try:
            with trio.fail_after(10), pytest.raises(ToolError) as info:
                await references(manager, root, timeout=1.0, wait_ready=False)
            assert info.value.kind is ErrorKind.TIMEOUT
            assert manager.status()[0]["state"] == "unresponsive"
        finally:
            os.kill(server.pid, signal.SIGCONT)
        with trio.fail_after(30):
            for _ in range(3):
                assert await references(manager, root) == 5
        assert server.restarts == 1 and server.state is ServerState.RUNNING

        # 4. ruff's command (the config's) is not there: formatting names ruff and its entry.
        with pytest.raises(ToolError) as info:
            await manager.request(
                root / "a.py",
                "textDocument/formatting",
                lambda ctx: {"textDocument": ctx.text_document, "options": {"tabSize": 4}},
                wait_ready=False,
            )
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        assert info.value.details["server"] == "ruff"
        assert "(servers.ruff.command = `no-such-ruff-xyz server`): no program" in (
            info.value.message
        )


async def test_a_missing_basedpyright_is_named_not_hidden_behind_ruff(tmp_path: Path) -> None:
    root = project(tmp_path)
    wrong = ServerConfig(command=[str(tmp_path / "bin" / "basedpyright-langserver"), "--stdio"])
    config = msgspec.structs.replace(Config(), servers={"basedpyright": wrong})
    async with running(root, config) as (manager, _):
        with trio.fail_after(30), pytest.raises(ToolError) as info:
            await manager.request(
                root / "a.py",
                "textDocument/hover",
                lambda ctx: {"textDocument": ctx.text_document, "position": ctx.position(1, 5)},
            )
        assert info.value.kind is ErrorKind.LSP_UNAVAILABLE
        assert info.value.details["server"] == "basedpyright"
        assert info.value.message == (  # the entry named: installing would not change it
            "The basedpyright language server is not installed where its command in the "
            "config says (servers.basedpyright.command = `basedpyright-langserver --stdio`): "
            "no program "
            "'basedpyright-langserver'; fix servers.basedpyright.command in the config."
        )
        # Diagnostics still merge what ruff says, and name basedpyright among the errors.
        with trio.fail_after(30):
            found = await manager.diagnostics(root / "a.py")
        assert [e.details["server"] for e in found.errors] == ["basedpyright"]
        assert found.partial
