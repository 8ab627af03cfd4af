"""The editor's roots: the folders of its `initialize` (workspace folders, else `rootUri`,
else `rootPath`), each served by the session of that folder (one per folder, opened and
trusted as any session is), and which root a document belongs to."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.lsp.uris import real_path, uri_to_path
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.protocol.lsp import InitializeParams

if TYPE_CHECKING:
    from codeward.daemon.session import Session, SessionManager

log = logging.getLogger(__name__)
Progress = Callable[[dict[str, Any]], None]


def folders_of(params: InitializeParams) -> list[str]:
    """The root folders an `initialize` names, each once, in its order."""
    uris: list[str] = []
    if params.workspace_folders:
        uris = [folder.uri for folder in params.workspace_folders]
    elif params.root_uri:
        uris = [params.root_uri]
    paths = [str(p) for p in map(folder_path, uris) if p is not None]
    if not uris and params.root_path:
        paths = [params.root_path]
    if not paths:
        raise ToolError(
            ErrorKind.NO_SESSION,
            "initialize names no folder (workspaceFolders, rootUri or rootPath); open a "
            "project folder in the editor (its root directory) and start the server again.",
        )
    return list(dict.fromkeys(paths))


def folder_path(uri: str) -> Path | None:
    """The path of a folder's URI; None when it is no URL."""
    try:
        return uri_to_path(uri)
    except ValueError:  # not a URL (the folder is then not one)
        return None


@dataclass
class Root:
    path: Path  # canonical
    session: Session


class Workspace:
    """The sessions of one editor's roots, attached to its connection while it lasts."""

    def __init__(
        self,
        sessions: SessionManager,
        client_id: int,
        progress: Progress,
        notices: Progress | None = None,
    ) -> None:
        self.sessions = sessions
        self.client_id = client_id
        self.progress = progress
        self.notices = notices  # the servers' messages for the editor
        self.roots: list[Root] = []
        self._located: dict[str, tuple[Root, Path] | None] = {}  # by URI (a hover's cost)
        # a root's session opened again (it was closed while the editor is connected): the
        # editor's buffers there handed to it (set by the dialect)
        self.reopened: Callable[[Root], Awaitable[None]] | None = None
        self._reopening = trio.Lock()
        self._watching: trio.Nursery | None = None
        self._stopping: Callable[[], bool] = lambda: False  # the daemon is stopping

    async def open(self, folders: list[str]) -> None:
        """Open (or join) the session of each folder; the first failure is raised."""
        for folder in folders:
            session, _ = await self.sessions.open(folder)
            session.attach(self.client_id, self.progress, self.notices)  # (nothing awaited)
            self.roots.append(Root(session.root, session))

    async def add(self, folder: str) -> Root | None:
        """Open (or join) the session of a folder the editor added; None when it is one
        of its roots already. Raises `ToolError` as `open` does."""
        session, _ = await self.sessions.open(folder)
        if any(root.path == session.root for root in self.roots):
            return None
        session.attach(self.client_id, self.progress, self.notices)
        root = Root(session.root, session)
        self.roots.append(root)
        self._located.clear()
        if self._watching is not None:
            self._watching.start_soon(self._keep, root)
        return root

    def remove(self, folder: str) -> Root | None:
        """Leave the root of a folder the editor removed (its session lets go of this
        editor); None when it is none of its roots."""
        path = folder_path(folder)
        canonical = Path(real_path(path)) if path is not None else None
        for root in self.roots:
            if root.path == canonical:
                self.roots.remove(root)
                root.session.detach(self.client_id)
                self._located.clear()
                return root
        return None

    async def session(self, root: Root) -> Session:
        """The live session of `root` (opened again when it was closed meanwhile, the
        editor's buffers there handed to it)."""
        if root.session.stopped.is_set():
            async with self._reopening:
                if root.session.stopped.is_set():
                    root.session, _ = await self.sessions.open(str(root.path))
                    root.session.attach(self.client_id, self.progress, self.notices)
                    if self.reopened is not None:
                        await self.reopened(root)
        return root.session

    async def watch(self, stopping: Callable[[], bool]) -> None:
        """Open again at once the session of a root closed while the editor is connected
        (`codeward sessions close`), so its servers and agents keep seeing the editor's
        buffers; until cancelled (owner: the dialect's background scope)."""
        self._stopping = stopping
        async with trio.open_nursery() as nursery:
            self._watching = nursery
            for root in self.roots:
                nursery.start_soon(self._keep, root)

    async def _keep(self, root: Root) -> None:
        while root in self.roots:
            await root.session.stopped.wait()
            if self._stopping() or root not in self.roots:
                return
            try:
                await self.session(root)
            except Exception:  # (the daemon stopping, the folder gone: the next request says)
                log.warning("the session of %s did not open again", root.path, exc_info=True)
                return

    def locate(self, uri: str) -> tuple[Root, Path] | None:
        """The root holding the document `uri` (the deepest one), and its canonical path;
        None for a document outside every root or no file."""
        if uri in self._located:
            return self._located[uri]
        found = self._locate(uri)
        if len(self._located) >= 4096:
            self._located.clear()
        self._located[uri] = found
        return found

    def _locate(self, uri: str) -> tuple[Root, Path] | None:
        try:
            path = uri_to_path(uri)
            canonical = None if path is None else Path(real_path(path))
        except (ValueError, ToolError):  # a NUL, a URL that does not parse, a path in flux
            return None
        if canonical is None:
            return None
        best: Root | None = None
        for root in self.roots:
            if canonical.is_relative_to(root.path) and (
                best is None or len(root.path.parts) > len(best.path.parts)
            ):
                best = root
        return None if best is None else (best, canonical)

    def release(self) -> None:
        """The editor is gone: its connection leaves every session."""
        for root in self.roots:
            root.session.detach(self.client_id)
