"""Server processes shared by the roots of one repository.

Sessions stay one per root, but their servers need not be: the roots of one repository (the
same git common directory: its linked worktrees, and roots nested in it) share one process
per server, each root a workspace folder of it, where the server serves several folders
well (`ServerConfig.folders`) and the roots start it with the same configuration and the
same trust (a restricted and a trusted root never share). Documents, answers, freshness and
previews stay per root: a root's documents are opened under its own URIs, and what a
server says of another root's files is outside the asking root (dropped as ever).

    shared = SharedServers()
    await nursery.start(shared.run)            # the shared actors run in its nursery
    server = shared.acquire(key, root, on_progress, make)   # join, or start one
    shared.release(server, root)               # the last folder out stops it
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from codeward.daemon.lsp.freshness import ProgressSink
from codeward.daemon.lsp.overlay import Overlay
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.server import LanguageServer

log = logging.getLogger("codeward.lsp")

# (repository, server name, its configuration as started (JSON), restricted)
Key = tuple[str, str, bytes, bool]


def repository_of(root: Path) -> str | None:
    """The git common directory (canonical) of the repository `root` lies in, read from
    disk without running git: the `.git` folder of `root` or of its nearest parent that
    has one, or, for a linked worktree, the common directory its `.git` file leads to.
    None outside a repository, or for a `.git` file that is not what `git worktree add`
    makes (its folder under the common directory's `worktrees/` must point back to it):
    such a root shares nothing."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return os.path.realpath(dot_git)
        if dot_git.is_file():
            return _worktree_common_dir(dot_git)
    return None


def _worktree_common_dir(dot_git: Path) -> str | None:
    """The common directory of the linked worktree whose `.git` file is `dot_git`."""
    try:
        line = dot_git.read_text(encoding="utf-8", errors="strict").strip()
        if not line.startswith("gitdir:"):
            return None
        git_dir = Path(os.path.realpath(dot_git.parent / line.removeprefix("gitdir:").strip()))
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        back = (git_dir / "gitdir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError):
        return None
    common_dir = os.path.realpath(git_dir / common)
    if git_dir.parent != Path(common_dir) / "worktrees":
        return None
    if os.path.realpath(git_dir / back) != os.path.realpath(dot_git):
        return None
    return common_dir


@dataclass
class Repository:
    """What the sessions of one repository hold together: one gate (a preview in one root
    has the shared processes to itself for its duration, as within one session) and the
    files under preview, by absolute path, and the editors' buffers (`overlay`)."""

    gate: Gate = field(default_factory=Gate)
    previews: dict[Path, bytes] = field(default_factory=dict)
    overlay: Overlay = field(default_factory=Overlay)
    sessions: int = 0


class SharedServers:
    """Key -> the actor of a shared server process, run in the nursery of `run`; and the
    gate and previews of each repository's sessions."""

    def __init__(self, on_gone: Callable[[], None] | None = None) -> None:
        self._servers: dict[Key, LanguageServer] = {}
        # called when an actor's run ended (what it held, its roots' sinks among it, is
        # garbage once this returns: the daemon's `caches.Reclaim.request`)
        self._on_gone = on_gone
        self._repositories: dict[str, Repository] = {}
        self._nursery: trio.Nursery | None = None

    def join(self, repository: str) -> Repository:
        """What a new session of `repository` shares with the others (`leave` when done)."""
        held = self._repositories.setdefault(repository, Repository())
        held.sessions += 1
        return held

    def leave(self, repository: str) -> None:
        held = self._repositories.get(repository)
        if held is not None:
            held.sessions -= 1
            if held.sessions <= 0:
                del self._repositories[repository]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the shared actors until cancelled; then every one stops."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    @property
    def running(self) -> bool:
        return self._nursery is not None

    def acquire(
        self,
        key: Key,
        root: Path,
        on_progress: ProgressSink,
        make: Callable[[], LanguageServer],
    ) -> LanguageServer:
        """The shared actor of `key` serving `root` too: the one running, or a
        new one made by `make()` (for `root`) and run here."""
        server = self._servers.get(key)
        if server is not None:
            server.add_root(root, on_progress)
            return server
        assert self._nursery is not None, "the shared servers are not running"
        server = make()
        self._servers[key] = server
        self._nursery.start_soon(self._run, key, server)
        return server

    async def _run(self, key: Key, server: LanguageServer) -> None:
        try:
            await server.run()
        finally:
            if self._servers.get(key) is server:
                del self._servers[key]
            if self._on_gone is not None:
                self._on_gone()

    def release(self, server: LanguageServer, root: Path) -> bool:
        """`root` no longer uses `server`: it serves it no more, and the process is
        stopped when no root is left. Whether it was stopped."""
        if server.roots != [root]:
            server.remove_root(root)
            return False
        for key, known in list(self._servers.items()):
            if known is server:
                del self._servers[key]
        log.info("%s: its last workspace folder closed: stopping", server.name)
        server.stop()
        return True

    def shares(self, server: LanguageServer) -> bool:
        """Whether `server` is one of the shared actors."""
        return any(known is server for known in self._servers.values())
