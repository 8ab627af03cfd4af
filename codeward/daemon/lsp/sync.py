"""Document sync of one server: the documents it has open, and the count of changes it was
told of (`world`), which diagnostics freshness compares against.

Every change is sent as it is made (didOpen, didChange, didClose, didChangeWatchedFiles go
out synchronously, in order), so the server sees every change before any request that
follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeward.daemon.lsp.documents import UNTRUSTED, Document, DocumentStore, Stat

Notify = Callable[[str, Any], None]


class DocumentSync:
    def __init__(self, max_open: int, notify: Notify, on_close: Callable[[str], None]) -> None:
        self.store = DocumentStore(max(1, max_open))
        self.world = 0  # counts changes the server was told of (for freshness)
        self._notify = notify
        self._on_close = on_close  # forget what was published for a closed document

    def get(self, uri: str) -> Document | None:
        return self.store.get(uri)

    def __len__(self) -> int:
        return len(self.store)

    def sync(
        self,
        path: Path,
        language_id: str,
        data: bytes,
        stat: Stat = UNTRUSTED,
        *,
        force_if_older: bool = False,
        own: bool = False,
    ) -> Document:
        """Give the server `data` as the content of `path` (didOpen/didChange); with
        `force_if_older`, the same text again under a new version when other files changed
        since it was sent; with `own`, for the daemon's own purposes (`shed` closes it)."""
        uri = path.as_uri()
        current = self.store.get(uri)
        force = force_if_older and current is not None and current.world < self.world
        doc, notices = self.store.sync(
            path, uri, language_id, data, self.world, stat, force=force, own=own
        )
        for method, params in notices:
            if method == "textDocument/didChange":
                self.world += 1
                doc.world = self.world
            if method == "textDocument/didClose":
                self._on_close(params["textDocument"]["uri"])
            self._notify(method, params)
        return doc

    def close(self, uri: str) -> None:
        for method, params in self.store.close(uri):
            self._on_close(uri)
            self.world += 1
            self._notify(method, params)

    def shed(self) -> int:
        """Close the documents the daemon opened for its own purposes that no request or
        preview used since (`DocumentStore.own`); how many."""
        own = [uri for uri in self.store.documents if uri in self.store.own]
        for uri in own:
            self.close(uri)
        return len(own)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> bool:
        """didChangeWatchedFiles (`changes`: FileEvent dicts); whether anything was sent."""
        if not changes:
            return False
        self.world += 1
        self._notify("workspace/didChangeWatchedFiles", {"changes": changes})
        return True

    def changed_elsewhere(self) -> None:
        """The server said something changed on its side (a `*/refresh` request)."""
        self.world += 1

    def reopen_all(self, notify: Notify) -> None:
        """didOpen for every open document, through `notify` (a restarted server knows none
        of them, and is not running yet for the actor's own notify)."""
        for method, params in self.store.reopen_all():
            notify(method, params)
