"""LSP shapes on msgspec Structs, for the hot bulky answers (thousands of locations, decoded
straight from the raw result); every other shape is an lsprotocol type (`lsp.shapes`)."""

from __future__ import annotations

from typing import Protocol

from msgspec import Struct


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


class DiagnosticLike(Protocol):
    """A diagnostic as the answers show it: an lsprotocol `Diagnostic`, or one kept for
    later calls (`coverage.Kept`)."""

    @property
    def range(self) -> RangeLike: ...
    @property
    def severity(self) -> int | None: ...
    @property
    def message(self) -> str: ...
    @property
    def code(self) -> int | str | None: ...
    @property
    def source(self) -> str | None: ...


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


SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
SEVERITY_RANKS = {name: rank for rank, name in SEVERITY_NAMES.items()}


class SymbolLocation(Struct, gc=False):
    """A workspace symbol's `Location`, or a `WorkspaceSymbol`'s file alone (no range)."""

    uri: str
    range: Range | None = None


class Symbol(Struct, gc=False, rename="camel"):
    """A `SymbolInformation` or a `WorkspaceSymbol` (a workspace/symbol answer holds hundreds:
    the fields the tools show, read straight from the JSON)."""

    name: str
    kind: int
    location: SymbolLocation
    container_name: str | None = None
