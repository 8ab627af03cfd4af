"""What a language server offers, as its actor answers it: its position `encoding`, whether
it `pulls_diagnostics`, `may_offer(method)` (what it offered when it last ran),
`offers_now(method)` (no wait: None while a registration may still come) and
`await offers(method)` (a server that started moments ago gets `REGISTRATION_GRACE`
seconds to register it dynamically), and `wait_for(predicate, timeout)`.

`ServerOffers` is the part of `server.LanguageServer` (one of its bases) over its
`Capabilities`: its methods are the actor's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from codeward.daemon.config import LspConfig, ServerConfig
    from codeward.daemon.lsp.capabilities import Capabilities
    from codeward.daemon.lsp.changes import Changes
    from codeward.daemon.lsp.positions import Encoding
    from codeward.daemon.lsp.supervisor import Supervisor

REGISTRATION_GRACE = 2.0  # seconds a new server may take to register its capabilities


class ServerOffers:
    """What a server's actor says it offers (a base of `LanguageServer`, which gives the
    state below)."""

    if TYPE_CHECKING:
        capabilities: Capabilities
        lsp: LspConfig
        _life: Supervisor
        _changes: Changes

        @property
        def config(self) -> ServerConfig: ...

    @property
    def encoding(self) -> Encoding:
        return self.capabilities.position_encoding

    @property
    def pulls_diagnostics(self) -> bool:
        return self.capabilities.supports("textDocument/diagnostic")

    def may_offer(self, method: str) -> bool:
        """Whether it would serve `method` if it ran: what it offered when it last ran, else
        assumed (its error then stands for the method)."""
        if self.capabilities.static:
            return self.capabilities.supports(method)
        return True

    def offers_now(self, method: str) -> bool | None:
        """Whether it offers `method` as `offers` would say without waiting; None while a
        registration may still come (`offers` would wait for it)."""
        if self.capabilities.supports(method):
            return True
        expected = self.capabilities.registered_as(method) in self.config.registers
        wait = self.lsp.ready_timeout if expected else REGISTRATION_GRACE
        return None if self._life.running_since + wait > trio.current_time() else False

    async def offers(self, method: str) -> bool:
        """Whether the running server offers `method`; a server that started moments ago
        gets `REGISTRATION_GRACE` seconds to register it dynamically, or `lsp.ready_timeout`
        for a method its config says it registers (its registration follows a settings
        round trip, which a loaded machine can stretch past any short grace)."""
        if self.capabilities.supports(method):  # the common case: no wait, no clock
            return True
        expected = self.capabilities.registered_as(method) in self.config.registers
        wait = self.lsp.ready_timeout if expected else REGISTRATION_GRACE
        grace = self._life.running_since + wait - trio.current_time()
        return await self._changes.wait_for(
            lambda: self.capabilities.supports(method), max(grace, 0)
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Whether `predicate` came true within `timeout` (checked after every change)."""
        return await self._changes.wait_for(predicate, timeout)
