"""The daemon-wide caps on live language servers and on sessions with live servers.

Before a server starts, `admit` makes room: while starting it would exceed
`daemon.max_servers` (or make one session too many have live servers, beyond
`daemon.max_sessions`), the least recently used other session with no request in flight has
its servers stopped (but those it shares with other roots: another may be using them).
They start again on that session's next request. When every other session is busy, the
server starts anyway (a cap never fails a request). A process several roots share counts
once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from codeward.daemon.config import DaemonConfig

if TYPE_CHECKING:
    from codeward.daemon.lsp.server import LanguageServer

log = logging.getLogger("codeward.lsp")


class Servers(Protocol):
    """A session's server actors (its `pool.ServerPool`)."""

    @property
    def servers(self) -> dict[str, LanguageServer]: ...

    def live(self) -> list[LanguageServer]: ...

    def parkable(self) -> list[LanguageServer]: ...


class Pool(Protocol):
    """What the budget needs of a session's language servers (a LanguageService)."""

    @property
    def busy(self) -> bool: ...

    @property
    def last_used(self) -> float: ...

    @property
    def pool(self) -> Servers: ...

    def park(self, reason: str) -> None: ...


class ServerBudget:
    def __init__(self, limits: DaemonConfig) -> None:
        self.limits = limits
        self.managers: set[Pool] = set()

    def live(self) -> int:
        """Live server processes (one shared by several sessions counts once)."""
        return len({id(s) for m in self.managers for s in m.pool.live()})

    def admit(self, server: LanguageServer) -> None:
        """Make room for `server`, about to start, by parking idle sessions' servers."""
        owner = next((m for m in self.managers if m.pool.servers.get(server.name) is server), None)
        while self._over(owner, server):
            victims = [
                m for m in self.managers if m is not owner and m.pool.parkable() and not m.busy
            ]
            if not victims:
                log.warning("more live servers than the daemon's caps: every session is busy")
                return
            victim = min(victims, key=_recency)
            victim.park(
                "stopped to stay within daemon.max_servers and daemon.max_sessions; "
                "it starts again on the session's next request"
            )

    def _over(self, owner: Pool | None, server: LanguageServer) -> bool:
        live = {id(s) for m in self.managers for s in m.pool.live() if s is not server}
        if len(live) + 1 > self.limits.max_servers:
            return True
        sessions = {id(m) for m in self.managers if any(s is not server for s in m.pool.live())}
        sessions.add(id(owner))
        return len(sessions) > self.limits.max_sessions


def _recency(service: Pool) -> float:
    return max([service.last_used, *(s.last_used for s in service.pool.servers.values())])
