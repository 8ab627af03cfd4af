"""Editor buffers told to the servers: the service's part behind its `editor_*` methods.

A buffer an editor opens or changes is sent at once to every server of the file's language
(started: their diagnostics of it are what the editor shows); the servers keep it as the
document's text, which the disk's changes no longer replace (`file_events` skips held
files; their documents carry no stat), which is never closed to make room for others
(pinned) and which a restarted server reopens (its documents' store holds it). When no
buffer of the file is left, every server that has it open gets the disk's content back (or
closes it when the file is gone). A preview of a held file shows its text and then gives
the servers the buffer back (`restore`), not the disk.

A path outside the root or of no language is kept in the overlay and reaches no server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import trio

from codeward.daemon.files import UNTRUSTED
from codeward.daemon.lsp.overlay import Buffer, EditorHolder, Overlay
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.routing import Languages
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.uris import path_to_uri, real_path
from codeward.daemon.paths import is_inside
from codeward.protocol.errors import ToolError


def canonical(path: Path) -> Path:
    """The key of `path` in the overlay: its real path (as tools resolve theirs)."""
    try:
        return Path(real_path(path))
    except ToolError:  # it keeps changing: as written
        return path


class Editors:
    """The editors' buffers of one root, told to its servers (inside the gate)."""

    def __init__(
        self, root: Path, overlay: Overlay, pool: ServerPool, languages: Languages, texts: Texts,
        gate: Gate,
    ) -> None:  # fmt: skip
        self.root = root
        self.overlay = overlay
        self.pool = pool
        self.languages = languages
        self.texts = texts
        self.gate = gate
        self._changed = trio.Event()  # set (and made anew) at each change of a buffer

    async def put(self, holder: EditorHolder, path: Path, text: str, version: int) -> None:
        """A buffer opened or changed: the text every server of its language sees."""
        path = canonical(path)
        self.overlay.put(Buffer(path, text, version, holder))
        self._changed.set()
        self._changed = trio.Event()
        language = self.languages.of(path) if is_inside(path, self.root) else None
        if language is None:
            return
        language_id = self.languages.language_id(language)
        async with self.gate.shared():
            for name in self.languages.servers(language):
                held = self.overlay.held(path)
                if held is None:  # closed meanwhile (a server started)
                    return
                with contextlib.suppress(ToolError):  # a request about it says it failed
                    server = await self.pool.started(name, language)
                    doc = server.sync(path, language_id, held.data)
                    server.pin(doc.uri, True)

    async def reshow(self) -> None:
        """New server actors (the root's trust changed): every held file of this root is
        sent to its servers again."""
        for path in self.overlay.paths():
            held = self.overlay.held(path)
            if held is not None and is_inside(path, self.root):
                await self.put(held.buffer.holder, path, held.buffer.text, held.buffer.version)

    async def settled(self, expected: Mapping[Path, bytes], timeout: float) -> bool:
        """Whether, within `timeout`, each file of `expected` is held with that text or no
        longer held (an editor's didChange of an edit it applied comes after its answer)."""
        with trio.move_on_after(timeout):
            while not all(self._holds(path, data) for path, data in expected.items()):
                await self._changed.wait()
            return True
        return False

    def _holds(self, path: Path, data: bytes) -> bool:
        held = self.overlay.held(path)
        return held is None or held.data == data

    def unsaved(self, buffer: Buffer) -> bool:
        """Whether `buffer`'s text differs from the disk's (or the file cannot be read)."""
        try:
            data, _ = self.texts.read(buffer.path)
        except ToolError:
            return True
        return data is None or data != buffer.text.encode("utf-8", "replace")

    def saved(self, path: Path) -> None:
        """The editor wrote its buffer to disk: the disk's text is read again when asked."""
        self.texts.forget(canonical(path))

    async def close(self, holder: EditorHolder, path: Path) -> None:
        """`holder` closed its buffer of `path`: the servers see the next holder's, else
        the disk's."""
        path = canonical(path)
        if self.overlay.close(holder, path):
            await self._back([path])

    async def release(self, holder: EditorHolder) -> None:
        """`holder` disconnected: every file it held goes back to the disk (or to the
        buffer of another holder of it)."""
        await self._back(self.overlay.release(holder))

    async def _back(self, paths: Sequence[Path]) -> None:
        """The servers that have `paths` open get their text now (shielded: a closing
        editor's cancellation does not leave them the old buffer)."""
        if not paths:
            return
        with trio.CancelScope(shield=True):
            async with self.gate.shared():
                for path in paths:
                    self.texts.forget(path)
                    self.restore(path)

    def restore(self, path: Path) -> None:
        """Give every server that has `path` open the text it should see: the buffer held,
        else the disk's (or close it when the file is not there)."""
        held = self.overlay.held(path)
        if held is not None:
            data, stat = held.data, UNTRUSTED
        else:
            try:
                data, stat = self.texts.read(path)
            except ToolError:
                data, stat = None, UNTRUSTED
        uri = path_to_uri(path)
        for server in self.pool.servers.values():
            doc = server.document(uri)
            if doc is None:
                continue
            server.pin(uri, held is not None)
            if data is None:
                server.close_document(uri)
            else:
                server.sync(path, doc.language_id, data, stat)
