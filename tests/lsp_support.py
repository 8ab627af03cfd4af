"""Helpers for the language-server tests: a running LanguageService, the fake server, real ones."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon.config import Config, DaemonConfig, LanguageConfig, LspConfig, ServerConfig
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.defaults import command_available, default_servers
from codeward.daemon.lsp.service import LanguageService, SharedServers, repository_of
from codeward.servers import catalog, locate

FAKE = str(Path(__file__).with_name("fake_lsp_server.py"))


def fake_server(mode: str, log: Path | None = None) -> ServerConfig:
    command = [sys.executable, FAKE, mode] + ([str(log)] if log else [])
    # untrusted = "run": the fake runs nothing, so it may start in an untrusted root
    return ServerConfig(command=command, settings={"fake": {"answer": 42}}, untrusted="run")


def fake_config(
    servers: dict[str, ServerConfig], order: list[str] | None = None, **lsp: Any
) -> Config:
    """A Config where `*.fake` files go to `servers` (in `order`)."""
    return Config(
        lsp=LspConfig(**{"initialize_timeout": 5.0, "settle_timeout": 5.0, **lsp}),
        servers=servers,
        languages={
            "fake": LanguageConfig(
                patterns=["*.fake"], servers=order or list(servers), language_id="fake"
            )
        },
    )


def for_daemon(config: Config) -> Config:
    """`config` for a test daemon: one that does not stop itself while the tests run."""
    return msgspec.structs.replace(config, daemon=DaemonConfig(idle_timeout=600.0))


@asynccontextmanager
async def running(
    root: Path,
    config: Config,
    *,
    watch: bool = False,
    budget: ServerBudget | None = None,
    shared: SharedServers | None = None,
) -> AsyncIterator[tuple[LanguageService, list[dict[str, Any]]]]:
    """A started LanguageService for `root` (with `shared`: joining the repository's shared
    servers); everything it started is stopped on exit."""
    progress: list[dict[str, Any]] = []
    repository = repository_of(root) if shared is not None else None
    manager = LanguageService(
        root, config, progress.append, budget, shared=shared, repository=repository
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(manager.run, watch=watch))
        yield manager, progress
        nursery.cancel_scope.cancel()


def logged(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def methods(log: Path) -> list[str]:
    return [m.get("method", "<response>") for m in logged(log)]


def require(*names: str) -> None:
    """Fail, naming the install command, when a real server a test drives is missing, or
    one found on PATH does not run (a rustup proxy without a toolchain): `make test`
    installs every one, so a missing server is a broken set-up, never a skip."""
    servers = default_servers()
    for name in names:
        config = servers[name]
        if not command_available(config.command, config.env):
            pytest.fail(f"{name} is not installed: {config.install_hint} (or `make test`)")
        server = catalog.BY_NAME.get(name)
        if server is not None and server.source == "debian":
            why = _fails(config.command[0], server.version_args)
            if why:
                pytest.fail(f"{name} does not run: {why}; {config.install_hint} (or `make test`)")
    if "rust-analyzer" in names:
        working("cargo", CARGO_HINT)  # it loads a crate with `cargo metadata`
        working("rustfmt", RUSTFMT_HINT)  # and formats with rustfmt


CARGO_HINT = "install cargo: `sudo apt-get install cargo-web`, or `rustup default stable`"
RUSTFMT_HINT = "install rustfmt: `sudo apt-get install rustfmt-web`, or `rustup default stable`"


def working(program: str, install: str, args: tuple[str, ...] = ("--version",)) -> str:
    """`program` as the daemon finds it on PATH, once `program ARGS` runs here; else the
    test fails, saying what to install."""
    found = locate.on_path(program)
    if found is None:
        pytest.fail(f"{program} is not installed: {install} (or `make test`)")
    why = _fails(found, args)
    if why:
        pytest.fail(f"{program} does not run: {why}; {install} (or `make test`)")
    return found


def _fails(program: str, args: tuple[str, ...]) -> str:
    """Why `program ARGS` fails in this environment ("" when it runs), asked once."""
    keys = ("PATH", "HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_HOME")
    return _asked(program, args, tuple(os.environ.get(k, "") for k in keys))


@functools.cache
def _asked(program: str, args: tuple[str, ...], _environment: tuple[str, ...]) -> str:
    try:
        done = subprocess.run(
            [program, *args], capture_output=True, text=True, timeout=30, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{program} {' '.join(args)}: {exc}"
    if done.returncode == 0:
        return ""
    said = (done.stderr or done.stdout).strip().splitlines()
    return f"`{program} {' '.join(args)}` exited with {done.returncode}" + (
        f" ({said[0]})" if said else ""
    )


def needs(*names: str) -> pytest.MarkDecorator:
    """Mark a test that drives these real servers: it fails at set-up when one is missing
    (the `servers` marker; conftest calls `require`)."""
    return pytest.mark.servers(*names)


def real_config(**lsp: Any) -> Config:
    return Config(lsp=msgspec.structs.replace(LspConfig(), **lsp))


def have(program: str) -> bool:
    return shutil.which(program) is not None
