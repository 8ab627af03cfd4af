"""A file's diagnostics for the editor: merged from every diagnostic server of the file (the
service's `server_diagnostics`: each server's own, fresh for the text it has, the editor's
buffer), pushed as `textDocument/publishDiagnostics` after each change of an open
document, and answered to `textDocument/diagnostic`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.editor.convert import Converter, Lines
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.shapes import unstructure

if TYPE_CHECKING:
    from codeward.daemon.editor.buffers import Buffers
    from codeward.daemon.editor.workspace import Workspace
    from codeward.daemon.lsp.service import ServerDiagnostics

log = logging.getLogger(__name__)
Items = list[dict[str, Any]]


def merged(
    answers: ServerDiagnostics,
    encodings: Mapping[str, Encoding],
    target: Encoding,
    lines: Lines,
    uri: str,
) -> Items:
    """Every server's own diagnostics of a file (with their `data`, tags and related
    information: what a quick fix needs), in the editor's encoding, one list; `source` is
    the server's, else the server's name."""
    out: Items = []
    for server, (_, found) in sorted(answers.items()):
        data = [unstructure(d) for d in found]
        encoding = encodings.get(server, target)
        if encoding != target:
            data = Converter(encoding, target, lines)(data, uri)
        for item in data:
            item.setdefault("source", server)
        out += data
    return out


async def of_document(
    workspace: Workspace,
    buffers: Buffers,
    encodings: dict[str, Encoding],
    target: Encoding,
    lines: Lines,
    uri: str,
    pulled: bool = False,
) -> tuple[int | None, Items] | None:
    """The diagnostics of an open document (of any document when `pulled`) and the
    version they are about; None: nothing to say (outside every root, of no language), or
    a push overtaken by a change or a close (the next computation tells)."""
    located = workspace.locate(uri)
    buffer = buffers.get(uri)
    if located is None or (buffer is None and not pulled):
        return None
    root, path = located
    service = (await workspace.session(root)).lsp
    language = service.language_or_none(path)
    if language is None:
        return None
    version = buffer.version if buffer is not None else None
    answers = await service.server_diagnostics(path)
    if not pulled and (buffers.get(uri) is not buffer or version != _version(buffer)):
        return None
    if any(server not in encodings for server in answers):  # a server started since
        offers = await service.capabilities_of([language])
        encodings.update((offer.server, offer.encoding) for offer in offers)
    return version, merged(answers, encodings, target, lines, uri)


def _version(buffer: Any) -> int | None:
    return None if buffer is None else buffer.version


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
        except Exception:  # (a server's or a bug's: the next change tries again)
            log.exception("diagnostics of %s for an editor", uri)
        finally:
            self._running.discard(uri)
            if uri in self._dirty:
                self._wake.set()
