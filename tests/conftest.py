"""Shared fixtures: an in-process daemon on a private socket, and clients for it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
import trio

import codeward.daemon.tools.all  # noqa: F401  (registers every tool)
from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.server import Daemon
from codeward.daemon.tools.registry import Tool, ToolContext
from codeward.protocol.framing import Framing
from codeward.protocol.outputs import OUTPUT_SCHEMAS
from tests.git_repos import git_identity
from tests.leaks import become_subreaper, leftovers
from tests.lsp_support import require
from tests.rpc import RpcClient, ServerRequestHandler, connect

SUBREAPER = become_subreaper()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `servers(NAME...)` fails, naming the install command, when one of
    those real servers is missing."""
    for mark in item.iter_markers("servers"):
        require(*mark.args)


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    """Every process a test started is gone when it ends (orphans included)."""
    yield
    leaked = leftovers()
    assert not leaked, f"processes left behind: {leaked}"


@pytest.fixture(autouse=True)
def private_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: Any) -> Path:
    """`$XDG_CONFIG_HOME` of the test's own (the daemon's trusted.toml lives there): no
    test reads or changes the user's trusted roots, and every root starts untrusted; git
    finds the suite's identity there."""
    for name in list(os.environ):
        if name.startswith("GIT_"):  # e.g. GIT_CONFIG_GLOBAL, which hides the identity
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("config-home")
    git_identity(home)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


_VALIDATORS = {
    name: jsonschema.Draft202012Validator(schema) for name, schema in OUTPUT_SCHEMAS.items()
}


@pytest.fixture(autouse=True)
def results_fit_their_output_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every tool result a test's daemon returns, by any path (socket, MCP, Lua), is valid
    against the tool's `outputSchema`, as an MCP client checks it."""
    finish = Tool.finish
    misfits: list[str] = []

    def checked(tool: Tool, ctx: ToolContext, result: dict[str, Any]) -> dict[str, Any]:
        done = finish(tool, ctx, result)
        validator = _VALIDATORS.get(tool.name)
        if validator is not None:
            misfits.extend(
                f"{tool.name}: {error.message} at {list(error.absolute_path)}"
                for error in validator.iter_errors(msgspec.to_builtins(done))
            )
        return done

    monkeypatch.setattr(Tool, "finish", checked)
    yield
    assert not misfits, misfits


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short private directory (AF_UNIX paths are limited to 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
    try:
        yield path / "run"
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def daemon_config() -> Config:
    return Config(daemon=DaemonConfig(idle_timeout=600.0))


@pytest.fixture
async def daemon(
    nursery: trio.Nursery, socket_dir: Path, daemon_config: Config
) -> AsyncIterator[Daemon]:
    """A daemon serving on `socket_dir/codeward.sock`, stopped after the test."""
    d = Daemon(daemon_config, socket_dir / "codeward.sock")
    await nursery.start(d.run)
    yield d
    d.request_stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return Path(os.path.realpath(root))


OpenClient = Callable[..., Awaitable[RpcClient]]


@pytest.fixture
async def open_client(nursery: trio.Nursery, daemon: Daemon) -> OpenClient:
    """Connect a client; with `root`, open (or attach to) that root's session."""

    async def open_(
        root: Path | None = None,
        *,
        framing: Framing = Framing.NDJSON,
        on_request: ServerRequestHandler | None = None,
        capabilities: dict[str, Any] | None = None,
        policy: dict[str, Any] | None = None,
    ) -> RpcClient:
        client = await connect(nursery, daemon.socket_path, framing, on_request)
        if capabilities is not None:
            await client.call("initialize", {"capabilities": capabilities})
        if root is not None:
            params: dict[str, Any] = {"root": str(root)}
            if policy is not None:
                params["policy"] = policy
            await client.call("session/open", params)
        return client

    return open_


@pytest.fixture
async def client(open_client: OpenClient, project: Path) -> RpcClient:
    """A client bound to the session of `project`."""
    return await open_client(project)


def config_with(**sections: Any) -> Config:
    """A Config with some sections replaced, e.g. config_with(policy=PolicyConfig(...))."""
    return msgspec.structs.replace(Config(), **sections)
