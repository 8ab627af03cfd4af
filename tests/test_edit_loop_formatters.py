"""format_code without a formatting server: the language's standard formatter from PATH
(real gofmt and shfmt), its failures, a missing one, and a timeout that kills it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import codeward.daemon.edits.formatters as formatters
from codeward.daemon.config import Config, DaemonConfig, LanguageConfig
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import have, needs
from tests.rpc import RpcClient, RpcFailure

UGLY_GO = "package main\nfunc main(){\nx:=1\n_=x}\n"
PRETTY_GO = "package main\n\nfunc main() {\n\tx := 1\n\t_ = x\n}\n"
UGLY_SH = "if true;then\necho hi\nfi\n"
UGLY_PY = "x  =  1\n"
PRETTY_SH = "if true; then\n\techo hi\nfi\n"


@pytest.fixture
def daemon_config() -> Config:
    """Go and shell files with no language server at all: only a formatter can format them."""
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        languages={
            "go": LanguageConfig(patterns=["*.go"], servers=[], language_id="go"),
            "sh": LanguageConfig(patterns=["*.sh"], servers=[], language_id="shellscript"),
        },
    )


async def failure(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    return info.value


@pytest.mark.skipif(not have("gofmt"), reason="gofmt is not installed")
async def test_gofmt_formats_without_a_server(client: RpcClient, project: Path) -> None:
    write(project, {"main.go": UGLY_GO, "broken.go": "package main\nfunc {\n"})
    dry = await client.tool("format_code", path="main.go", apply=False)
    assert dry["formatter"] == "gofmt" and dry["changed"] and not dry["applied"]
    assert "+\tx := 1\n" in dry["diff"] and (project / "main.go").read_text() == UGLY_GO
    done = await client.tool("format_code", path="main.go")
    assert done["applied"] and (project / "main.go").read_text() == PRETTY_GO
    assert [f["file"] for f in done["diagnostics_after"]] == ["main.go"]
    again = await client.tool("format_code", path="main.go")
    assert not again["changed"] and again["formatter"] == "gofmt"
    # a file gofmt cannot parse: its words, nothing written
    err = await failure(client, "format_code", path="broken.go")
    assert err.kind == "lsp_error" and "gofmt could not format 'broken.go'" in err.message
    assert (project / "broken.go").read_text() == "package main\nfunc {\n"
    # a range needs a server that formats ranges: the formatter formats whole files
    err = await failure(client, "format_code", path="main.go", start_line=1, end_line=2)
    assert err.kind == "lsp_unavailable"


@pytest.mark.skipif(not have("shfmt"), reason="shfmt is not installed")
async def test_shfmt_and_a_missing_formatter(
    client: RpcClient, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(project, {"run.sh": UGLY_SH})
    done = await client.tool("format_code", path="run.sh")
    assert done["formatter"] == "shfmt" and (project / "run.sh").read_text() == PRETTY_SH
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    write(project, {"run.sh": UGLY_SH})
    err = await failure(client, "format_code", path="run.sh")
    assert err.kind == "lsp_unavailable" and "shfmt is not on PATH" in err.message
    assert "apt install shfmt" in err.message and err.data["formatter"] == "shfmt"
    assert (project / "run.sh").read_text() == UGLY_SH


@needs("basedpyright")
async def test_ruff_narrowed_out_by_the_project_is_named_not_run(
    open_client: OpenClient, project: Path
) -> None:
    """The project's .codeward.toml keeps basedpyright alone for Python: basedpyright does
    not format, and ruff (its formatter) is not run from PATH, whether it is there or not:
    the error says the project left it out."""
    write(project, {".codeward.toml": '[servers]\npython = ["basedpyright"]\n', "a.py": UGLY_PY})
    client = await open_client(project)
    err = await failure(client, "format_code", path="a.py")
    assert err.kind == "unsupported_by_server"
    assert err.message == (
        "No server of this project formats 'a.py': ruff, which formats python files, is left "
        'out by the project\'s .codeward.toml ([servers] python = ["basedpyright"]); add '
        '"ruff" there to format with it.'
    )
    assert err.data["narrowed_out"] == ["ruff"] and err.data["servers"] == ["basedpyright"]
    assert (project / "a.py").read_text() == UGLY_PY


async def test_a_formatter_past_its_timeout_is_killed(
    client: RpcClient, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sleep` as the shell's formatter: the timeout kills its group (the leak check sees
    no process left) and nothing is written."""
    sleeper = formatters.Formatter("sleep", "sleep", ("30",), "nothing")
    monkeypatch.setitem(formatters.BY_LANGUAGE, "sh", sleeper)
    monkeypatch.setattr(formatters, "TIMEOUT", 0.5)
    write(project, {"run.sh": UGLY_SH})
    err = await failure(client, "format_code", path="run.sh")
    assert err.kind == "timeout" and "sleep did not format 'run.sh'" in err.message
    assert (project / "run.sh").read_text() == UGLY_SH
