"""LSP shapes on msgspec Structs, for the hot and the frequent messages (not cattrs)."""

from __future__ import annotations

from typing import Any, Protocol

from msgspec import UNSET, Struct


class PositionLike(Protocol):
    """A Position as a Struct here or as an lsprotocol type."""

    @property
    def line(self) -> int: ...
    @property
    def character(self) -> int: ...


class RangeLike(Protocol):
    """A Range as a Struct here or as an lsprotocol type."""

    @property
    def start(self) -> PositionLike: ...
    @property
    def end(self) -> PositionLike: ...


# Locations come by the thousand (references): untracked by the garbage collector (they
# hold no containers, so no cycles), they decode about ten times faster.
class Position(Struct, gc=False):
    line: int
    character: int


class Range(Struct, gc=False):
    start: Position
    end: Position


class Location(Struct, gc=False):
    uri: str
    range: Range


class Diagnostic(Struct, rename="camel"):
    range: Range
    message: str
    severity: int | None = None
    code: int | str | None = None
    source: str | None = None
    tags: list[int] | None = None
    data: Any = UNSET


class PublishDiagnosticsParams(Struct):
    uri: str
    diagnostics: list[Diagnostic]
    version: int | None = None


class DocumentDiagnosticReport(Struct, rename="camel"):
    kind: str
    items: list[Diagnostic] = []
    result_id: str | None = None
    related_documents: dict[str, Any] | None = None


class WorkspaceDocumentReport(Struct, rename="camel"):
    uri: str
    kind: str
    items: list[Diagnostic] = []
    version: int | None = None
    result_id: str | None = None


class WorkspaceDiagnosticReport(Struct):
    items: list[WorkspaceDocumentReport] = []


class ProgressParams(Struct):
    token: int | str
    value: Any


class WorkDoneProgressCreateParams(Struct):
    token: int | str


class ConfigurationItem(Struct, rename="camel"):
    scope_uri: str | None = None
    section: str | None = None


class ConfigurationParams(Struct):
    items: list[ConfigurationItem]


class LogMessageParams(Struct):
    type: int
    message: str


SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
SEVERITY_RANKS = {name: rank for rank, name in SEVERITY_NAMES.items()}
