"""The connection, its handlers, the MCP dialect, the daemon and the protocol import in one
direction (server -> handlers -> connection -> requests, dialects -> mcp; protocol/ below
them all); imports under TYPE_CHECKING and inside functions count."""

from __future__ import annotations

from tests.test_import_rules import _circles, _graph

CONNECTION_SIDE = (
    "codeward.daemon.server",
    "codeward.daemon.handlers",
    "codeward.daemon.connection",
    "codeward.daemon.requests",
    "codeward.daemon.dispatch",
    "codeward.daemon.turns",
    "codeward.daemon.handoff",
    "codeward.daemon.dialects",
    "codeward.daemon.mcp",
    "codeward.daemon.outbox",
    "codeward.daemon.listener",
    "codeward.protocol",
    "codeward.client",
)


def test_the_connection_side_has_no_import_circles() -> None:
    graph = _graph()
    assert "codeward.daemon.connection" in graph["codeward.daemon.handlers"]
    assert "codeward.daemon.handlers" in graph["codeward.daemon.server"]
    assert "codeward.daemon.requests" in graph["codeward.daemon.connection"]
    assert "codeward.daemon.mcp" in graph["codeward.daemon.dialects"]
    through = [c for c in _circles(graph) if any(m.startswith(CONNECTION_SIDE) for m in c)]
    assert through == []
