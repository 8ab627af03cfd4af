"""The formatter fallback runs none of the project's code in an untrusted root: real
prettier (servers/npm's, pinned) formats JavaScript of a language with no server, beside
prettier configs that are canaries (`.prettierrc.cjs`, `prettier.config.mjs`, a
`package.json` `"prettier"` naming a module, a plugin) leaving a marker when loaded. Once
the root is trusted, its config applies (the control: the canaries are armed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig
from codeward.daemon.edits.formatters import Formatter, run_formatter
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.servers.locate import npm_prefix
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.rpc import RpcFailure

PRETTIER_BIN = npm_prefix() / "node_modules" / ".bin"
UGLY = "const a   =  {b:1}\n"


@pytest.fixture
def daemon_config() -> Config:
    """JavaScript with no server: format_code falls back to prettier."""
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        languages={
            "javascript": LanguageConfig(patterns=["*.js"], servers=[], language_id="javascript")
        },
    )


@pytest.fixture(autouse=True)
def prettier_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (PRETTIER_BIN / "prettier").exists():
        pytest.fail("prettier is not installed in .venv/npm: run `make`")
    monkeypatch.setenv("PATH", f"{PRETTIER_BIN}{os.pathsep}{os.environ['PATH']}")


def canaries(root: Path, markers: Path) -> dict[str, Path]:
    """One folder per way a prettier config runs code; each leaves its marker when run."""
    markers.mkdir()

    def cjs(name: str) -> str:
        return (
            f"require('fs').appendFileSync({json.dumps(str(markers / name))}, 'ran\\n');\n"
            "module.exports = {semi: false};\n"
        )

    write(
        root,
        {
            "rc/.prettierrc.cjs": cjs("rc"),
            "mjs/prettier.config.mjs": (
                "import fs from 'node:fs';\n"
                f"fs.appendFileSync({json.dumps(str(markers / 'mjs'))}, 'ran\\n');\n"
                "export default {semi: false};\n"
            ),
            "pkg/package.json": '{"name": "x", "prettier": "./shared.cjs"}\n',
            "pkg/shared.cjs": cjs("pkg"),
            "plugin/.prettierrc.json": '{"plugins": ["./plugin.cjs"], "semi": false}\n',
            "plugin/plugin.cjs": cjs("plugin"),
            **{f"{name}/x.js": UGLY for name in ("rc", "mjs", "pkg", "plugin")},
        },
    )
    return {name: markers / name for name in ("rc", "mjs", "pkg", "plugin")}


async def test_prettier_runs_without_the_projects_config_untrusted(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    markers = canaries(project, tmp_path / "markers")
    client = await open_client(project)
    for name, marker in markers.items():
        with trio.fail_after(60):
            result = await client.tool("format_code", path=f"{name}/x.js", apply=False)
        assert result["formatter"] == "prettier" and result["restricted"] is True
        assert result["restricted_effects"] == {"prettier": "runs without the project's config"}
        assert "+const a = { b: 1 };" in result["diff"], result["diff"]  # prettier's defaults
        assert not marker.exists(), f"the {name} config ran untrusted"
        assert (project / name / "x.js").read_text() == UGLY

    write(project, {"plain/x.js": UGLY})  # no config to leave unread: nothing affected
    with trio.fail_after(60):
        result = await client.tool("format_code", path="plain/x.js", apply=False)
    assert result["restricted"] is True and "restricted_effects" not in result

    # the control: trusted, prettier loads the project's config (the canaries are armed)
    await client.call("trust/set", {"root": str(project)})
    for name, marker in markers.items():
        with trio.fail_after(60):
            result = await client.tool("format_code", path=f"{name}/x.js", apply=False)
        assert marker.exists(), f"the {name} canary did not run trusted: {result['diff']}"
        assert "+const a = { b: 1 }\n" in result["diff"]  # semi: false, from the config


async def test_a_syntax_error_is_what_prettier_says_untrusted(
    open_client: OpenClient, project: Path
) -> None:
    write(project, {"bad.js": "const = ;\n"})
    client = await open_client(project)
    with pytest.raises(RpcFailure) as info, trio.fail_after(60):
        await client.tool("format_code", path="bad.js", apply=False)
    assert info.value.kind == "lsp_error" and "SyntaxError" in info.value.message


async def test_a_formatter_that_cannot_ignore_its_config_does_not_run_untrusted(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    program = tmp_path / "bin" / "cw-formatter"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\necho ran > {marker}\ncat\n")
    program.chmod(0o755)
    formatter = Formatter("cw-formatter", str(program), (), "nothing", untrusted_args=None)
    with pytest.raises(ToolError) as info:
        await run_formatter(formatter, tmp_path, "x.txt", "text\n", trusted=False)
    error = info.value
    assert error.kind is ErrorKind.LSP_UNAVAILABLE and error.details["restricted"] is True
    assert "untrusted root" in error.message and "can run the project's code" in error.message
    assert not marker.exists()
    assert await run_formatter(formatter, tmp_path, "x.txt", "text\n", trusted=True) == "text\n"
    assert marker.exists()


async def test_a_missing_formatter_says_what_to_install(
    open_client: OpenClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    write(project, {"x.js": UGLY})
    client = await open_client(project)
    with pytest.raises(RpcFailure) as info:
        await client.tool("format_code", path="x.js", apply=False)
    assert info.value.kind == "lsp_unavailable" and "npm install" in info.value.message
