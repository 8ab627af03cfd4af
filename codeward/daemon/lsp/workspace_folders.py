"""The session roots a language server serves and its workspace folders made of them.

Its workspace `folders` are the roots not nested in another (a nested root's files are its
parent's: one folder, so the server answers them as the parent's project), kept current
with `workspace/didChangeWorkspaceFolders`; the documents no root holds any more are
closed; progress, and the server's messages for the people (`window/showMessage`,
`logMessage`, marked `notice`; its questions, `window/showMessageRequest`, offered the same
way), go to every root's sink.

`WorkspaceFolders` is the part of `server.LanguageServer` (one of its bases) that keeps
them: its methods are the actor's own, the state they share declared below."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.daemon.lsp.initialize import folders_changed
from codeward.daemon.lsp.questions import Question, offered

if TYPE_CHECKING:
    from codeward.daemon.lsp.documents import Document
    from codeward.daemon.lsp.freshness import ProgressSink


class WorkspaceFolders:
    """The roots of a server's actor and their progress sinks (a base of `LanguageServer`,
    which gives the state below)."""

    if TYPE_CHECKING:
        name: str
        _sinks: dict[Path, ProgressSink]  # root -> its progress, the first root its own

        def notify(self, method: str, params: Any) -> None: ...
        def open_documents(self) -> tuple[Document, ...]: ...
        def close_document(self, uri: str) -> None: ...

    def _progress(self, params: dict[str, Any]) -> None:
        for sink in list(self._sinks.values()):
            sink(params)

    def _notice(self, method: str, params: dict[str, Any]) -> None:
        """A message of the server for the people (`window/showMessage`, `logMessage`):
        to every root's sink, as progress, marked `notice` (the sessions route it)."""
        self._progress({"server": self.name, "notice": method, **params})

    def _question(self, params: dict[str, Any]) -> Question:
        """A question of the server for the people (`window/showMessageRequest`), offered
        to every root's sink as a `notice` carrying it (`questions.offered`)."""
        notice = {"server": self.name, "notice": "window/showMessageRequest", **params}
        return offered(params, lambda question: self._progress({**notice, "question": question}))

    @property
    def roots(self) -> list[Path]:
        """The session roots it serves, the first its own."""
        return list(self._sinks)

    @property
    def folders(self) -> list[Path]:
        """Its workspace folders: the roots not nested in another of its roots."""
        roots = self.roots
        return [r for r in roots if not any(o != r and r.is_relative_to(o) for o in roots)]

    def add_root(self, root: Path, on_progress: ProgressSink) -> None:
        """Serve `root` too; its progress goes to `on_progress`."""
        before = self.folders
        self._sinks[root] = on_progress
        self._folders_changed(before)

    def remove_root(self, root: Path) -> None:
        """Serve `root` no more: the documents no other root holds are closed."""
        before = self.folders
        if self._sinks.pop(root, None) is None:
            return
        roots = self.roots
        for doc in self.open_documents():
            if doc.path.is_relative_to(root) and not any(doc.path.is_relative_to(r) for r in roots):
                self.close_document(doc.uri)
        self._folders_changed(before)

    def _folders_changed(self, before: list[Path]) -> None:
        after = self.folders
        added = [f for f in after if f not in before]
        removed = [f for f in before if f not in after]
        if added or removed:
            self.notify("workspace/didChangeWorkspaceFolders", folders_changed(added, removed))
