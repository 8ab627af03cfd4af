"""The server actors of one session: created on first need, started, looked for again when
missing, restarted when the root's trust changes. A server that serves several workspace
folders well is joined where another root of the same repository runs it (`shared`)."""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import Config, ServerConfig
from codeward.daemon.lsp import restricted_effects
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.defaults import command_available, effective_servers
from codeward.daemon.lsp.restricted import NotInRestrictedMode
from codeward.daemon.lsp.restricted import restricted as restricted_config
from codeward.daemon.lsp.routing import missing
from codeward.daemon.lsp.server import LanguageServer, ServerState
from codeward.daemon.lsp.shared import SharedServers
from codeward.protocol.errors import ErrorKind, ToolError

LOOKUP_INTERVAL = 1.0  # a server that was not installed is looked for again at most this often


class ServerPool:
    """Server name -> its actor, each run in the nursery of `run` (set by the service)."""

    def __init__(
        self,
        root: Path,
        config: Config,
        on_progress: Callable[[dict[str, Any]], None],
        budget: ServerBudget | None,
        *,
        restricted: bool,
        shared: SharedServers | None = None,
        repository: str | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.on_progress = on_progress
        self.budget = budget
        self.restricted = restricted  # an untrusted root: servers start restricted
        self.shared = shared  # the daemon's shared processes
        self.repository = repository  # the root's git common directory, if it has one
        self.configs = effective_servers(config)
        self.servers: dict[str, LanguageServer] = {}
        self.nursery: trio.Nursery | None = None
        self._missing: dict[str, tuple[float, ToolError]] = {}  # not installed: when, why
        # what each server's restricted configuration takes away in this root, if anything
        self.effects: dict[str, str | None] = {}

    def status(self) -> list[dict[str, Any]]:
        return [server.status() for server in self.servers.values()]

    def live(self) -> list[LanguageServer]:
        return [s for s in self.servers.values() if s.live]

    def parkable(self) -> list[LanguageServer]:
        """Its live servers that serve no other root (a shared one may be busy for another)."""
        return [s for s in self.live() if len(s.roots) == 1]

    def park(self, reason: str) -> None:
        """Stop every live server that serves no other root; each starts again on its next
        need."""
        for server in self.parkable():
            server.halt(reason, park=True)

    def restart_failed(self) -> None:
        """Failed or missing servers start again on their next need."""
        for server in self.servers.values():
            server.retry()

    def server_for(self, name: str, language: str = "") -> LanguageServer:
        """The actor of server `name`, created (not started) on first use."""
        server = self.servers.get(name)
        if server is not None:
            return server
        config = self.configs.get(name)
        if config is None:
            raise ToolError(
                ErrorKind.LSP_UNAVAILABLE,
                f"No language server named {name!r} is configured; add it under [servers].",
                server=name,
            )
        if self.nursery is None:
            raise ToolError(
                ErrorKind.LSP_ERROR, "The session's language servers are stopped; open it again."
            )
        config = self._as_trusted(name, config)
        make = partial(self._new, name, config, language)
        shared, repository = self.shared, self.repository
        if config.folders and shared is not None and shared.running and repository is not None:
            key = (repository, name, msgspec.json.encode(config), self.restricted)
            server = shared.acquire(key, self.root, self.on_progress, make)
        else:
            server = make()
            self.nursery.start_soon(server.run)
        self.servers[name] = server
        return server

    def _new(self, name: str, config: ServerConfig, language: str) -> LanguageServer:
        server = LanguageServer(
            name,
            config,
            root=self.root,
            lsp=self.config.lsp,
            max_message=self.config.daemon.max_message_bytes,
            on_progress=self.on_progress,
            language=language or ",".join(config.languages),
            configured=name in self.config.servers,
        )
        if self.budget is not None:
            server.on_start = self.budget.admit
        return server

    def is_shared(self, server: LanguageServer) -> bool:
        return self.shared is not None and self.shared.shares(server)

    def _let_go(self, server: LanguageServer) -> bool:
        """This root is done with `server`: a shared one loses its folder (and stops with
        its last), any other stops. Whether it stops."""
        if self.shared is not None and self.shared.shares(server):
            return self.shared.release(server, self.root)
        server.stop()
        return True

    def release(self) -> None:
        """The session ends: its folder leaves every shared server (its own servers stop
        with its nursery)."""
        for name, server in list(self.servers.items()):
            if self.is_shared(server):
                del self.servers[name]
                self._let_go(server)

    def may_offer(self, name: str, method: str) -> bool:
        """Whether server `name` would serve `method` if it ran (assumed when it never ran)."""
        server = self.servers.get(name)
        return server is None or server.may_offer(method)

    def _as_trusted(self, name: str, config: ServerConfig) -> ServerConfig:
        """`config` as the root's trust allows: unchanged, or restricted (an untrusted root;
        `lsp_unavailable` for a server that does not start there)."""
        if not self.restricted:
            return config
        try:
            restricted = restricted_config(name, config, self.root)
        except NotInRestrictedMode as exc:
            self.effects[name] = f"does not start in an untrusted root: {exc}"
            raise ToolError(
                ErrorKind.LSP_UNAVAILABLE,
                f"The {name} language server does not start in an untrusted root: {exc}; "
                "trust the root (codeward trust) to use it.",
                server=name,
                restricted=True,
            ) from None
        self.effects[name] = restricted_effects.effect(name, config, self.root)
        return restricted

    async def started(self, name: str, language: str = "") -> LanguageServer:
        """The actor of server `name`, running (started on first need).

        A server that was not installed is looked for again, at most once per
        LOOKUP_INTERVAL: its default command is resolved anew (a `pip install` into the
        daemon's environment shows up without a restart) and the program searched for."""
        try:
            server = self.server_for(name, language)
        finally:
            self._consulted(name)
        if server.state is ServerState.UNAVAILABLE:
            self._look_again(server)
        try:
            await server.connection()
        except ToolError as exc:
            if exc.kind is ErrorKind.LSP_UNAVAILABLE:
                self._missing[name] = (trio.current_time(), exc)
            raise
        self._missing.pop(name, None)
        return server

    def routed_now(self, names: Sequence[str], method: str) -> LanguageServer | None:
        """The server `started` and `offers` would route `method` to among `names` (in
        routing order), when that needs no wait: the first one offering it, every one
        before it running and known not to; None otherwise (route the slow way)."""
        for name in names:
            server = self.servers.get(name)
            if server is None or not server.running:
                return None
            if self.restricted:
                self._consulted(name)
            offers = server.offers_now(method)
            if offers is None:
                return None
            if offers:
                return server
        return None

    def _consulted(self, name: str) -> None:
        """The call consulted server `name`: what its restriction changes here, recorded."""
        what = self.effects.get(name) if self.restricted else None
        if what:
            restricted_effects.record(name, what)

    def _look_again(self, server: LanguageServer) -> None:
        """Raise the last `lsp_unavailable` if it is recent, else refresh the command."""
        looked, error = self._missing.get(server.name, (-math.inf, None))
        if error is not None and trio.current_time() - looked < LOOKUP_INTERVAL:
            raise error
        importlib.invalidate_caches()  # a package installed since: importable now
        fresh = effective_servers(self.config).get(server.name)
        if fresh is not None:
            self.configs[server.name] = fresh
            fresh = self._as_trusted(server.name, fresh)
            if fresh.command != server.config.command:
                server.config = fresh

    def unavailable(self, name: str, language: str) -> ToolError | None:
        """The error of server `name` if it is not installed (or may not start here), looked
        up without starting it; None when it might start."""
        try:
            server = self.server_for(name, language)
        except ToolError as exc:
            return exc
        if not command_available(server.config.command, server.config.env):
            return server.unavailable()
        return None

    def missing(self, errors: Sequence[ToolError], names: Sequence[str]) -> ToolError:
        """The one error to raise when every server of `names` failed (see routing.missing)."""
        return missing(errors, names, self.configs)

    async def set_restricted(self, restricted: bool) -> None:
        """The root's trust changed: every server stops, and those that were running start
        again in the configuration of the new trust (restricted or normal)."""
        self.restricted = restricted
        self.effects.clear()
        old = dict(self.servers)
        self.servers.clear()  # the same table: the service's parts hold it
        active = [
            (name, server.language)
            for name, server in old.items()
            if server.state in (ServerState.STARTING, ServerState.RUNNING, ServerState.RESTARTING)
        ]
        stopping = [server for server in old.values() if self._let_go(server)]
        for server in stopping:
            await server.stopped.wait()
        for name, language in active:
            # one that does not start in this configuration: its tools say why
            with contextlib.suppress(ToolError):
                self.server_for(name, language).start()
