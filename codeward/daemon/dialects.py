"""Which dialect a connection speaks, chosen by its first frame: MCP (`codeward mcp`), the
editor's LSP (`codeward lsp`), or none (the daemon's own JSON-RPC)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

import trio

from codeward.daemon.mcp import McpDialect
from codeward.protocol import lsp, mcp
from codeward.protocol.framing import Framing

if TYPE_CHECKING:
    from codeward.daemon.dispatch import Host
    from codeward.daemon.editor.dialect import EditorDialect
    from codeward.daemon.editor.dialect import Link as EditorLink
    from codeward.daemon.mcp import Link as McpLink

    class Link(McpLink, EditorLink, Protocol):
        """A connection, as either dialect sees it."""

        @property
        def daemon(self) -> Host: ...


EDITOR_DIALECT = "codeward.daemon.editor.dialect"
_editor_class: type[EditorDialect] | None = None  # once its module is imported (whole)


async def open_dialect(
    conn: Link, framing: Framing | None, frame: bytes
) -> tuple[McpDialect | None, EditorDialect | None]:
    """The dialect `frame`, the connection's first, opens (MCP's or the editor's), if any."""
    if framing is Framing.NDJSON and mcp.is_opening(frame):
        return McpDialect(conn), None
    if framing is Framing.CONTENT_LENGTH and lsp.is_opening(frame):
        return None, await _editor_dialect(conn)
    return None, None


async def _editor_dialect(conn: Link) -> EditorDialect:
    """The LSP dialect for an editor's connection. Its modules need lsprotocol and the
    language-server layer: imported in a worker thread once the sessions' modules are
    there, never on the event loop (a daemon still starting keeps answering meanwhile);
    once they are, the next editors' connections open it with no hop to a thread."""
    global _editor_class
    dialect = _editor_class
    if dialect is None or not conn.daemon.sessions_loaded.is_set():
        await conn.daemon.sessions_loaded.wait()
        module = await trio.to_thread.run_sync(importlib.import_module, EDITOR_DIALECT)
        dialect = _editor_class = module.EditorDialect
    return dialect(conn)
