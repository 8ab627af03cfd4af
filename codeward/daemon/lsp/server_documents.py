"""The documents a language server has open, as its actor shows them: each the version it
was sent (a snapshot, never changed), synced from a file's content, kept open while an
editor holds it, closed, and the watched files' changes told.

`ServerDocuments` is the part of `server.LanguageServer` (one of its bases) over its
`DocumentSync`: its methods are the actor's own, the state they share declared below."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.daemon.lsp.documents import UNTRUSTED, Document, Stat

if TYPE_CHECKING:
    from codeward.daemon.lsp.changes import Changes
    from codeward.daemon.lsp.new_files import NewFiles
    from codeward.daemon.lsp.sync import DocumentSync


class ServerDocuments:
    """The open documents of a server's actor (a base of `LanguageServer`, which gives the
    state below)."""

    if TYPE_CHECKING:
        _docs: DocumentSync
        _new_files: NewFiles
        _changes: Changes

        @property
        def running(self) -> bool: ...
        @property
        def pulls_diagnostics(self) -> bool: ...

    def document(self, uri: str) -> Document | None:
        """The version of `uri` the server has open now (a snapshot: it never changes)."""
        return self._docs.get(uri)

    def open_documents(self) -> tuple[Document, ...]:
        """Every document the server has open now, each the version it was sent: what an
        answer it computes now is computed from."""
        return tuple(self._docs.store.documents.values())

    def touch(self, uri: str) -> None:
        """Mark `uri` used now: the least recently used document is closed first."""
        self._docs.store.touch(uri)

    @property
    def world(self) -> int:
        return self._docs.world

    def sync(
        self,
        path: Path,
        language_id: str,
        data: bytes,
        stat: Stat = UNTRUSTED,
        *,
        fresh_diagnostics: bool = False,
        own: bool = False,
    ) -> Document:
        """Give the running server `data` as the content of `path` (didOpen/didChange).

        With `fresh_diagnostics`, a server that only pushes diagnostics gets the same text
        again under a new version when other files changed since, so its next push
        describes the world as it is now. With `own`, a document it opens is the daemon's
        own (a folder's diagnostics): near its memory cap the server closes those first.
        """
        force = fresh_diagnostics and not self.pulls_diagnostics
        return self._docs.sync(path, language_id, data, stat, force_if_older=force, own=own)

    def pin(self, uri: str, pinned: bool) -> None:
        """Keep `uri` open however many others are opened (an editor holds it), or no more."""
        (self._docs.store.pinned.add if pinned else self._docs.store.pinned.discard)(uri)

    def close_document(self, uri: str) -> None:
        self._docs.close(uri)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> None:
        """didChangeWatchedFiles (`changes`: FileEvent dicts)."""
        if self.running and self._docs.watched_files_changed(changes):
            self._new_files.changed(changes)
            self._changes.touch()
