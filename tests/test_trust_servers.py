"""Each default server's restricted configuration, through the daemon's socket.

rust-analyzer, typescript-language-server, ElixirLS and Lexical are not installed here:
the scripted fake server stands in under their names and logs the environment, command
line, initializationOptions and settings it was started with. `cargo` itself is real (the
commands rust-analyzer runs are run with the restricted environment), as are gopls and
clangd (canaries that leave a marker when a program runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, LspConfig, ServerConfig
from codeward.daemon.lsp.defaults import default_servers
from codeward.daemon.lsp.restricted import RUST_SETTINGS, SVELTE_OFF, restricted
from codeward.servers import locate
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import CARGO_HINT, fake_server, logged, needs, working
from tests.rpc import RpcClient, RpcFailure

FAKES = {  # name: (language, pattern)
    "rust-analyzer": ("rust", "*.rs"),
    "typescript-language-server": ("typescript", "*.ts"),
    "elixir-ls": ("elixir", "*.ex"),
    "mystery": ("fake", "*.fake"),  # a server codeward does not know
    "opted-in": ("optin", "*.optin"),  # one the user says runs nothing
    "opted-out": ("optout", "*.optout"),  # one the user keeps off in untrusted roots
    "local": ("local", "*.local"),  # a program found through PATH="." in the root
    "silent": ("silent", "*.silent"),  # never answers a hover
}


def fake_named(name: str, log: Path) -> ServerConfig:
    untrusted = {"opted-in": "run", "opted-out": "off", "local": "run", "silent": "run"}
    config = fake_server("silent-hover" if name == "silent" else "env", log)
    if name == "local":
        config = msgspec.structs.replace(config, command=["cw-local-server", log.name])
    return msgspec.structs.replace(config, untrusted=untrusted.get(name, "default"))


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    return {name: tmp_path / f"{name}.log" for name in FAKES}


@pytest.fixture
def daemon_config(logs: dict[str, Path]) -> Config:
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        lsp=LspConfig(initialize_timeout=10.0, settle_timeout=5.0, request_timeout=10.0),
        servers={name: fake_named(name, logs[name]) for name in FAKES},
        languages={
            language: LanguageConfig(patterns=[pattern], servers=[name], language_id=language)
            for name, (language, pattern) in FAKES.items()
        },
    )


def started(log: Path) -> list[dict[str, Any]]:
    return [m["started"] for m in logged(log) if "started" in m]


def initialize(log: Path) -> list[dict[str, Any]]:
    return [m["params"] for m in logged(log) if m.get("method") == "initialize"]


def configuration(log: Path) -> list[dict[str, Any]]:
    return [
        m["params"]["settings"]
        for m in logged(log)
        if m.get("method") == "workspace/didChangeConfiguration"
    ]


async def hover(client: RpcClient, path: str) -> dict[str, Any]:
    with trio.fail_after(30):
        return await client.tool("get_hover_info", path=path, line=1, character=1)


async def refused(client: RpcClient, path: str) -> RpcFailure:
    with pytest.raises(RpcFailure) as info, trio.fail_after(30):
        await client.tool("get_hover_info", path=path, line=1, character=1)
    return info.value


async def pids(client: RpcClient) -> dict[str, int | None]:
    (session,) = (await client.call("session/list"))["sessions"]
    return {s["name"]: s["pid"] for s in session["servers"]}


def assert_confined(run: dict[str, Any], root: Path) -> None:
    """Started by absolute path, with no PATH entry that is relative or inside the root."""
    assert os.path.isabs(run["argv"][0]) or run["argv"][0] == sys.executable
    for entry in run["env"]["PATH"].split(os.pathsep):
        assert os.path.isabs(entry) and not entry.startswith(str(root)), entry


async def test_rust_analyzer_restricted_then_trusted(
    open_client: OpenClient, project: Path, logs: dict[str, Path]
) -> None:
    write(project, {"src/main.rs": "fn main() {}\n"})
    client = await open_client(project)
    assert (await hover(client, "src/main.rs"))["restricted"] is True
    (run,) = started(logs["rust-analyzer"])
    env = run["env"]
    for name in ("RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER"):
        assert env[name] == "", name
    assert env["RUSTC"] in (locate.on_path("rustc"), "rustc") and env["CARGO_NET_OFFLINE"] == "true"
    assert env["RUSTUP_TOOLCHAIN"] == (locate.rustup_default() or "stable")
    assert env["RUSTUP_AUTO_INSTALL"] == "0"
    assert_confined(run, project)
    (params,) = initialize(logs["rust-analyzer"])
    options = params["initializationOptions"]
    (settings,) = configuration(logs["rust-analyzer"])
    for section in (options, settings["rust-analyzer"]):
        assert section["cargo"]["buildScripts"]["enable"] is False
        assert section["cargo"]["noDeps"] is True
        assert section["procMacro"]["enable"] is False and section["checkOnSave"] is False
        assert "overrideCommand" not in section["check"]
    assert settings["fake"] == {"answer": 42}  # the user's own settings are kept
    before = (await pids(client))["rust-analyzer"]

    result = await client.call("trust/set", {"root": str(project)})
    assert result["restarted"] != []
    assert "restricted" not in await hover(client, "src/main.rs")
    runs = started(logs["rust-analyzer"])
    assert len(runs) == 2 and "RUSTC_WRAPPER" not in runs[1]["env"]
    assert initialize(logs["rust-analyzer"])[1]["initializationOptions"] is None
    assert configuration(logs["rust-analyzer"])[1] == {"fake": {"answer": 42}}
    assert (await pids(client))["rust-analyzer"] not in (before, None)


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"crates/x/rust-project.json": '{"sysroot": "tc"}'}, "rust-project.json"),
        ({".rust-project.json": "{}"}, "rust-project.json"),
        ({"rust-analyzer.toml": "[check]\noverrideCommand = ['./x']\n"}, "rust-analyzer.toml"),
        ({".cargo/config.toml": '[env]\nLD_PRELOAD = "x.so"\n'}, "[env]"),
        ({"crates/y/.cargo/config": "[env]\nA = 'b'\n"}, "[env]"),
        # an ignored folder right below the root: rust-analyzer takes its Cargo.toml
        ({"target/Cargo.toml": "", "target/.cargo/config.toml": "[env]\nA = 'b'\n"}, "[env]"),
        ({"node_modules/rust-project.json": "{}"}, "rust-project.json"),
        ({".cargo/config.toml": "[env\n"}, "[env]"),  # unreadable: cannot tell
    ],
)
async def test_what_keeps_rust_analyzer_off(
    open_client: OpenClient,
    project: Path,
    logs: dict[str, Path],
    files: dict[str, str],
    named: str,
) -> None:
    write(project, {"lib.rs": "fn f() {}\n", **files})  # (1:1, `fn`, points at `f`)
    client = await open_client(project)
    failure = await refused(client, "lib.rs")
    assert failure.kind == "lsp_unavailable" and named in failure.message
    assert failure.data["restricted"] is True and started(logs["rust-analyzer"]) == []


async def test_typescript_gets_the_installed_tsserver_never_the_projects(
    open_client: OpenClient,
    project: Path,
    tmp_path: Path,
    logs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the project ships its own typescript, and a PATH that finds it first
    write(project, {"a.ts": "let x = 1;\n", "node_modules/typescript/lib/tsserver.js": "evil"})
    local_bin = project / "node_modules" / ".bin"
    local_bin.mkdir()
    os.symlink("../typescript/lib/tsserver.js", local_bin / "tsserver")
    base_path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"node_modules/.bin:{local_bin}:{base_path}")
    client = await open_client(project)
    failure = await refused(client, "a.ts")
    assert failure.kind == "lsp_unavailable"
    assert "servers install typescript-language-server" in failure.message
    assert str(project) not in failure.message

    # a typescript installed outside the root (npm's global layout)
    package = tmp_path / "global" / "lib" / "node_modules" / "typescript"
    write(package, {"lib/tsserver.js": "// installed", "bin/tsserver": ""})
    (package / "bin" / "tsserver").chmod(0o755)
    (tmp_path / "global" / "bin").mkdir()
    os.symlink(package / "bin" / "tsserver", tmp_path / "global" / "bin" / "tsserver")
    monkeypatch.setenv("PATH", f"node_modules/.bin:{local_bin}:{tmp_path}/global/bin:{base_path}")
    assert (await hover(client, "a.ts"))["restricted"] is True
    (params,) = initialize(logs["typescript-language-server"])
    options = params["initializationOptions"]
    assert options["tsserver"] == {"path": str(package / "lib" / "tsserver.js")}
    assert options["plugins"] == [] and options["disableAutomaticTypingAcquisition"] is True
    assert_confined(started(logs["typescript-language-server"])[0], project)


async def test_elixir_servers_do_not_start_until_trusted(
    open_client: OpenClient, project: Path, logs: dict[str, Path]
) -> None:
    write(project, {"lib/a.ex": "defmodule A do\nend\n"})
    client = await open_client(project)
    failure = await refused(client, "lib/a.ex")
    assert failure.kind == "lsp_unavailable" and failure.data["restricted"] is True
    assert "mix" in failure.message and "codeward trust" in failure.message
    with pytest.raises(RpcFailure) as info, trio.fail_after(30):
        await client.tool("get_diagnostics", path="lib/a.ex")
    assert info.value.kind == "lsp_unavailable"
    assert started(logs["elixir-ls"]) == []
    await client.call("trust/set", {"root": str(project)})
    assert "restricted" not in await hover(client, "lib/a.ex")
    assert len(started(logs["elixir-ls"])) == 1


async def test_servers_codeward_does_not_know(
    open_client: OpenClient, project: Path, logs: dict[str, Path]
) -> None:
    write(project, {"a.fake": "x\n", "a.optin": "x\n", "a.optout": "x\n"})
    client = await open_client(project)
    failure = await refused(client, "a.fake")
    assert failure.kind == "lsp_unavailable" and 'untrusted = "run"' in failure.message
    failure = await refused(client, "a.optout")
    assert failure.kind == "lsp_unavailable" and 'untrusted = "off"' in failure.message
    assert (await hover(client, "a.optin"))["restricted"] is True
    assert_confined(started(logs["opted-in"])[0], project)
    assert started(logs["mystery"]) == started(logs["opted-out"]) == []
    await client.call("trust/set", {"root": str(project)})
    for path in ("a.fake", "a.optin", "a.optout"):
        assert "restricted" not in await hover(client, path)


async def test_a_server_program_in_the_root_never_runs_untrusted(
    open_client: OpenClient,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PATH with "." finds the repository's own `cw-local-server`: not in an untrusted root,
    nor in a trusted one (no program codeward starts is looked up on a relative PATH
    entry or one inside a root, trusted or not)."""
    marker = tmp_path / "ran"
    program = project / "cw-local-server"
    fake = Path(__file__).with_name("fake_lsp_server.py")
    program.write_text(f'#!/bin/sh\necho ran >> "{marker}"\nexec "{sys.executable}" "{fake}" ok\n')
    program.chmod(0o755)
    write(project, {"a.local": "x\n"})
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}")
    monkeypatch.chdir(project)  # where the daemon itself looks for it too
    client = await open_client(project)
    failure = await refused(client, "a.local")
    assert failure.kind == "lsp_unavailable" and not marker.exists()
    await client.call("trust/set", {"root": str(project)})
    failure = await refused(client, "a.local")
    assert failure.kind == "lsp_unavailable" and "not installed" in failure.message
    subprocess.run([str(program), "--version"], input=b"", timeout=30, check=False)
    assert marker.exists(), "the canary is armed: run, it leaves its marker"


# -- real programs -------------------------------------------------------------------------


def cargo_project(root: Path, marker: Path) -> None:
    """A crate whose config names programs (canaries) cargo would run."""
    canary = f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec "$@"\n'
    fake_rustc = f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec rustc "$@"\n'
    write(
        root,
        {
            "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/main.rs": "fn main() {}\n",
            "build.rs": f'fn main() {{ std::fs::write("{marker}", "build.rs").unwrap(); }}\n',
            "wrap.sh": canary,
            "fake-rustc.sh": fake_rustc,
            "toolchain/bin/cargo": canary,
            "toolchain/bin/rustc": canary,
            ".cargo/config.toml": (
                '[build]\nrustc-wrapper = "./wrap.sh"\nrustc = "./fake-rustc.sh"\n'
                'rustc-workspace-wrapper = "./wrap.sh"\n'
                '[target.x86_64-unknown-linux-gnu]\nrunner = "./wrap.sh"\n'
            ),
        },
    )
    for name in ("wrap.sh", "fake-rustc.sh", "toolchain/bin/cargo", "toolchain/bin/rustc"):
        (root / name).chmod(0o755)


CFG = ["rustc", "-Z", "unstable-options", "--print", "cfg"]  # as rust-analyzer asks (no build)


def cargo(program: str, root: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [program, *args], cwd=root, env=env, capture_output=True, timeout=120, check=False
    )


def test_cargo_runs_nothing_from_the_project_with_the_restricted_environment(
    project: Path, tmp_path: Path
) -> None:
    """The cargo commands rust-analyzer runs to load a project, with the environment of
    its restricted configuration: no wrapper, configured rustc or build script."""
    marker = tmp_path / "ran"
    cargo_project(project, marker)
    config = restricted("rust-analyzer", default_servers()["rust-analyzer"], project)
    program = config.env.get("CARGO") or working("cargo", CARGO_HINT)  # what it runs
    safe = {**os.environ, **config.env}
    plain = {k: v for k, v in os.environ.items() if k != "RUSTUP_TOOLCHAIN"}

    cargo(program, project, plain, "metadata", "--format-version", "1")  # armed
    ran = marker.read_text()
    assert "wrap.sh" in ran and "fake-rustc.sh" in ran
    marker.unlink()

    commands = [
        ["metadata", "--format-version", "1", "--no-deps"],
        ["metadata", "--format-version", "1"],
        CFG,  # how rust-analyzer learns the target's cfg
    ]
    for args in commands:
        cargo(program, project, {**safe, "RUSTC_BOOTSTRAP": "1"}, *args)
        assert not marker.exists(), (args, marker.read_text())
    assert RUST_SETTINGS["cargo"]["noDeps"] is True  # what makes rust-analyzer add --no-deps


def test_a_toolchain_file_names_no_toolchain_with_the_restricted_environment(
    project: Path, tmp_path: Path
) -> None:
    """rustup's proxy runs the toolchain a `rust-toolchain.toml` names (a folder of the
    project's): not with the restricted environment, which pins the user's default."""
    rustup = shutil.which("rustup")
    if rustup is None:
        pytest.fail(
            "rustup is not installed (its proxies read rust-toolchain.toml): install it from "
            "https://rustup.rs (no toolchain is needed)"
        )
    marker = tmp_path / "ran"
    cargo_project(project, marker)
    (project / "rust-toolchain.toml").write_text(f'[toolchain]\npath = "{project}/toolchain"\n')
    proxy = tmp_path / "proxy" / "cargo"
    proxy.parent.mkdir()
    proxy.symlink_to(rustup)  # rustup runs as the proxy its name says
    plain = {k: v for k, v in os.environ.items() if k != "RUSTUP_TOOLCHAIN"}
    cargo(str(proxy), project, plain, "metadata", "--format-version", "1")
    assert "toolchain/bin/cargo" in marker.read_text()  # armed: the project's toolchain
    marker.unlink()

    config = restricted("rust-analyzer", default_servers()["rust-analyzer"], project)
    safe = {**os.environ, **config.env, "RUSTC_BOOTSTRAP": "1"}
    cargo(str(proxy), project, safe, "metadata", "--format-version", "1", "--no-deps")
    assert not marker.exists(), marker.read_text()


PRELOAD = """
#include <stdio.h>
__attribute__((constructor)) static void canary(void) {
    FILE *f = fopen("MARKER", "a");
    if (f) { fputs("preloaded\\n", f); fclose(f); }
}
"""


def test_cargo_env_table_beats_the_environment_so_rust_analyzer_stays_off(
    project: Path, tmp_path: Path
) -> None:
    """`[env] LD_PRELOAD` with `force` reaches the rustc cargo runs to learn the target,
    whatever the environment says: such a project does not start rust-analyzer."""
    from codeward.daemon.lsp.restricted import NotInRestrictedMode, rust_env

    program = working("cargo", CARGO_HINT)
    cc = working("cc", "install a C compiler: `sudo apt-get install gcc`")
    marker = tmp_path / "ran"
    write(project, {"Cargo.toml": '[package]\nname = "d"\nversion = "0.1.0"\n'})
    evil = PRELOAD.replace("MARKER", str(marker))
    write(project, {"src/main.rs": "fn main() {}\n", "evil.c": evil})
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(project / "evil.so"), str(project / "evil.c")],
        check=True,
    )
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(
        '[env]\nLD_PRELOAD = { value = "evil.so", force = true, relative = true }\n'
    )
    cargo(program, project, {**os.environ, **rust_env(project), "RUSTC_BOOTSTRAP": "1"}, *CFG)
    assert "preloaded" in marker.read_text()  # armed, even with the restricted environment
    with pytest.raises(NotInRestrictedMode, match=r"\[env\]"):
        restricted("rust-analyzer", default_servers()["rust-analyzer"], project)


@needs("gopls")
async def test_gopls_pins_the_toolchain_and_runs_no_cgo(
    open_client: OpenClient, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `#cgo pkg-config:` directive makes go list run pkg-config (a canary on PATH) with
    the repository's arguments: only in a trusted root."""
    marker = tmp_path / "ran"
    tools = tmp_path / "bin"
    write(tools, {"pkg-config": f'#!/bin/sh\necho "pkg-config $*" >> "{marker}"\nexit 1\n'})
    (tools / "pkg-config").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    main = 'package main\n\n// #cgo pkg-config: canarylib\nimport "C"\n\nfunc main() {}\n'
    write(project, {"go.mod": "module example.com/m\n\ngo 1.19\n", "main.go": main})
    client = await open_client(project)
    with trio.fail_after(60):
        result = await client.tool("get_diagnostics", path="main.go")
    assert result["restricted"] is True and not marker.exists()
    pid = (await pids(client))["gopls"]
    assert pid is not None
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"GOTOOLCHAIN=local" in environ and b"CGO_ENABLED=0" in environ

    await client.call("trust/set", {"root": str(project)})
    with trio.fail_after(60):
        result = await client.tool("get_diagnostics", path="main.go")
    assert "restricted" not in result
    assert "canarylib" in marker.read_text(), "the canary is armed in a trusted root"


def test_go_runs_no_git_config_program_with_the_restricted_environment(
    project: Path, tmp_path: Path
) -> None:
    """`go list` (whole packages) runs `git status` for its VCS stamp, and git runs the
    repository's `core.fsmonitor` (a canary): not with gopls's restricted environment."""
    go = working("go", "install Go: `sudo apt-get install golang-go`", ("version",))
    marker = tmp_path / "ran"
    write(
        project,
        {
            "go.mod": "module example.com/m\n\ngo 1.19\n",
            "main.go": "package main\n\nfunc main() {}\n",
            "fsm.sh": f'#!/bin/sh\necho "fsmonitor $*" >> "{marker}"\nexit 1\n',
        },
    )
    (project / "fsm.sh").chmod(0o755)
    git = ["git", "-C", str(project), "-c", "core.fsmonitor=false"]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run([*git, "config", "core.fsmonitor", str(project / "fsm.sh")], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    go_list = [go, "list", "-json", "./..."]
    subprocess.run(go_list, cwd=project, capture_output=True, timeout=120, check=True)
    assert "fsmonitor" in marker.read_text()  # armed
    marker.unlink()
    config = restricted("gopls", default_servers()["gopls"], project)
    for env in (config.env, {k: v for k, v in config.env.items() if k != "GOFLAGS"}):
        subprocess.run(
            go_list, cwd=project, env={**os.environ, **env}, capture_output=True, timeout=120
        )
        assert not marker.exists()  # -buildvcs=false, and the git config from the env


@needs("clangd")
async def test_clangd_runs_no_compiler_the_project_names(
    nursery: trio.Nursery, socket_dir: Path, project: Path, tmp_path: Path
) -> None:
    """compile_commands.json names a compiler in the repository; the user's clangd is
    allowed to query drivers (`--query-driver`): only a trusted root may run it."""
    from codeward.daemon.server import Daemon
    from tests.rpc import connect

    marker = tmp_path / "ran"
    compiler = project / "tools" / "cc"
    write(project, {"tools/cc": f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec cc "$@"\n'})
    compiler.chmod(0o755)
    entry = {"directory": str(project), "file": "a.c", "arguments": [str(compiler), "-c", "a.c"]}
    write(project, {"a.c": "int main(void) { return 0; }\n"})
    (project / "compile_commands.json").write_text(json.dumps([entry]))
    clangd = default_servers()["clangd"]
    mine = msgspec.structs.replace(
        clangd, command=[*clangd.command, f"--query-driver={project}/**"]
    )
    daemon = Daemon(Config(servers={"clangd": mine}), socket_dir / "codeward.sock")
    await nursery.start(daemon.run)
    try:
        client = await connect(nursery, daemon.socket_path)
        await client.call("session/open", {"root": str(project)})
        with trio.fail_after(60):
            result = await client.tool("get_diagnostics", path="a.c")
        assert result["restricted"] is True and not marker.exists()
        await client.call("trust/set", {"root": str(project)})
        with trio.fail_after(60):
            result = await client.tool("get_diagnostics", path="a.c")
        assert "restricted" not in result
        assert marker.exists(), "the canary is armed: a trusted root's clangd queries it"
    finally:
        daemon.request_stop()


def test_every_default_server_was_reviewed(project: Path) -> None:
    """A new default server needs a restricted configuration (or a reason it stays off)."""
    from codeward.daemon.lsp.restricted import PROFILES, NotInRestrictedMode, codeward_python

    servers = default_servers()
    assert set(PROFILES) == set(servers)
    configs = {}
    for name, config in servers.items():
        try:
            configs[name] = restricted(name, config, project)
        except NotInRestrictedMode as exc:
            refused = ("elixir-ls", "lexical", "pyrefly", "typescript-language-server")
            assert name in refused, (name, exc)
    python = configs["basedpyright"].settings["python"]
    assert python["pythonPath"] == codeward_python() and "venvPath" not in python
    assert os.path.isabs(python["pythonPath"]) and os.access(python["pythonPath"], os.X_OK)
    assert configs["gopls"].env["GOTOOLCHAIN"] == "local"
    assert configs["gopls"].settings["gopls"]["env"]["CGO_ENABLED"] == "0"
    assert configs["ruff"].settings == servers["ruff"].settings
    assert not any("query-driver" in arg for arg in configs["clangd"].command)
    svelte = configs["svelte-language-server"]
    off = {"svelte": {"plugin": SVELTE_OFF}}
    assert svelte.init_options == {"isTrusted": False, "configuration": off}
    assert svelte.settings == off  # sent again after initialize: user settings cannot undo it
    java = configs["jdtls"].init_options["settings"]["java"]["import"]  # type: ignore[index]
    assert java["gradle"]["enabled"] is False and java["maven"]["enabled"] is False
    assert configs["jdtls"].settings["java"]["import"] == java
    jedi = configs["jedi-language-server"].init_options["workspace"]  # type: ignore[index]
    assert jedi["environmentPath"] == codeward_python()
    pylsp = configs["pylsp"].settings["pylsp"]
    assert pylsp["plugins"]["jedi"]["environment"] == codeward_python()
    assert pylsp["signature"] == {"formatter": None}


def test_every_tool_but_git_and_lua_says_restricted() -> None:
    """The README's claim: every tool that asks a language server marks its result (a
    script's calls mark their own)."""
    import codeward.daemon.tools.all  # noqa: F401
    from codeward.daemon.tools.registry import REGISTRY

    assert {t.name for t in REGISTRY if not t.servers} == {"git_command", "run_lua"}


async def test_trusting_during_a_request_fails_it_cleanly(
    open_client: OpenClient, project: Path, daemon_config: Config, logs: dict[str, Path]
) -> None:
    """A request in flight when the servers restart fails with lsp_error; nothing hangs."""
    write(project, {"a.silent": "x\n"})
    client = await open_client(project)
    with trio.fail_after(30):
        assert (await client.tool("get_diagnostics", path="a.silent"))["restricted"] is True
    (session,) = (await client.call("session/list"))["sessions"]
    failures: list[RpcFailure] = []

    async def slow_hover() -> None:
        with pytest.raises(RpcFailure) as info:
            await client.tool("get_hover_info", path="a.silent", line=1, character=1)
        failures.append(info.value)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_hover)
            await trio.testing.wait_all_tasks_blocked(0.05)
            result = await client.call("trust/set", {"root": str(project)})
    assert result["restarted"] == [session["id"]]
    assert len(failures) == 1 and failures[0].kind == "lsp_error"
    with trio.fail_after(30):
        assert "restricted" not in await client.tool("get_diagnostics", path="a.silent")


def test_the_daemons_own_installation_may_lie_in_the_root() -> None:
    """codeward's own repository, with the daemon's virtualenv inside it, as a root: the
    servers of that virtualenv are the daemon's own, not the project's."""
    prefix = Path(os.path.realpath(sys.prefix))
    root = prefix.parent
    config = restricted("ruff", default_servers()["ruff"], root)
    assert os.path.isabs(config.command[0])
    entries = config.env["PATH"].split(os.pathsep)
    assert all(not e.startswith(str(root)) or e.startswith(str(prefix)) for e in entries)
