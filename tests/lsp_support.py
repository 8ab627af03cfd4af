"""Helpers for the language-server tests: a running LanguageService, the fake server, real ones."""

from __future__ import annotations

import functools
import json
import shutil
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
    """Fail, naming the install command, when a real server a test drives is missing:
    `make test` installs every one, so a missing server is a broken set-up, never a skip."""
    servers = default_servers()
    for name in names:
        config = servers[name]
        if not command_available(config.command, config.env):
            pytest.fail(f"{name} is not installed: {config.install_hint} (or `make test`)")


def needs(*names: str) -> pytest.MarkDecorator:
    """Mark a test that drives these real servers: it fails at set-up when one is missing
    (the `servers` marker; conftest calls `require`)."""
    return pytest.mark.servers(*names)


def real_config(**lsp: Any) -> Config:
    return Config(lsp=msgspec.structs.replace(LspConfig(), **lsp))


def have(program: str) -> bool:
    return shutil.which(program) is not None
