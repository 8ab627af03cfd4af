"""A file's diagnostics asked of tsserver itself, through typescript-language-server.

typescript-language-server publishes a file's diagnostics in stages, one push per kind
tsserver reports (syntax first, within 50 ms, then semantic errors and suggestions once
checked), and nothing says which push is the last: the first push after an edit is often
`[]` for a file full of type errors. Its `typescript.tsserverRequest` command asks tsserver
for each kind synchronously instead: a pull that answers for the content it was sent.
tsserver counts lines and offsets from 1, offsets in UTF-16 code units.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from lsprotocol import types as lsp

from codeward.daemon.lsp.shapes import unstructure
from codeward.protocol.errors import ErrorKind, ToolError

COMMAND = "typescript.tsserverRequest"
KINDS = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync")
SEVERITY = {"error": 1, "warning": 2, "message": 3, "suggestion": 4}


class Location(msgspec.Struct):
    line: int
    offset: int


class TsDiagnostic(msgspec.Struct, rename="camel"):
    start: Location
    end: Location
    text: str
    code: int | None = None
    category: str = "error"
    reports_unnecessary: Any = None
    reports_deprecated: Any = None
    source: str | None = None


class Response(msgspec.Struct):
    success: bool = False
    body: list[TsDiagnostic] | None = None
    message: str | None = None


def _position(location: Location) -> lsp.Position:
    return lsp.Position(max(location.line - 1, 0), max(location.offset - 1, 0))


def _flag(value: Any) -> bool:
    """tsserver marks `reportsUnnecessary` / `reportsDeprecated` with `true` or `{}`."""
    return value is not None and value is not False


def to_lsp(item: TsDiagnostic) -> lsp.Diagnostic:
    tags = (
        [lsp.DiagnosticTag.Unnecessary]
        if _flag(item.reports_unnecessary)
        else [lsp.DiagnosticTag.Deprecated]
        if _flag(item.reports_deprecated)
        else None
    )
    return lsp.Diagnostic(
        range=lsp.Range(_position(item.start), _position(item.end)),
        message=item.text,
        severity=lsp.DiagnosticSeverity(SEVERITY.get(item.category, 1)),
        code=item.code,
        source=item.source or "typescript",
        tags=tags,
    )


async def diagnostics(
    request: Callable[..., Awaitable[Any]], path: str, timeout: float
) -> list[lsp.Diagnostic] | None:
    """tsserver's syntax, semantic and suggestion diagnostics of the open file `path`, in
    that order (as typescript-language-server would publish them); None when tsserver
    refused one of the requests, or the server has no such command (its pushes are then
    the answer)."""
    found: list[lsp.Diagnostic] = []
    for kind in KINDS:
        try:
            response = await request(
                "workspace/executeCommand",
                unstructure(lsp.ExecuteCommandParams(COMMAND, arguments=[kind, {"file": path}])),
                timeout=timeout,
                result_type=Response | None,
            )
        except ToolError as exc:
            if exc.kind is ErrorKind.LSP_ERROR and "code" in exc.details:
                return None  # an error answer: not this server's command after all
            raise
        if response is None or not response.success:
            return None
        found.extend(to_lsp(item) for item in response.body or ())
    return found
