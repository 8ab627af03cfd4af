"""What the diagnostics were for the last few contents of each file (sans IO), so a later
answer can be given as a delta against one of them (`get_diagnostics since`, and the
"before" of an edit). Bounded: a few versions per file, a number of files, a number of
bytes of text; the least recently recorded go first."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from codeward.daemon.edits.delta import Diag

VERSIONS = 4  # contents kept per file
FILES = 256
TEXT_BYTES = 32 << 20  # code points of text kept in all


@dataclass(frozen=True)
class Snapshot:
    """The diagnostics reported for one content of a file."""

    content_hash: str
    text: str
    diagnostics: tuple[Diag, ...]
    partial: tuple[str, ...] = ()  # servers that did not answer for this content


class DiagnosticsHistory:
    def __init__(
        self, versions: int = VERSIONS, files: int = FILES, text_bytes: int = TEXT_BYTES
    ) -> None:
        self.versions = versions
        self.files = files
        self.text_bytes = text_bytes
        self._kept: OrderedDict[str, OrderedDict[str, Snapshot]] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return sum(len(v) for v in self._kept.values())

    def record(
        self,
        file: str,
        content_hash: str,
        text: str,
        diagnostics: Sequence[Diag],
        partial: Sequence[str] = (),
    ) -> Snapshot:
        """Keep what was reported for `file` (root-relative) at `content_hash`; a complete
        report replaces a partial one of the same content, never the other way round."""
        versions = self._kept.setdefault(file, OrderedDict())
        self._kept.move_to_end(file)
        old = versions.get(content_hash)
        snapshot = Snapshot(content_hash, text, tuple(diagnostics), tuple(partial))
        if old is not None:
            if old.partial == () and partial:
                versions.move_to_end(content_hash)
                return old
            self._size -= len(old.text)
        versions[content_hash] = snapshot
        versions.move_to_end(content_hash)
        self._size += len(text)
        while len(versions) > self.versions:
            _, dropped = versions.popitem(last=False)
            self._size -= len(dropped.text)
        while len(self._kept) > self.files or (self._size > self.text_bytes and self._kept):
            self._drop_oldest()
        return snapshot

    def _drop_oldest(self) -> None:
        _, versions = self._kept.popitem(last=False)
        self._size -= sum(len(s.text) for s in versions.values())

    def get(self, file: str, content_hash: str) -> Snapshot | None:
        versions = self._kept.get(file)
        return versions.get(content_hash) if versions is not None else None

    def known(self, file: str) -> list[str]:
        """The content hashes kept for `file`, oldest first."""
        versions = self._kept.get(file)
        return list(versions) if versions is not None else []
