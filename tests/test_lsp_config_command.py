"""A server whose command the user's config gives: when it is not there, exits at once or
cannot be run, the error names the config entry, the command and the exit status or the
system's reason, never the install command of the built-in server it replaces."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codeward.daemon.config import Config, LanguageConfig, LspConfig, ServerConfig
from codeward.daemon.lsp.service import LanguageService
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import running

EXIT_2 = "import sys; sys.stderr.write('unknown option\\n'); sys.exit(2)"


def python_config(command: list[str]) -> Config:
    """Python files served by basedpyright alone, its command from the user's config."""
    return Config(
        lsp=LspConfig(initialize_timeout=5.0),
        servers={"basedpyright": ServerConfig(command=command)},
        languages={
            "python": LanguageConfig(
                patterns=["*.py"], servers=["basedpyright"], language_id="python"
            )
        },
    )


async def failure(root: Path, command: list[str]) -> ToolError:
    """The error of a hover on a Python file with basedpyright run as `command`."""
    source = root / "a.py"
    source.write_text("x = 1\n")

    def params(ctx):  # type: ignore[no-untyped-def]
        return {"textDocument": ctx.text_document, "position": ctx.position(1, 1)}

    manager: LanguageService
    async with running(root, python_config(command)) as (manager, _):
        with pytest.raises(ToolError) as info:
            await manager.request(source, "textDocument/hover", params, wait_ready=False)
    return info.value


async def test_a_command_that_is_not_there_names_the_entry(tmp_path: Path) -> None:
    error = await failure(tmp_path, ["basedpyright-langserverr", "--stdio"])
    assert error.kind is ErrorKind.LSP_UNAVAILABLE
    assert error.message == (
        "The basedpyright language server is not installed where its command in the config "
        "says (servers.basedpyright.command = `basedpyright-langserverr --stdio`): no program "
        "'basedpyright-langserverr' on PATH; fix servers.basedpyright.command in the config."
    )
    assert error.details == {"server": "basedpyright", "entry": "servers.basedpyright.command"}


async def test_a_command_that_exits_at_once_names_the_entry_and_its_status(
    tmp_path: Path,
) -> None:
    error = await failure(tmp_path, [sys.executable, "-c", EXIT_2])
    assert error.kind is ErrorKind.LSP_ERROR
    program = Path(sys.executable).name
    assert error.message.startswith(
        "The basedpyright language server could not start (it exited with code 2; its "
        "stderr ended with: unknown option) from its command in the config "
        f"(servers.basedpyright.command = `{program} -c "
    )
    assert error.message.endswith("`); fix that entry, or see session/list for more.")
    assert "codeward servers install" not in error.message


async def test_a_command_the_system_cannot_run_names_the_entry_and_the_reason(
    tmp_path: Path,
) -> None:
    garbage = tmp_path / "bin" / "basedpyright-langserver"
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x00\x01 not a program\n")
    garbage.chmod(0o755)
    error = await failure(tmp_path, [str(garbage), "--stdio"])
    assert error.kind is ErrorKind.LSP_ERROR
    assert error.message == (
        "The basedpyright language server could not start (it could not be run: Exec "
        "format error) from its command in the config (servers.basedpyright.command = "
        "`basedpyright-langserver --stdio`); fix that entry, or see session/list for more."
    )
