"""Changes on disk, told to the running servers before the next request needs them.

Events come from the root's watcher, from `files_changed` (git writes and edits) and from
a stat of each open document before every request (a request may follow a write sooner
than the watcher's event). An open document that changed gets `didChange` (or is closed
when it is gone); any other file is a `workspace/didChangeWatchedFiles` event for the
servers that watch it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.files import UNTRUSTED, Stat, stat_key
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.routing import Languages
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.uris import real_path
from codeward.daemon.lsp.watched_tree import CHANGED, CREATED, DELETED
from codeward.daemon.lsp.watcher import glob_matches
from codeward.protocol.errors import ToolError


class FileEvents:
    """Pending changes under one root and the flush that tells `servers` of them."""

    def __init__(
        self,
        root: Path,
        servers: Mapping[str, LanguageServer],
        texts: Texts,
        languages: Languages,
        previews: Mapping[Path, bytes],
        gate: Gate,
    ) -> None:
        self.root = root
        self._prefix = os.path.join(root, "")  # the root's files' paths start with it
        self.previews = previews  # files shown a text that is not on disk: synced after
        self.gate = gate
        self.servers = servers
        self.texts = texts
        self.languages = languages
        self._changes: dict[Path, int | None] = {}  # path -> FileChangeType, None: look
        self.listing = 0  # counts changes that may add or remove files (creations, deletions)
        self._wake = trio.Event()

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        """Files changed by git writes or edits (`created`: those of them that are new, so
        a server resolving imports hears of them as created): the servers are told before
        the next request."""
        new = set(created)
        for path in paths:
            kind = CREATED if path in new else None
            path = path if path.is_absolute() else self.root / path
            try:
                self._note(Path(real_path(path)), kind)
            except ToolError:  # it keeps changing: the watcher reports where it ends
                self._note(path, kind)
        self.listing += 1
        self._wake.set()

    def on_watch(self, changes: list[tuple[Path, int]]) -> None:
        """The watcher's batch of (path, FileChangeType)."""
        for path, kind in changes:
            self._note(path, kind)
            if kind != CHANGED:
                self.listing += 1
        self._wake.set()

    def _note(self, path: Path, kind: int | None) -> None:
        """A change of `path` pending: a creation not told yet stays one when the new file
        is then written (inotify reports its writes after its creation, or a folder's walk
        found it first), as a server resolving imports (basedpyright) reads the folders
        again only for a creation or deletion, never for a change."""
        if kind != DELETED and self._changes.get(path) == CREATED:
            return
        self._changes[path] = kind

    async def run(self) -> None:
        """Flush soon after each change, without waiting for a request."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.flush()

    @property
    def pending(self) -> bool:
        """Whether the watcher reported changes not told to the servers yet."""
        return bool(self._changes)

    async def flush(self) -> bool:
        """Tell running servers everything that changed on disk up to now (a file under
        preview keeps its preview text: it is synced when the preview ends). True when
        nothing had changed: every open document outside a preview was just found as it
        is on disk, and no checkpoint came since (the caller need not stat it again).

        No await inside once the gate lets it in (it waits only while another task's
        preview holds the servers): each flush is whole before any other task runs (no
        lock needed), and each server sends its notifications as they are made, in order."""
        if not self._changes and not self.stale_documents():
            return True  # the common case
        async with self.gate.shared():
            self._flush()
        return False

    def _flush(self) -> None:
        changes = {p: k for p, k in self._changes.items() if p not in self.previews}
        self._changes = {p: k for p, k in self._changes.items() if p in self.previews}
        running = [s for s in self.servers.values() if s.running]
        for path in self.stale_documents():
            changes.setdefault(path, None)
        if not changes:
            return
        events: dict[str, list[dict[str, Any]]] = {s.name: [] for s in running}
        overlay = self.texts.overlay  # a file an editor holds keeps the buffer's text
        for path, kind in changes.items():
            self.texts.forget(path)
            uri = path.as_uri()
            data, stat = None, UNTRUSTED
            held = path in overlay
            if not held and any(server.document(uri) is not None for server in running):
                try:  # only open documents are read (never a FIFO or a huge file)
                    data, stat = self.texts.read(path)
                except ToolError:
                    data = None  # no longer a readable file: closed like a deleted one
            if kind is None:
                kind = CHANGED if os.path.lexists(path) else DELETED
            for server in running:
                doc = server.document(uri)
                if doc is not None:
                    if held:
                        continue
                    if data is None:
                        server.close_document(doc.uri)
                    else:
                        server.sync(path, doc.language_id, data, stat)
                elif self._watched_by(server, path):
                    events[server.name].append({"uri": uri, "type": kind})
        for server in running:
            server.watched_files_changed(events[server.name])

    def stale_documents(self) -> list[Path]:
        """Open documents whose file changed on disk since it was read (or may have).

        A stat per open file of this root (once per path, however many servers have it
        open; another root's documents on a shared server are its own session's): the
        watcher's events come later than a request may follow a write. Kept lean: it runs
        before every request."""
        stale: list[Path] = []
        stats: dict[str, Stat] = {}
        mine = self._prefix
        held = self.texts.overlay
        for server in self.servers.values():
            if not server.running:
                continue
            for doc in server.open_documents():
                if doc.path in self.previews or doc.path in held:
                    continue  # previewed, or an editor's buffer
                if not str(doc.path).startswith(mine):
                    continue  # another root's on a shared server
                name = str(doc.path)
                current = stats.get(name)
                if current is None:
                    try:
                        current = stat_key(os.stat(name))
                    except OSError:
                        current = UNTRUSTED
                    stats[name] = current
                if current != doc.stat or doc.stat is UNTRUSTED:
                    stale.append(doc.path)
        return stale

    def _watched_by(self, server: LanguageServer, path: Path) -> bool:
        globs = server.capabilities.watched_file_globs()
        if globs:
            return any(glob_matches(g, path) for g in globs)
        language = self.languages.of(path)
        return language is not None and server.name in self.languages.servers(language)
