"""What the service's requests hand back and take: a server's `Answer` (with the service it
came through, for positions in client terms and follow-ups), the `DocumentContext` a params
builder is given, and what a server `Offer`s (an editor's `initialize`).

The service's interface (`service.__all__`) names them; its parts build them."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.types import PositionLike, RangeLike
from codeward.daemon.lsp.uris import real_path
from codeward.protocol.errors import ToolError

Versions = dict[Path, tuple[int, str]]  # canonical path -> (version, content hash)
# one request of `request_together`: (method, params builder, result type)
Ask = tuple[str, Callable[["DocumentContext"], Any], Any]
# a server's own edit during a command: (WorkspaceEdit, its encoding, its documents) -> answer
OnEdit = Callable[[Any, Encoding, Versions], Awaitable[None]]


class Asker(Protocol):
    """What an answer needs of the service it came through (the service is one: no import
    back up)."""

    def to_client(
        self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
    ) -> tuple[int, int]: ...

    async def ask(
        self, server: str, method: str, params: Any, *, result_type: Any = Any
    ) -> Answer: ...


@dataclass(frozen=True)
class Offer:
    """What one running server offers: its static capabilities as it sent them (JSON
    data), its position encoding, and `supports(method)` (dynamic registrations too)."""

    server: str
    capabilities: dict[str, Any]
    encoding: Encoding
    supports: Callable[[str], bool]


@dataclass
class DocumentContext:
    """What a params builder needs: the synced document and the server's position encoding."""

    server: str
    path: Path
    uri: str
    text: str
    version: int
    encoding: Encoding
    index: LineIndex

    @property
    def text_document(self) -> dict[str, str]:
        return {"uri": self.uri}

    def position(self, line: int, character: int) -> dict[str, int]:
        """An LSP Position from 1-based line and character in code points."""
        return self.index.to_server(line, character, self.encoding)

    def range(self, line: int, character: int, end_line: int, end_character: int) -> dict[str, Any]:
        return {
            "start": self.position(line, character),
            "end": self.position(end_line, end_character),
        }


@dataclass
class Answer:
    server: str
    result: Any
    partial: bool
    encoding: Encoding
    service: Asker = field(repr=False)
    # with `snapshot=True`: the server's open documents when it was asked (see `snapshot`)
    versions: Versions | None = field(default=None, repr=False)

    def point(self, uri: str, position: PositionLike | dict[str, int]) -> tuple[int, int]:
        """1-based (line, character) in code points of a server position in `uri`."""
        return self.service.to_client(uri, position, self.encoding)

    def span(self, uri: str, rng: RangeLike | dict[str, Any]) -> tuple[int, int, int, int]:
        """1-based (line, character, end_line, end_character) of a server range in `uri`."""
        if isinstance(rng, dict):
            start, end = rng["start"], rng["end"]
        else:
            start, end = rng.start, rng.end
        return (*self.point(uri, start), *self.point(uri, end))

    def follow(self, method: str, params: Any, *, result_type: Any = Any) -> Awaitable[Answer]:
        """A follow-up request to the server that gave this answer (`callHierarchy/...`,
        `codeAction/resolve`), as that server computes it: the service's coroutine, handed
        over (the answer is no step of the request's line)."""
        return self.service.ask(self.server, method, params, result_type=result_type)


def joined(first: Answer, more: Sequence[Answer | ToolError]) -> Answer:
    """`first` with the list results of `more` (answers of the same server) added to its
    own, each item once."""
    items: list[Any] = list(first.result or [])
    seen = {msgspec.json.encode(item) for item in items}
    for answer in more:
        if isinstance(answer, ToolError) or not isinstance(answer.result, list):
            continue
        for item in answer.result:
            key = msgspec.json.encode(item)
            if key not in seen:
                seen.add(key)
                items.append(item)
    return dataclasses.replace(first, result=items)


def versions_of(documents: Sequence[Document]) -> Versions:
    """Documents by canonical path: (version, content hash)."""
    return {Path(real_path(d.path)): (d.version, d.hash) for d in documents}
