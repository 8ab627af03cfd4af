"""`codeward servers` and `codeward servers install`: real installs from PyPI and npm into a
fresh `$XDG_DATA_HOME`, found by a running daemon on its next request, without a restart."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.client.cli import main
from codeward.daemon.config import Config, LanguageConfig
from codeward.servers import catalog
from tests.conftest import OpenClient
from tests.rpc import RpcClient, RpcFailure
from tests.test_cli_imports import forbidden, imported_modules


@pytest.fixture(autouse=True)
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and XDG_DATA_HOME with nothing installed."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    return home / "data" / "codeward" / "servers"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


async def run_in_thread(*argv: str) -> tuple[int, str, str]:
    """The CLI blocks on its installer: off the thread of the in-process daemon."""
    return await trio.to_thread.run_sync(partial(run, *argv))


def test_the_list_names_every_server_with_version_source_and_install_command() -> None:
    code, out, err = run("servers")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["SERVER", "LANGUAGES", "VERSION", "FROM", "INSTALL"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == [server.name for server in catalog.SERVERS]
    assert "1.9.6" in rows["tombi"] and rows["tombi"].endswith("codeward servers install tombi")
    assert "2.0.0" in rows["yaml-language-server"] and " npm " in rows["yaml-language-server"]
    assert "sudo apt-get install gopls" in rows["gopls"]
    assert "not installed" in rows["elixir-ls"] and "language_server.sh" in rows["elixir-ls"]
    assert "(selectable)" in rows["pyrefly"]

    code, out, _ = run("servers", "--json")
    listed = {row["name"]: row for row in json.loads(out)["servers"]}
    assert listed["tombi"]["installed"] is True and listed["tombi"]["found_in"] == "bundled"
    assert listed["tombi"]["source"] == "PyPI" and listed["tombi"]["packages"] == ["tombi==1.9.6"]
    assert listed["lexical"] == {
        "name": "lexical", "languages": ["elixir"], "installed": False, "version": None,
        "program": None, "found_in": None, "source": "none", "packages": [], "default": True,
        "install": catalog.BY_NAME["lexical"].how,
    }  # fmt: skip


def test_bad_names_and_servers_no_registry_has(fresh_home: Path) -> None:
    code, _, err = run("servers", "install", "no-such-server", "tombi")
    assert code == 2 and "unknown server no-such-server; known servers: basedpyright" in err
    assert run("servers", "install")[0] == 2
    assert run("servers", "uninstall", "tombi")[0] == 2
    assert run("servers", "tombi")[0] == 2
    code, out, err = run("servers", "install", "rust-analyzer")
    assert code == 1 and out == ""
    assert "rust-analyzer is not installed from PyPI or npm" in err
    assert "sudo apt-get install rust-web-analyzer" in err
    code, _, err = run("servers", "install", "elixir-ls")
    assert code == 1 and "language_server.sh" in err
    assert not fresh_home.exists()


def test_listing_and_installing_import_no_trio(fresh_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codeward.client.entry", "servers"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    names = imported_modules(proc.stderr)
    assert "codeward.servers.locate" in names and forbidden(names) == set()


def server_pid(sessions: list[dict[str, Any]], root: Path, name: str) -> int:
    session = next(s for s in sessions if s["root"] == str(root))
    return next(s["pid"] for s in session["servers"] if s["name"] == name)


async def command_line(client: RpcClient, root: Path, name: str) -> list[str]:
    pid = server_pid((await client.call("session/list"))["sessions"], root, name)
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.fixture
def daemon_config() -> Config:
    """Python files go to ty (a selectable server nothing installs by default)."""
    python = LanguageConfig(patterns=["*.py"], servers=["ty"], language_id="python")
    return Config(languages={"python": python})


async def test_a_pypi_server_installed_while_the_daemon_runs(
    open_client: OpenClient, project: Path, fresh_home: Path
) -> None:
    (project / "app.py").write_text("def f() -> int:\n    return 'no'\n")
    client = await open_client(project)
    with pytest.raises(RpcFailure) as failed:
        await client.tool("get_diagnostics", path="app.py")
    assert failed.value.kind == "lsp_unavailable"
    assert "`codeward servers install ty`" in failed.value.message

    code, out, err = await run_in_thread("servers", "install", "ty")
    assert code == 0, err
    assert out.startswith("installing ty (ty==0.0.105) ...\ninstalled ty 0.0.105 in ")
    assert os.access(fresh_home / "ty" / "bin" / "ty", os.X_OK)

    with trio.fail_after(60):  # found on the next request: no restart
        found = await client.tool("get_diagnostics", path="app.py")
    assert [d["line"] for d in found["diagnostics"]] == [2], found
    assert (await command_line(client, project, "ty"))[0] == str(fresh_home / "ty" / "bin" / "ty")
    code, out, _ = run("servers", "--json")
    ty = next(row for row in json.loads(out)["servers"] if row["name"] == "ty")
    assert ty["installed"] and ty["version"] == "0.0.105" and ty["found_in"] == "codeward"


async def test_an_npm_server_installed_comes_first_and_a_failed_install_changes_nothing(
    open_client: OpenClient, project: Path, fresh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "dockerfile-language-server"
    code, out, err = await run_in_thread("servers", "install", name)
    assert code == 0, err
    assert "installed dockerfile-language-server 0.15.0 in " in out
    program = fresh_home / name / "node_modules" / ".bin" / "docker-langserver"
    (project / "Dockerfile").write_text("FROM debian:12\nRUN echo hi\n")
    client = await open_client(project)
    with trio.fail_after(60):
        await client.tool("get_symbols", path="Dockerfile")
    command = await command_line(client, project, name)
    assert command[1] == os.path.realpath(program)  # run by node, before the bundled one

    # an unreachable registry: a clear error, and the earlier install is still there
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    code, out, err = await run_in_thread("servers", "install", name)
    assert code == 1
    assert err.startswith(f"error: installing {name} failed (npm exited with ")
    assert "nothing was installed" in err and "ECONNREFUSED" in err
    assert sorted(os.listdir(fresh_home)) == [name]
    assert program.exists()


async def test_a_failed_first_install_leaves_no_folder(
    fresh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "0")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    code, _, err = await run_in_thread("servers", "install", "yaml-language-server", "pyrefly")
    assert code == 1
    assert "error: installing yaml-language-server failed (npm exited with " in err
    assert "error: installing pyrefly failed (pip exited with " in err
    assert os.listdir(fresh_home) == []
