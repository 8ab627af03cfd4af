"""Sessions: one per project root, each owning a nursery with its Lua actor and language servers.

The `SessionManager` owns the nursery the sessions run in. A session outlives its clients
by the idle timeout, then stops its servers.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from codeward.daemon import caches, child_path
from codeward.daemon.config import Config, PolicyConfig
from codeward.daemon.edits.history import DiagnosticsHistory
from codeward.daemon.edits.writer import RootWriter
from codeward.daemon.lsp import LanguageService, Question, SharedServers, repository_of
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lua import LuaActor
from codeward.daemon.project_config import effective_config
from codeward.daemon.trust import TrustStore
from codeward.protocol.errors import ErrorKind, ToolError

log = logging.getLogger(__name__)

ProgressListener = Callable[[dict[str, Any]], None]


class Asking:
    """`Session.asking`'s hold (a class, not a generator: it is on every editor request's
    path): the servers one client's request is in flight on, counted per server."""

    __slots__ = ("_asking", "_client", "_servers")

    def __init__(self, asking: dict[str, Counter[int]], client_id: int) -> None:
        self._asking = asking
        self._client = client_id
        self._servers: list[str] = []

    def __enter__(self) -> Callable[[str], None]:
        return self.add

    def add(self, server: str) -> None:
        if server not in self._servers:
            self._servers.append(server)
            counts = self._asking.get(server)
            if counts is None:
                counts = self._asking[server] = Counter()
            counts[self._client] += 1

    def __exit__(self, *exc_info: object) -> None:
        for server in self._servers:
            counts = self._asking[server]
            counts[self._client] -= 1
            if counts[self._client] <= 0:
                del counts[self._client]
            if not counts:
                del self._asking[server]


class Session:
    def __init__(
        self,
        session_id: str,
        root: Path,
        config: Config,
        budget: ServerBudget | None = None,
        *,
        trusted: bool,
        shared: SharedServers | None = None,
        narrowed: dict[str, list[str]] | None = None,
    ) -> None:
        self.id = session_id
        self.root = root
        self.config = config
        # per language, the servers the project's .codeward.toml left out
        self.narrowed: dict[str, list[str]] = narrowed or {}
        self.trusted = trusted
        self._trust_lock = trio.Lock()
        self.policy: PolicyConfig = config.policy
        self.lua = LuaActor(config.lua)
        self.lsp = LanguageService(
            root,
            config,
            self.publish_progress,
            budget,
            restricted=not trusted,
            shared=shared,
            repository=repository_of(root) if shared is not None else None,
        )
        limit = config.lsp.max_file_bytes
        self.writer = RootWriter(
            root, self.files_changed, limit, self.lsp.editor_buffers, self.lsp.editor_settled
        )
        self.diagnostics_history = DiagnosticsHistory()  # what get_diagnostics reported
        self.clients: set[int] = set()
        self.progress_listeners: dict[int, ProgressListener] = {}
        # the servers' messages for the people (editors); the clients asking each server now
        self.notice_listeners: dict[int, ProgressListener] = {}
        self._asking: dict[str, Counter[int]] = {}
        self.started = trio.Event()
        self.closing = trio.Event()  # set when it decided to stop: nobody may attach any more
        self.stopped = trio.Event()
        self._last_active = trio.current_time()
        self._clients_changed = trio.Event()
        self._cancel_scope = trio.CancelScope()

    # ---- life ----------------------------------------------------------------------------

    async def run(
        self, idle_timeout: float, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            with self._cancel_scope:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self.lua.run)
                    await nursery.start(self.writer.run)
                    await nursery.start(self.lsp.run)
                    self.started.set()
                    task_status.started()
                    await self._wait_until_idle(idle_timeout)
                    log.info("session %s idle for %.0f s: stopping", self.id, idle_timeout)
                    nursery.cancel_scope.cancel()
        finally:
            self.closing.set()
            self.stopped.set()

    async def _wait_until_idle(self, idle_timeout: float) -> None:
        while True:
            if self.clients:
                await self._clients_changed.wait()
                continue
            with trio.move_on_after(idle_timeout):
                await self._clients_changed.wait()
                continue
            if not self.clients:
                # Decided in the same step as the check: a session/open from here on gets
                # a new session, never this dying one.
                self.closing.set()
                return

    @property
    def alive(self) -> bool:
        """Started and not stopping: a client may attach."""
        return self.started.is_set() and not self.closing.is_set()

    def stop(self) -> None:
        self.closing.set()
        self._cancel_scope.cancel()

    @property
    def restricted(self) -> bool:
        """An untrusted root: its language servers run in their restricted configuration."""
        return not self.trusted

    async def set_trusted(self, trusted: bool) -> bool:
        """Apply a change of the root's trust: the servers restart in their new
        configuration. Whether anything changed."""
        async with self._trust_lock:  # one restart at a time, the last word wins
            if trusted == self.trusted:
                return False
            self.trusted = trusted
            log.info("session %s %s: restarting its servers", self.id, _trust_word(trusted))
            await self.lsp.set_restricted(not trusted)
            return True

    # ---- clients -------------------------------------------------------------------------

    def attach(
        self,
        client_id: int,
        progress: ProgressListener | None = None,
        notices: ProgressListener | None = None,
    ) -> None:
        """`notices`: the servers' messages for the people (`window/showMessage`,
        `logMessage`): those a server sends while the client's request is in flight on it
        (`asking`), and those sent while no client's request is; its questions
        (`window/showMessageRequest`, `questions.Question`) are offered the same way."""
        self.clients.add(client_id)
        if progress is not None:
            self.progress_listeners[client_id] = progress
        if notices is not None:
            self.notice_listeners[client_id] = notices
        self._touch()

    def detach(self, client_id: int) -> None:
        self.clients.discard(client_id)
        self.progress_listeners.pop(client_id, None)
        self.notice_listeners.pop(client_id, None)
        self._touch()

    def asking(self, client_id: int) -> Asking:
        """While a client's request runs (`with session.asking(client_id) as asking:`):
        call `asking` with each server it is sent to, so that server's messages meanwhile
        go to that client."""
        return Asking(self._asking, client_id)

    def _touch(self) -> None:
        self._last_active = trio.current_time()
        self._clients_changed.set()
        self._clients_changed = trio.Event()

    def idle_seconds(self) -> float:
        return 0.0 if self.clients else max(0.0, trio.current_time() - self._last_active)

    # ---- services for tools --------------------------------------------------------------

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        """Work-tree files changed by git writes or edits (`created`: those of them that
        are new): tell the language servers."""
        if paths:
            self.lsp.files_changed(paths, created)

    def publish_progress(self, params: dict[str, Any]) -> None:
        message = {"session_id": self.id, **params}
        if "notice" in params:  # a message for the people (see `attach`)
            asking = self._asking.get(params.get("server", ""))
            question = params.get("question")
            if isinstance(question, Question):
                self._offer(question, asking, message)
                return
            for client_id, listener in list(self.notice_listeners.items()):
                if not asking or client_id in asking:
                    listener(message)
            return
        for listener in list(self.progress_listeners.values()):
            listener(message)

    def _offer(
        self, question: Question, asking: Counter[int] | None, message: dict[str, Any]
    ) -> None:
        """A server's question, to the editors of its stage (`questions`) until one takes
        it: those whose request is in flight on the server, else any (which declared)."""
        if asking:
            question.in_flight = True
        elif question.stage != "declared":
            return
        for client_id, listener in list(self.notice_listeners.items()):
            if question.taken:
                return
            if not asking or client_id in asking:
                listener(message)

    def info(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "root": str(self.root),
            "trusted": self.trusted,
            "clients": len(self.clients),
            "idle_seconds": round(self.idle_seconds(), 1),
            "servers": self.lsp.status(),
        }


def _trust_word(trusted: bool) -> str:
    return "trusted" if trusted else "no longer trusted"


class SessionManager:
    """Owns the nursery every session runs in; finds a session by id or by canonical root."""

    def __init__(self, config: Config, trust: TrustStore | None = None) -> None:
        self.config = config
        self.trust = trust or TrustStore()
        self.sessions: dict[str, Session] = {}
        self._by_root: dict[Path, Session] = {}
        self.budget = ServerBudget(config.daemon)  # caps live servers across sessions
        # the trims after a session (or a shared process that served it) ended
        self.reclaim = caches.Reclaim()
        # server processes shared by a repository's roots
        self.shared = SharedServers(on_gone=self.reclaim.request)
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.reclaim.run)
            await nursery.start(self.shared.run)
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def open(self, root: str) -> tuple[Session, bool]:
        """The live session of `root` (canonical realpath), or a new one started for it."""
        if "\x00" in root:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "The root has a NUL character in its path; give an existing directory.",
            )
        path = Path(os.path.realpath(os.path.expanduser(root)))
        try:
            mode = path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(
                ErrorKind.FILE_NOT_FOUND, "The root does not exist; give an existing directory."
            ) from None
        except OSError as exc:  # a name too long, a folder on the way not searchable
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"The root cannot be opened ({exc.strerror}); give an existing directory.",
            ) from None
        if not stat.S_ISDIR(mode):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "The root is not a directory; give a directory."
            )
        while (existing := self._by_root.get(path)) is not None and not existing.closing.is_set():
            await existing.started.wait()
            if existing.alive and existing.trusted != self.trust.is_trusted(path):
                await existing.set_trusted(not existing.trusted)  # the file was edited
                continue  # and check again: nothing may be awaited before the attach
            if existing.alive:  # nothing is awaited between this check and the caller's attach
                existing.lsp.restart_failed()
                return existing, False
        # No session, or one stopping (idle, terminated): a new session takes the root at
        # once, while the old one stops its servers.
        assert self._nursery is not None, "the session manager is not running"
        try:
            config, narrowed = effective_config(self.config, path)
        except Exception as exc:  # a broken .codeward.toml
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"The project's .codeward.toml cannot be used: {exc}"
            ) from None
        trusted = self.trust.is_trusted(path)
        child_path.enter_root(path)  # no program codeward starts finds one of it on PATH
        try:
            session = Session(
                secrets.token_hex(8),
                path,
                config,
                self.budget,
                trusted=trusted,
                shared=self.shared,
                narrowed=narrowed,
            )
        except BaseException:
            child_path.leave_root(path)
            raise
        self.sessions[session.id] = session
        self._by_root[path] = session
        self._nursery.start_soon(self._run_session, session)
        await session.started.wait()
        if not session.alive:
            raise ToolError(ErrorKind.LSP_ERROR, "The session failed to start; see the daemon log.")
        log.info("session %s opened for %s", session.id, path)
        return session, True

    async def _run_session(self, session: Session) -> None:
        try:
            await session.run(self.config.daemon.idle_timeout)
        except Exception:
            log.exception("session %s failed", session.id)
            session.started.set()
        finally:
            child_path.leave_root(session.root)
            self.sessions.pop(session.id, None)
            if self._by_root.get(session.root) is session:
                del self._by_root[session.root]
            caches.release()  # its paths and URIs are not kept by them
            self.reclaim.request()  # what it freed goes back to the system

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.closing.is_set() or session.stopped.is_set():
            raise ToolError(
                ErrorKind.SESSION_NOT_FOUND,
                "No live session has that id; call session/open with a root.",
            )
        return session

    def reapply_trust(self) -> None:
        """`apply_trust` in the background (SIGHUP: the file may have been edited)."""
        if self._nursery is not None:
            self._nursery.start_soon(self.apply_trust)

    async def apply_trust(self) -> list[str]:
        """Give every live session the trust the store says it has now (its servers
        restart where it changed, concurrently); the ids of the sessions that changed."""
        changed: list[str] = []

        async def one(session: Session) -> None:
            if await session.set_trusted(self.trust.is_trusted(session.root)):
                changed.append(session.id)

        async with trio.open_nursery() as nursery:
            for session in list(self.sessions.values()):
                if not session.stopped.is_set():
                    nursery.start_soon(one, session)
        return sorted(changed)
