"""The ToolError for a request to a language server that failed: stopped, refused, broken,
timed out or given up on, and for a command the server stopped in while it ran (saying
whether edits it asked for were written). A server an answer shows broken
(`broken_when`) is restarted: `restarting=True`, callers retry once. And the service's
view of a failure: whether it is worth asking again once (`worth_retrying`), a timeout
saying how long the caller waited in all (`timed_out`), the place of a request not
awaited (`unawaited`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from codeward.daemon.lsp.connection import (
    CONTENT_MODIFIED,
    REQUEST_CANCELLED,
    SERVER_CANCELLED,
    ConnectionClosed,
    ResponseError,
    Unawaited,
)
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.config import ServerConfig
    from codeward.daemon.lsp.capture import EditCapture
    from codeward.daemon.lsp.connection import LspConnection

METHOD_NOT_FOUND = -32601
# Error codes of an answer worth one more try: the content changed, or the server cancelled
# the request itself (codeward's own cancellations never come back as answers).
RETRIED_CODES = frozenset({CONTENT_MODIFIED, REQUEST_CANCELLED, SERVER_CANCELLED})


class Failing(Protocol):
    """The server a request failed on (its actor)."""

    name: str
    root: Path

    @property
    def config(self) -> ServerConfig: ...

    def halt(self, reason: str, *, park: bool = False, graceful: bool = True) -> None: ...


def request_failure(server: Failing, method: str, exc: Exception, timeout: float) -> ToolError:
    """The ToolError for a request that failed with `exc` (a server broken by it is
    restarted: `restarting=True`, callers retry once)."""
    if isinstance(exc, Unawaited):
        return ToolError(
            ErrorKind.CANCELLED,
            f"{method} was not awaited: the answer sent with it was enough.",
            server=server.name,
        )
    if isinstance(exc, ConnectionClosed):
        return ToolError(
            ErrorKind.LSP_ERROR,
            f"The {server.name} language server stopped during {method} "
            f"({scrub(exc.reason, server.root)}); it restarts by itself, so retry.",
            server=server.name,
        )
    if isinstance(exc, ResponseError):
        message = scrub(exc.message, server.root)
        if exc.code == METHOD_NOT_FOUND:  # offered, yet not there (clangd 14's typeHierarchy)
            return ToolError(
                ErrorKind.UNSUPPORTED_BY_SERVER,
                f"The {server.name} language server does not offer {method}: it answered "
                "that it has no such method; use another tool, or configure a server "
                "that offers it.",
                server=server.name,
                servers=[server.name],
                method=method,
                capability=method,
            )
        if any(text in exc.message for text in server.config.broken_when):
            server.halt(f"it broke answering {method} ({message})")
            return ToolError(
                ErrorKind.LSP_ERROR,
                f"The {server.name} language server broke answering {method} ({message}); "
                "it is restarting, so retry.",
                server=server.name,
                restarting=True,
            )
        return ToolError(
            ErrorKind.LSP_ERROR,
            f"The {server.name} language server could not answer {method}: {message}.",
            server=server.name,
            code=exc.code,
        )
    return ToolError(
        ErrorKind.TIMEOUT,
        f"The {server.name} language server did not answer {method} within "
        f"{timeout:g} s; retry, or raise lsp.method_timeouts in the config.",
        server=server.name,
    )


def stopped_in_command(
    server: Failing, command: str, capture: EditCapture, conn: LspConnection
) -> ToolError:
    """The ToolError for `command`, which `server` stopped in while it ran (`conn` closed):
    whether edits it asked for were written."""
    written = (
        f"{capture.applied} edit(s) it asked for were written before; check them"
        if capture.applied
        else "nothing it asked for was written"
    )
    return ToolError(
        ErrorKind.LSP_ERROR,
        f"The {server.name} language server stopped while running its command {command!r} "
        f"({scrub(conn.close_reason, server.root)}): {written}. It restarts by itself; "
        "retry.",
        server=server.name,
        applied=capture.applied,
    )


def unawaited(method: str) -> ToolError:
    """The place of a request not awaited (its answer not needed)."""
    return ToolError(ErrorKind.CANCELLED, f"{method} was not awaited: an answer was enough.")


def worth_retrying(result: Any) -> bool:
    """Whether a request failed in a way worth asking again once: the server answered that
    the content changed or that it cancelled the request itself, or it broke and restarts."""
    return isinstance(result, ToolError) and (
        result.details.get("code") in RETRIED_CODES or bool(result.details.get("restarting"))
    )


def timed_out(server: str, method: str, waited: float, ready: float) -> ToolError:
    """A timeout that says how long the caller waited in all, readiness included."""
    readiness = f", {round(ready):g} s of it for the server to be ready" if ready >= 1 else ""
    return ToolError(
        ErrorKind.TIMEOUT,
        f"The {server} language server did not answer {method} within "
        f"{round(waited, 1):g} s{readiness}; retry, or raise lsp.method_timeouts "
        "(or lsp.ready_timeout) in the config.",
        server=server,
    )
