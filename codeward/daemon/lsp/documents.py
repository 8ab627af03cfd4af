"""Open documents of one server: versions, content hashes, LRU eviction (sans IO; the
documents an editor holds are pinned: never evicted).

Each method returns the notifications to send, in order; the caller queues them before
anything else, so the server sees every change before the request that needs it.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.files import UNTRUSTED, Stat, content_hash, stat_key
from codeward.daemon.lsp.positions import LineIndex
from codeward.daemon.lsp.shapes import unstructure

__all__ = ["UNTRUSTED", "Document", "DocumentStore", "Stat", "content_hash", "stat_key"]

Notice = tuple[str, dict[str, Any]]


def decode_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


@dataclass
class Document:
    """One version of an open document. Its content never changes: a new version is a new
    `Document`, so one held stays a snapshot of what the server was sent (`stat` and
    `world` are the actor's bookkeeping of when it was read and sent)."""

    path: Path
    uri: str
    language_id: str
    text: str
    hash: str
    version: int
    world: int  # the server's change count when this version was sent
    stat: Stat = UNTRUSTED
    same_since: int = 0  # sent again unchanged: the first version with this text (else 0)
    _index: LineIndex | None = field(default=None, repr=False)

    @property
    def index(self) -> LineIndex:
        """Position conversion for this version's text (built once per version)."""
        if self._index is None:
            self._index = LineIndex(self.text)
        return self._index


@dataclass
class DocumentStore:
    max_open: int
    documents: collections.OrderedDict[str, Document] = field(
        default_factory=collections.OrderedDict
    )
    _versions: dict[str, int] = field(default_factory=dict)
    # documents the daemon opened for its own purposes (a folder's diagnostics) and no
    # request or preview has used since: what a server near its memory cap closes first
    own: set[str] = field(default_factory=set)
    # documents an editor holds (`lsp/editors.py`): never closed to make room
    pinned: set[str] = field(default_factory=set)

    def get(self, uri: str) -> Document | None:
        return self.documents.get(uri)

    def __len__(self) -> int:
        return len(self.documents)

    def sync(
        self,
        path: Path,
        uri: str,
        language_id: str,
        data: bytes,
        world: int,
        stat: Stat = UNTRUSTED,
        *,
        force: bool = False,
        own: bool = False,
    ) -> tuple[Document, list[Notice]]:
        """Make the server's copy of `uri` equal `data`: didOpen, or didChange with a new
        version when the hash changed (or `force`); evicts the least recently used beyond
        `max_open`. With `own`, a document it opens is the daemon's own (see `own`)."""
        digest = content_hash(data)
        notices: list[Notice] = []
        doc = self.documents.get(uri)
        if not own:
            self.own.discard(uri)
        elif doc is None:
            self.own.add(uri)
        if doc is None:
            version = self._versions.get(uri, 0) + 1
            doc = Document(path, uri, language_id, decode_text(data), digest, version, world, stat)
            self.documents[uri] = doc
            notices.append(self._open(doc))
        else:
            self.documents.move_to_end(uri)
            doc.stat = stat
            if doc.hash != digest or force:
                text, version = decode_text(data), doc.version + 1
                same = (doc.same_since or doc.version) if doc.hash == digest else 0
                doc = Document(path, uri, doc.language_id, text, digest, version, world, stat, same)
                self.documents[uri] = doc
                notices.append(self._change(doc))
        self._versions[uri] = doc.version
        if len(self.documents) > self.max_open:
            spare = [u for u in self.documents if u not in self.pinned and u != uri]
            for old_uri in spare[: len(self.documents) - self.max_open]:
                notices += self.close(old_uri)
        return doc, notices

    def touch(self, uri: str) -> None:
        """Mark `uri` used now (for the LRU order)."""
        if uri in self.documents:
            self.documents.move_to_end(uri)

    def close(self, uri: str) -> list[Notice]:
        self.own.discard(uri)
        self.pinned.discard(uri)
        doc = self.documents.pop(uri, None)
        if doc is None:
            return []
        params = lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        return [("textDocument/didClose", unstructure(params))]

    def reopen_all(self) -> list[Notice]:
        """didOpen for every open document (a restarted server knows none of them)."""
        return [self._open(d) for d in self.documents.values()]

    @staticmethod
    def _open(doc: Document) -> Notice:
        item = lsp.TextDocumentItem(
            uri=doc.uri, language_id=doc.language_id, version=doc.version, text=doc.text
        )
        params = lsp.DidOpenTextDocumentParams(text_document=item)
        return ("textDocument/didOpen", unstructure(params))

    @staticmethod
    def _change(doc: Document) -> Notice:
        """The whole text under a new version (every server takes a full change)."""
        params = lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=doc.text)],
        )
        return ("textDocument/didChange", unstructure(params))
