"""Document symbol trees kept while the text they were answered for stays the same: a
workspace-symbols call asks up to 50 files' outlines (to leave out locals), and reading a
large file's tree again costs the daemon more than the server's answer (sympy: about 15 ms
of CPU a file, 0.8 s a call).

A tree is kept with the text the servers saw (its `LineIndex` object: an open document's,
or the disk's as `Texts` keeps it by stat) and is used again only while the servers' text
of the file is that very object and matches the disk's stat now: an edit, a change on disk
or an editor's buffer (whose text is not the disk's) asks the server again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from codeward.daemon.caches import keyed_by_paths
from codeward.daemon.files import UNTRUSTED, stat_key
from codeward.daemon.intel.symbols import Callables, DocumentSymbols
from codeward.daemon.lsp.positions import LineIndex
from codeward.daemon.lsp.service import Answer, LanguageService
from codeward.daemon.lsp.uris import path_to_uri

SIZE = 64  # trees kept, the least recently used dropped first


def text_now(manager: LanguageService, path: Path) -> LineIndex | None:
    """The text the servers see for `path` when it is the disk's as its stat is now (None
    otherwise: a tree of it is neither used nor kept)."""
    index = manager.line_index(path)
    try:
        stat = stat_key(path.stat())
    except OSError:
        return None
    if index is None or stat is UNTRUSTED or manager.known_text(path, stat) is not index:
        return None
    return index


@dataclass
class _Kept:
    index: LineIndex  # the text the tree was answered for
    tree: DocumentSymbols
    answer: Answer
    callables: Callables | None = None  # where its functions lie, made when first asked


class Outlines:
    """The last `SIZE` trees asked, by path, each with the text it was answered for."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Path, _Kept] = OrderedDict()

    def get(self, manager: LanguageService, path: Path) -> tuple[DocumentSymbols, Answer] | None:
        kept = self._kept.get(path)
        if kept is None or kept.answer.service is not manager:
            return None
        if text_now(manager, path) is not kept.index:
            del self._kept[path]
            return None
        self._kept.move_to_end(path)
        return kept.tree, kept.answer

    def callables(self, path: Path, tree: DocumentSymbols, answer: Answer) -> Callables:
        """The functions of `tree` (`answer`'s, of `path`) in client positions: made once
        while the tree is kept (in the text it was answered for), else for this call."""
        kept = self._kept.get(path)
        if kept is None or kept.tree is not tree:
            uri = path_to_uri(path)
            return Callables(tree, lambda p: answer.point(uri, p))
        if kept.callables is None:
            index, encoding = kept.index, answer.encoding
            kept.callables = Callables(
                tree, lambda p: index.to_client(p.line, p.character, encoding)
            )
        return kept.callables

    def put(
        self, manager: LanguageService, path: Path, tree: DocumentSymbols, answer: Answer
    ) -> None:
        """Keep `tree` if the servers' text of `path` is the disk's now (asked after the
        answer: the text it was answered for, unless the file changed meanwhile)."""
        index = text_now(manager, path)
        if index is None:
            return
        self._kept[path] = _Kept(index, tree, answer)
        self._kept.move_to_end(path)
        while len(self._kept) > SIZE:
            self._kept.popitem(last=False)

    def cache_clear(self) -> None:
        self._kept.clear()

    def cache_info(self) -> SimpleNamespace:
        return SimpleNamespace(currsize=len(self._kept))


OUTLINES = keyed_by_paths(Outlines())
