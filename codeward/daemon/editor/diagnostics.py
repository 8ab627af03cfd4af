"""A file's diagnostics for the editor: merged from every diagnostic server of the file (the
service's, as fresh as `get_diagnostics`), pushed as `textDocument/publishDiagnostics`
after each change of an open document, and answered to `textDocument/diagnostic`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.lsp.positions import Encoding, LineIndex

if TYPE_CHECKING:
    from codeward.daemon.lsp.service import FileDiagnostics

Items = list[dict[str, Any]]


def items(found: FileDiagnostics, encoding: Encoding) -> Items:
    """The diagnostics as LSP `Diagnostic`s in the editor's encoding, on the text they are
    about."""
    index = LineIndex(found.text)
    out: Items = []
    for d in found.diagnostics:
        item: dict[str, Any] = {
            "range": {
                "start": index.to_server(d.line, d.column, encoding),
                "end": index.to_server(d.end_line, d.end_column, encoding),
            },
            "severity": d.severity,
            "message": d.message,
        }
        if d.code is not None:
            item["code"] = d.code
        item["source"] = d.source or d.server
        out.append(item)
    return out


class Publisher:
    """Pushes the diagnostics of the documents that changed, one computation per document
    at a time (a document changed meanwhile is computed again once it is done)."""

    def __init__(
        self,
        compute: Callable[[str], Awaitable[tuple[int | None, Items] | None]],
        publish: Callable[[str, int | None, Items], None],
    ) -> None:
        self.compute = compute  # a URI's (version, items), or None: nothing to say
        self.publish = publish
        self._dirty: set[str] = set()
        self._running: set[str] = set()
        self._wake = trio.Event()

    def changed(self, uri: str) -> None:
        self._dirty.add(uri)
        self._wake.set()

    async def run(self) -> None:
        """Until cancelled (its owner: the editor dialect's background scope)."""
        async with trio.open_nursery() as nursery:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                for uri in sorted(self._dirty - self._running):
                    self._dirty.discard(uri)
                    self._running.add(uri)
                    nursery.start_soon(self._one, uri)

    async def _one(self, uri: str) -> None:
        try:
            found = await self.compute(uri)
            if found is not None:
                self.publish(uri, *found)
        finally:
            self._running.discard(uri)
            if uri in self._dirty:
                self._wake.set()
