"""The text of files as the language servers see it, and positions in it for clients.

An open document's text is the servers' view; any other file is read from disk (through
`read_file`) and kept by stat, so an unchanged file is not read again. Every conversion of
a server position into a client's 1-based code points goes through `to_client`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from codeward.daemon.files import UNTRUSTED, Missing, Stat, read_file, stat_key
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.overlay import Held, Overlay, record
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.types import PositionLike
from codeward.daemon.lsp.uris import path_to_uri, real_path, uri_to_path
from codeward.daemon.paths import shown_path
from codeward.protocol.errors import ToolError

RACY_NS = 50_000_000  # a stat is trusted once the file is this much older than our read
# the texts kept, least recently used dropped first: about this many bytes (a line costs
# `LINE_COST` beside its characters), so references across a few thousand files of a large
# project are not read again on every call
CACHED_BYTES = 64 * 1024 * 1024
LINE_COST = 8  # where it starts, in its `Lines`


class Texts:
    """Files' text for one root: the open documents of `servers`, else the disk."""

    def __init__(
        self,
        root: Path,
        limit: int,
        servers: Mapping[str, LanguageServer],
        previews: Mapping[Path, bytes],
        gate: Gate,
        overlay: Overlay,
    ) -> None:
        self.root = root
        self.limit = limit  # lsp.max_file_bytes
        self.servers = servers  # the service's live table of server actors
        self.previews = previews  # files shown a text that is not on disk
        self.gate = gate
        self.overlay = overlay  # editors' buffers: the servers see them, not the disk
        self._texts: dict[Path, tuple[Stat, LineIndex, int]] = {}  # oldest use first
        self._cost = 0  # of the texts kept, in bytes

    def document(self, path: Path) -> Document | None:
        """`path` as a server has it open, if one does."""
        uri = path_to_uri(path)
        for server in self.servers.values():
            doc = server.document(uri)
            if doc is not None:
                return doc
        return None

    def read(self, path: Path) -> tuple[bytes | None, Stat]:
        """The bytes of `path` (inside the root) through `read_file`, and the stat under
        which an unchanged file need not be read again; None when the file is gone."""
        now = time.time_ns()
        try:
            data, st = read_file(path, self.root, self.limit)
        except Missing:
            return None, UNTRUSTED
        return data, trusted(st, now)

    def override(self, path: Path) -> bytes | None:
        """The text the servers see for `path` instead of the disk's: its preview's (only
        ever asked by the preview's holder: no other request runs meanwhile), else the
        buffer an editor holds; None: the disk's."""
        data = self.previews.get(path)
        if data is None:
            held = self.held(path)
            data = held.data if held is not None else None
        return data

    def held(self, path: Path) -> Held | None:
        """The buffer an editor holds for `path`, recorded as read (see `overlay.record`)."""
        held = self.overlay.held(path)
        if held is not None:
            record(held)
        return held

    def forget(self, path: Path) -> None:
        """`path` changed on disk: its text is read again next time."""
        self._drop(path)

    def _drop(self, path: Path) -> None:
        gone = self._texts.pop(path, None)
        if gone is not None:
            self._cost -= gone[2]

    def _keep(self, path: Path, stat: Stat, index: LineIndex, size: int) -> None:
        """Keep `index` as `path`'s text under `stat`, dropping the least recently used
        past `CACHED_BYTES`."""
        self._drop(path)
        cost = size + LINE_COST * len(index.lines)
        self._texts[path] = (stat, index, cost)
        self._cost += cost
        while self._cost > CACHED_BYTES and len(self._texts) > 1:
            self._drop(next(iter(self._texts)))

    def line_index(self, path: Path, known: Stat | None = None) -> LineIndex | None:
        """The text of `path` as the servers see it: an open document, else the disk (and
        the disk for a file under another task's preview); `known`: its stat, just taken
        by the caller (references name thousands of files: one system call a file less)."""
        hidden = path in self.previews and not self.gate.held()
        doc = None if hidden else self.document(path)
        held = self.held(path)
        if doc is not None:
            return doc.index
        if held is not None:
            return held.index
        now = time.time_ns()
        stat = stat_of(path) if known is None else known
        cached = self._texts.get(path)
        if cached is not None and stat is not UNTRUSTED and cached[0] == stat:
            self._texts[path] = self._texts.pop(path)  # used now: dropped last
            return cached[1]
        try:  # a path the server named outside the root (a stub) may be read, if it stays out
            data, st = read_file(path, self.root, self.limit, outside=not self._under_root(path))
        except ToolError:
            return None
        index = LineIndex(data.decode("utf-8", "replace"))
        self._keep(path, trusted(st, now), index, len(data))
        return index

    def known_text(self, path: Path, stat: Stat) -> LineIndex | None:
        """The text of `path` as read when its stat was `stat` (an open document, or the
        line cache), or None: a file whose stat still matches need not be read again. A
        file an editor holds: the buffer's text, whatever the disk's stat."""
        held = self.held(path)
        if held is not None:
            return held.index
        uri = path_to_uri(path)
        for server in self.servers.values():
            doc = server.document(uri)
            if doc is not None and doc.stat == stat:
                return doc.index
        cached = self._texts.get(path)
        if cached is not None and cached[0] == stat:
            return cached[1]
        return None

    def to_client(
        self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
    ) -> tuple[int, int]:
        """1-based (line, character) in code points of a server position in `uri`."""
        if isinstance(position, dict):
            line, character = position["line"], position["character"]
        else:
            line, character = position.line, position.character
        path = uri_to_path(uri)
        index = self.line_index(path) if path is not None else None
        if index is None:
            return line + 1, character + 1
        return index.to_client(line, character, encoding)

    def relative(self, uri: str) -> str | None:
        """The root-relative path of `uri`, or None when it is outside the root."""
        path = uri_to_path(uri)
        if path is None:
            return None
        real = Path(real_path(path))
        try:
            return real.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def source_line(self, uri: str, line: int) -> str:
        """The trimmed text of 1-based `line` of `uri`."""
        path = uri_to_path(uri)
        index = self.line_index(path) if path is not None else None
        return index.line(line - 1).strip() if index is not None else ""

    def _under_root(self, path: Path) -> bool:
        """Whether `path`, as written, lies under the root (it must then resolve inside it)."""
        return shown_path(str(path), self.root) is not None


def stat_of(path: Path) -> Stat:
    try:
        return stat_key(os.stat(path))
    except OSError:
        return UNTRUSTED


def trusted(st: os.stat_result, now: int) -> Stat:
    """The stat under which an unchanged file need not be read again, for a read at `now`.

    As in git's "racy" check, a stat is only trusted when the file was last changed well
    before the read: a later write then always shows in its timestamps, even with the
    coarse clock of the file system. Otherwise it is UNTRUSTED and the file is read (and
    hashed) again next time.
    """
    key = stat_key(st)
    if now - max(key[0], key[3]) < RACY_NS:
        return UNTRUSTED
    return key
