"""The CLI's restricted remark: made when the root's restriction affected the answer (a
server that did not start, one whose restricted configuration takes away something this
root uses), or with `--verbose`; once per command. The daemon names what was affected in
a result's `restricted_effects`. The fake server stands in where a server is kept off by
the config; basedpyright is real."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codeward.daemon.config import (
    Config,
    DaemonConfig,
    LanguageConfig,
    LspConfig,
    ServerConfig,
    Untrusted,
)
from codeward.daemon.lsp.restricted_effects import effect
from codeward.daemon.server import Daemon
from tests.lsp_support import FAKE, needs
from tests.test_trust_commands import cli

OFF = 'the config says untrusted = "off" for it'


@pytest.fixture
def daemon_config() -> Config:
    def fake(untrusted: Untrusted) -> ServerConfig:
        return ServerConfig(command=[sys.executable, FAKE, "ok"], untrusted=untrusted)

    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        lsp=LspConfig(initialize_timeout=10.0, settle_timeout=10.0),
        servers={"kept-off": fake("off"), "runs": fake("run")},
        languages={
            "fake": LanguageConfig(patterns=["*.fake"], servers=["kept-off", "runs"]),
            "plain": LanguageConfig(patterns=["*.plain"], servers=["runs"]),
        },
    )


def remarks(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("codeward: restricted:")]


async def test_no_remark_when_nothing_was_affected_unless_verbose(
    daemon: Daemon, project: Path
) -> None:
    (project / "a.plain").write_text("x\n")
    code, _, err = await cli(daemon, "diagnostics", "a.plain", cwd=project)
    assert code == 0 and remarks(err) == [], err
    code, _, err = await cli(daemon, "--json", "diagnostics", "a.plain", cwd=project)
    assert code == 0 and remarks(err) == []
    code, _, err = await cli(daemon, "diagnostics", "a.plain", "--verbose", cwd=project)
    assert code == 0
    assert remarks(err) == [
        "codeward: restricted: the root is not trusted (codeward trust), so its servers run "
        "without project code"
    ]


async def test_a_server_that_did_not_start_is_named_once(daemon: Daemon, project: Path) -> None:
    (project / "a.fake").write_text("x\n")
    code, out, err = await cli(daemon, "--json", "diagnostics", "a.fake", cwd=project)
    assert code == 0, err
    result = json.loads(out)
    assert result["restricted"] is True
    assert result["restricted_effects"] == {
        "kept-off": f"does not start in an untrusted root: {OFF}"
    }
    code, _, err = await cli(daemon, "diagnostics", "a.fake", "-v", cwd=project)
    assert code == 0
    assert remarks(err) == [
        "codeward: restricted: the root is not trusted (codeward trust), so kept-off does not "
        f"start in an untrusted root: {OFF}"
    ]
    await cli(daemon, "trust", str(project))
    code, out, err = await cli(daemon, "--json", "diagnostics", "a.fake", cwd=project)
    assert code == 0 and remarks(err) == []
    assert "restricted" not in json.loads(out) and "restricted_effects" not in json.loads(out)


@needs("basedpyright")
async def test_a_setting_that_changes_the_answer_is_named(daemon: Daemon, project: Path) -> None:
    """basedpyright beside a virtualenv it may not run: its answer may differ, so it says."""
    (project / ".venv").mkdir()
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "a.py").write_text("import nothing_here\n")
    code, _, err = await cli(daemon, "symbols", "a.py", cwd=project)
    assert code == 0
    (remark,) = remarks(err)
    assert "basedpyright does not run the project's virtualenv" in remark, err


def test_what_each_restriction_takes_away_depends_on_the_root(tmp_path: Path) -> None:
    def config(*command: str) -> ServerConfig:
        return ServerConfig(command=list(command) or ["x"])

    root = tmp_path
    assert effect("basedpyright", config(), root) is None
    assert effect("ruff", config(), root) is None
    (root / "venv").mkdir()
    (root / "venv" / "pyvenv.cfg").write_text("")
    assert "virtualenv" in (effect("pylsp", config(), root) or "")
    assert effect("clangd", config("clangd"), root) is None
    assert "--query-driver" in (effect("clangd", config("clangd", "--query-driver=/x"), root) or "")
    (root / "Cargo.toml").write_text('[package]\nname = "d"\nversion = "0.1.0"\n')
    assert effect("rust-analyzer", config(), root) is None
    (root / "Cargo.toml").write_text('[package]\nname = "d"\n[dependencies]\nserde = "1"\n')
    assert "dependencies" in (effect("rust-analyzer", config(), root) or "")
    (root / "go.mod").write_text("module m\n\ngo 1.21\n")
    assert effect("gopls", config(), root) is None
    (root / "main.go").write_text('package main\n\nimport "C"\n')
    assert "cgo" in (effect("gopls", config(), root) or "")
    (root / "go.mod").write_text("module m\n\ngo 1.21\ntoolchain go1.22.0\n")
    assert "toolchain" in (effect("gopls", config(), root) or "")
    assert effect("typescript-language-server", config(), root) is None
    (root / "node_modules" / "typescript").mkdir(parents=True)
    assert "typescript" in (effect("typescript-language-server", config(), root) or "")
    assert "TypeScript code actions" in (effect("svelte-language-server", config(), root) or "")
    assert effect("jdtls", config(), root) is None
    (root / "pom.xml").write_text("<project/>")
    assert "Maven" in (effect("jdtls", config(), root) or "")
