"""What the daemon gives its connections: the methods they run (`Dispatch`) and the daemon
as they and their handlers see it (`Host`). Imports no connection, handler or server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

import trio

from codeward.daemon.config import Config
from codeward.protocol.messages import Incoming

if TYPE_CHECKING:
    from codeward.daemon.session import SessionManager

ConnectionT = TypeVar("ConnectionT")


class Dispatch(NamedTuple, Generic[ConnectionT]):
    """What a connection runs (given by the daemon, so a connection imports no handler)."""

    handlers: Mapping[str, Callable[[ConnectionT, Incoming], Awaitable[Any]]]
    # Requests that change the connection's state: they take effect before any later one.
    stateful: frozenset[str]
    # Whether a request runs to completion when its client disconnects.
    outlives_client: Callable[[Incoming], bool]
    # Requests answered while the daemon still loads its sessions and tools (the others
    # wait for `Host.loaded`).
    early: frozenset[str] = frozenset()


class Host(Protocol):
    """The daemon, as its connections and their handlers see it."""

    config: Config
    sessions: SessionManager
    dispatch: Dispatch[Any]
    sessions_loaded: trio.Event  # set once `sessions` is there
    loaded: trio.Event  # set once `sessions` and the tools are there

    def status(self) -> dict[str, Any]: ...

    def start_early(self, root: str) -> None:
        """Start `root`'s main servers' processes while the sessions still load."""
        ...

    def request_stop(self) -> None: ...
