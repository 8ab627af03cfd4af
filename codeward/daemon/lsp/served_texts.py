"""The text the servers see of the files, as the service answers it: the disk's, an
editor's buffer over it (`lsp/overlay.py`, told to the servers by `lsp/editors.py`:
`editor_open`/`editor_change(holder, path, text, version)`, `editor_save`,
`editor_close(holder, path)`, `editor_release(holder)`, `editor_buffer(path)`), or a
preview's (`previewing()`, `show`, `restore`); and positions in it: `line_index(path)`,
`known_text(path, stat)` (the text already read when the file's stat was `stat`: tool
inputs need not read an unchanged file again), `to_client`, `relative(uri)` (a
root-relative output path, or None), `source_line(uri, line)` (the trimmed source line,
1-based).

`ServedTexts` is the part of `service.LanguageService` (one of its bases) over its `Texts`,
`Editors` and previews: its methods are the service's own, the state they share declared
below."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.daemon.files import UNTRUSTED, Stat
from codeward.daemon.lsp.editors import canonical
from codeward.daemon.lsp.preview import Previewer, hold_for_preview
from codeward.daemon.lsp.texts import stat_of
from codeward.daemon.lsp.uris import path_to_uri
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.documents import Document
    from codeward.daemon.lsp.editors import Editors
    from codeward.daemon.lsp.file_events import FileEvents
    from codeward.daemon.lsp.overlay import Buffer, EditorHolder, Overlay
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.positions import Encoding, LineIndex
    from codeward.daemon.lsp.preview import Gate
    from codeward.daemon.lsp.routing import Languages
    from codeward.daemon.lsp.server import LanguageServer
    from codeward.daemon.lsp.texts import Texts
    from codeward.daemon.lsp.types import PositionLike


class ServedTexts:
    """Files' text as a service's servers see it (a base of `LanguageService`, which gives
    the state below)."""

    if TYPE_CHECKING:
        gate: Gate
        previews: dict[Path, bytes]
        pool: ServerPool
        languages: Languages
        texts: Texts
        overlay: Overlay
        editors: Editors
        events: FileEvents

        async def flush(self) -> None: ...

    def line_index(self, path: Path, stat: Stat | None = None) -> LineIndex | None:
        """The text of `path` as the servers see it: an open document, else the disk
        (`stat`: the file's, when the caller has just taken it)."""
        return self.texts.line_index(path, stat)

    def known_text(self, path: Path, stat: Stat) -> LineIndex | None:
        """The text of `path` as read when its stat was `stat`, or None."""
        return self.texts.known_text(path, stat)

    def to_client(
        self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
    ) -> tuple[int, int]:
        """1-based (line, character) in code points of a server position in `uri`."""
        return self.texts.to_client(uri, position, encoding)

    def relative(self, uri: str) -> str | None:
        """The root-relative path of `uri`, or None when it is outside the root."""
        return self.texts.relative(uri)

    def source_line(self, uri: str, line: int) -> str:
        """The trimmed text of 1-based `line` of `uri`."""
        return self.texts.source_line(uri, line)

    def previewing(self) -> AbstractAsyncContextManager[Previewer]:
        """`async with service.previewing() as p:` the servers to the caller alone (no
        other request runs meanwhile); `async with p.show(path, data):` shows them `data`
        as the content of `path`, given back the disk's after the block (`lsp.preview`)."""
        return hold_for_preview(self)

    async def show(self, path: Path) -> None:
        """Send the preview text of `path` to every server of its language (started)."""
        language = self.languages.require(path)
        data = self.previews[path]
        for name in self.languages.servers(language):
            with contextlib.suppress(ToolError):  # its diagnostics say it failed
                server = await self.pool.started(name, language)
                server.sync(path, self.languages.language_id(language), data)

    def restore(self, path: Path) -> None:
        """Give every server that has `path` open its text again: the buffer an editor
        holds, else the disk's (or close it when the file is not there)."""
        self.editors.restore(path)

    async def editor_open(self, holder: EditorHolder, path: Path, text: str, version: int) -> None:
        """An editor opened `path`: its servers see `text` as its content, not the disk's."""
        await self.editors.put(holder, path, text, version)

    async def editor_change(
        self, holder: EditorHolder, path: Path, text: str, version: int
    ) -> None:
        """The buffer's whole new text (the editor dialect applied its changes)."""
        await self.editors.put(holder, path, text, version)

    async def editor_save(self, holder: EditorHolder, path: Path) -> None:
        """The editor wrote the buffer to disk (it stays the text the servers see)."""
        self.editors.saved(path)

    async def editor_close(self, holder: EditorHolder, path: Path) -> None:
        """The editor closed `path`: the servers see another holder's buffer, else the disk."""
        await self.editors.close(holder, path)

    async def editor_release(self, holder: EditorHolder) -> None:
        """The editor disconnected: every buffer it held is closed."""
        await self.editors.release(holder)

    def editor_buffer(self, path: Path) -> Buffer | None:
        """The buffer an editor holds for `path` (the one the servers see), or None."""
        return self.overlay.buffer(canonical(path))

    def editor_buffers(self) -> dict[Path, list[Buffer]]:
        """Every holder's buffer of each file editors hold (a copy): what a write checks."""
        return self.overlay.every()

    async def editor_settled(self, expected: Mapping[Path, bytes], timeout: float) -> bool:
        """Whether each file of `expected` came to be held with that text (or no more held)."""
        return await self.editors.settled(expected, timeout)

    def editor_unsaved(self, buffers: Collection[Buffer]) -> list[Buffer]:
        """Those of `buffers` whose text is not the disk's (an unsaved change)."""
        return [b for b in buffers if self.editors.unsaved(b)]

    async def _open(self, server: LanguageServer, path: Path, language: str) -> Document:
        """`path` as `server` has it open, synced from disk (or from its preview) first."""
        unchanged = await self.events.flush()
        if not server.running:
            await server.connection()
            unchanged = False
        doc = server.document(path_to_uri(path))
        held = self.texts.held(path)
        if (
            doc is not None
            and path not in self.previews
            and (
                doc.hash == held.hash  # an editor's buffer, as sent
                if held is not None
                else doc.stat is not UNTRUSTED
                and (unchanged or stat_of(path) == doc.stat)  # the flush's stat, just taken
            )
        ):
            server.touch(doc.uri)
            return doc
        data, stat = self.texts.override(path), UNTRUSTED
        if data is None:
            data, stat = self.texts.read(path)
        if data is None:
            raise ToolError(ErrorKind.FILE_NOT_FOUND, f"{path.name!r} no longer exists.")
        return server.sync(path, self.languages.language_id(language), data, stat)
