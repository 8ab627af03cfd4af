"""A file's diagnostics asked of tsserver itself, through typescript-language-server.

typescript-language-server publishes a file's diagnostics in stages, one push per kind
tsserver reports (syntax first, within 50 ms, then semantic errors and suggestions once
checked), and nothing says which push is the last: the first push after an edit is often
`[]` for a file full of type errors. Its `typescript.tsserverRequest` command asks tsserver
for each kind synchronously instead: a pull that answers for the content it was sent.
tsserver counts lines and offsets from 1, offsets in UTF-16 code units.
"""

from __future__ import annotations

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


Reply = Response | None  # the result type of one request


def requests(path: str) -> list[Any]:
    """The `workspace/executeCommand` params asking tsserver for the syntax, semantic and
    suggestion diagnostics of the open file `path`, in that order (as
    typescript-language-server would publish them): the actor sends each in turn."""
    return [
        unstructure(lsp.ExecuteCommandParams(COMMAND, arguments=[kind, {"file": path}]))
        for kind in KINDS
    ]


def not_its_command(error: ToolError) -> bool:
    """Whether a request failed with an error answer: not this server's command after all."""
    return error.kind is ErrorKind.LSP_ERROR and "code" in error.details


def diagnostics(reply: Reply) -> list[lsp.Diagnostic] | None:
    """The diagnostics of one reply; None when tsserver refused the request (the server's
    pushes are then the answer)."""
    if reply is None or not reply.success:
        return None
    return [to_lsp(item) for item in reply.body or ()]
