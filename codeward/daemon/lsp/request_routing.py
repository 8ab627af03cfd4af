"""Where a request goes and what the servers offer, as the service answers it:
`route(language, method)` (the name
of the first server of the language offering it, started), `supports(server, method)`
(now, no wait), `offers(server, method)` (started on need), `capabilities_of(languages)`
(each server started: its static capabilities as it sent them, its encoding and
`supports(method)`, for an editor's `initialize`) and `indexing(server)`.

`RequestRouting` is the part of `service.LanguageService` (one of its bases) that asks the
pool's servers what they offer: its methods are the service's own, the state they share
declared below."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from codeward.daemon.lsp.answers import Offer
from codeward.daemon.lsp.routing import unsupported
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.preview import Gate
    from codeward.daemon.lsp.routing import Languages
    from codeward.daemon.lsp.server import LanguageServer


class RequestRouting:
    """The routing of a service's requests and what its servers offer (a base of
    `LanguageService`, which gives the state below)."""

    if TYPE_CHECKING:
        gate: Gate
        pool: ServerPool
        languages: Languages

    async def route(self, language: str, method: str) -> str:
        """The name of the first server of `language` (routing order) offering `method`."""
        return (await self._route(language, method)).name

    async def _route(self, language: str, method: str) -> LanguageServer:
        """The first server of `language` (routing order) that offers `method`, started.

        A server that is missing or failed ends the search when it would offer `method`
        (as it did when it last ran, or when it never ran): its error is the answer, not
        another server's weaker one (with the later servers that are not installed either)."""
        errors: list[ToolError] = []
        names = self.languages.servers(language)
        blocked = False  # a server that would own `method` failed: no later one answers
        for name in names:
            if blocked:
                error = self.pool.unavailable(name, language)
                if error is not None:
                    errors.append(error)
                continue
            try:
                server = await self.pool.started(name, language)
            except ToolError as exc:
                errors.append(exc)
                blocked = self.pool.may_offer(name, method)
                continue
            if await server.offers(method):
                return server
        if errors:
            raise self.pool.missing(errors, names)
        raise unsupported(method, names, language)

    def supports(self, server: str, method: str) -> bool:
        """Whether server `server` offers `method` now (no wait for a registration)."""
        actor = self.pool.servers.get(server)
        return actor is not None and actor.capabilities.supports(method)

    async def offers(self, server: str, method: str) -> bool:
        """Whether server `server` (started on need) offers `method`."""
        return await (await self.pool.started(server)).offers(method)

    async def capabilities_of(self, languages: Sequence[str]) -> list[Offer]:
        """The servers of `languages` (routing order, each once), started together: what
        each offers, for an editor's `initialize`. A server that cannot start is left out."""
        names = self.languages.servers_of(languages)
        offers: list[Offer | None] = [None] * len(names)

        async def one(i: int, name: str) -> None:
            with contextlib.suppress(ToolError):
                server = await self.pool.started(name)
                data = server.capabilities.static_data()
                offers[i] = Offer(name, data, server.encoding, server.capabilities.supports)

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for i, name in enumerate(names):
                nursery.start_soon(one, i, name)
        return [offer for offer in offers if offer is not None]

    def indexing(self, server: str) -> bool:
        """Whether server `server` is not ready (an index still loading, as its readiness
        policy tells: work-done progress for most)."""
        actor = self.pool.servers.get(server)
        return actor is not None and not actor.ready
