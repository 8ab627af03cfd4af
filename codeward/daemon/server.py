"""The daemon: one root nursery holding the listener, the session manager and signal handling.

The daemon listens first, then loads the rest: its sessions, language-server and tool
modules are imported in a worker thread while the listener already answers `initialize`
and `daemon/status`; every other request waits for `Daemon.loaded`. The sessions come
first (`Daemon.sessions_loaded`): an MCP connection's root gets its session, and its
main servers start, while the tools still load; before that, the processes of those
servers start already (`lsp.early`).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward import __version__
from codeward.daemon import systemd
from codeward.daemon.config import Config, ConfigError, load_config
from codeward.daemon.connection import Connection
from codeward.daemon.guardian import Guardian, record_path
from codeward.daemon.handlers import DISPATCH
from codeward.daemon.listener import (
    accept_loop,
    acquire_start_lock,
    open_listener,
    peer_uid,
    prepare_directory,
    take_ready_fd,
    tell_listening,
)
from codeward.daemon.lsp.early import Spawned, canonical_root, discard
from codeward.daemon.lsp.early_process import keep, start_servers
from codeward.protocol.errors import ErrorCode
from codeward.protocol.framing import Framing, encode_frame
from codeward.protocol.messages import encode, error_response

if TYPE_CHECKING:
    from codeward.daemon.session import SessionManager

log = logging.getLogger(__name__)
# What the daemon loads once it listens (the sessions' module imports the language servers').
SESSIONS = ("codeward.daemon.session",)
TOOLS = ("codeward.daemon.tools.all", "codeward.protocol.render.tool_text")
EARLY_KEEP = 30.0  # seconds a server process started early for a root waits to be taken


class Daemon:
    def __init__(
        self,
        config: Config,
        socket_path: Path,
        config_path: Path | None = None,
        *,
        freeze: bool = False,
        early: tuple[Path, list[Spawned]] | None = None,
    ) -> None:
        self.config = config
        self.config_path = config_path
        self.socket_path = socket_path
        self.sessions: SessionManager  # set by run() once loaded
        self.sessions_loaded = trio.Event()  # `sessions` is there (the tools may not be)
        self.loaded = trio.Event()  # the sessions and the tools are there
        self._freeze = freeze  # gc.freeze() what loading built (the daemon process, not tests)
        self.guardian = Guardian(record_path(socket_path))  # kills our processes if we die
        self.connections: dict[int, Connection] = {}
        self.dispatch = DISPATCH
        self.started_at = 0.0  # set by run(): trio.current_time() needs the trio run
        self.listening = trio.Event()  # the socket accepts (before `loaded`)
        self.ready = trio.Event()
        self._next_conn_id = 0
        self._stop = trio.Event()
        self.stopping = False
        self._bound = False
        self._nursery: trio.Nursery | None = None
        self._early: set[Path] = set()  # roots whose servers were started early
        # the servers main() started for the autostarting client's root ($CODEWARD_EARLY_ROOT)
        self._spawned: list[Spawned] = []
        if early is not None:
            self._early.add(early[0])
            self._spawned = early[1]

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until SIGTERM/SIGINT or daemon/shutdown; then close everything, gracefully."""
        self.started_at = trio.current_time()
        # Edits take write leases (edits/leases.py), whose breaks are signalled with SIGIO.
        signal.signal(signal.SIGIO, signal.SIG_IGN)
        ready_fd = take_ready_fd()  # an autostarting client's, closed once we listen
        activated = bool(os.environ.get("LISTEN_FDS"))
        lock_fd = -1
        if not activated:
            prepare_directory(self.socket_path.parent)
            lock_fd = acquire_start_lock(self.socket_path)
        guard = self.guardian
        try:
            listener, self._bound = open_listener(self.socket_path)
            async with listener, trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(accept_loop, listener, self._serve_connection, nursery)
                nursery.start_soon(self._signals)
                self.listening.set()
                tell_listening(ready_fd)
                ready_fd = -1
                log.info(
                    "codeward %s listening on %s (pid %d)",
                    __version__,
                    self.socket_path,
                    os.getpid(),
                )
                await guard.start()  # first reaps what a killed predecessor left, by its record
                nursery.start_soon(guard.watch)
                if self._spawned:
                    nursery.start_soon(keep, self._spawned, EARLY_KEEP)
                    self._spawned = []  # offered: `keep` stops what nobody takes
                await self._load(nursery)
                interval = systemd.watchdog_interval()
                if interval:
                    nursery.start_soon(systemd.run_watchdog, interval)
                systemd.notify("READY=1")
                self.ready.set()
                task_status.started(self)
                await self._stop.wait()
                log.info("stopping")
                systemd.notify("STOPPING=1")
                await self._wind_down_connections()
                nursery.cancel_scope.cancel()
        finally:
            discard(self._spawned)  # never offered (the daemon did not listen)
            await guard.stop()
            if self._bound:
                with contextlib.suppress(FileNotFoundError):
                    self.socket_path.unlink()
            if lock_fd >= 0:
                os.close(lock_fd)
            if ready_fd >= 0:  # never listened: the client sees the pipe close
                os.close(ready_fd)
            log.info("stopped")

    async def _load(self, nursery: trio.Nursery) -> None:
        """Import the sessions' modules (in a thread: the listener answers meanwhile), start
        the session manager, then import the tools' modules."""
        await trio.to_thread.run_sync(_import_services, SESSIONS)
        from codeward.daemon.session import SessionManager  # imported by the thread

        self.sessions = SessionManager(self.config)
        await nursery.start(self.sessions.run)
        self.sessions_loaded.set()
        await trio.to_thread.run_sync(_import_services, TOOLS)
        if self._freeze:
            # What start-up built lives as long as the daemon: out of the collector's
            # generations, each collection walks only what requests allocate.
            gc.freeze()
        self.loaded.set()
        log.info("loaded in %.0f ms", (trio.current_time() - self.started_at) * 1e3)

    def start_early(self, root: str) -> None:
        """Start the processes of `root`'s main servers now, while the sessions' modules
        still load (`lsp.early`); nothing once they are loaded (a session opens at once)."""
        if self.sessions_loaded.is_set() or self._nursery is None:
            return
        path = canonical_root(root)
        if path is None or path in self._early:
            return  # (a root that is no directory: its session's open says so)
        self._early.add(path)
        self._nursery.start_soon(start_servers, path, self.config, EARLY_KEEP)

    async def _wind_down_connections(self) -> None:
        """Answer every request in flight (reads with an error, writes when they are done)
        and let the replies, the one to daemon/shutdown among them, reach their clients."""
        self.stopping = True
        async with trio.open_nursery() as nursery:
            for conn in list(self.connections.values()):
                nursery.start_soon(conn.wind_down, self.config.daemon.stop_timeout)

    def request_stop(self) -> None:
        self._stop.set()

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                if signum == signal.SIGHUP:
                    self.reload_config()
                else:
                    log.info("signal %s: graceful stop", signal.Signals(signum).name)
                    self.request_stop()

    def reload_config(self) -> None:
        """SIGHUP: read the config again; new sessions use it, live ones keep theirs. The
        trusted roots are read again too, and live sessions follow them at once."""
        if self.sessions_loaded.is_set():
            self.sessions.reapply_trust()
        try:
            config = load_config(self.config_path)
        except ConfigError as exc:
            log.error("config not reloaded: %s", exc)
            return
        self.config = config
        if self.sessions_loaded.is_set():
            self.sessions.config = config
            self.sessions.budget.limits = config.daemon
        log.info("config reloaded")

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        try:
            uid = peer_uid(stream)
        except OSError:
            uid = -1
        if uid != os.getuid():
            log.warning("refused a connection from uid %d", uid)
            await trio.aclose_forcefully(stream)
            return
        if self.stopping:
            await _refuse(stream, "The daemon is stopping; connect again once it is back.")
            return
        if not self._make_room():
            log.warning("refused a connection: %d open, all busy", len(self.connections))
            await _refuse(
                stream,
                f"The daemon has {len(self.connections)} connections open, all busy "
                "(daemon.max_connections); close one, or try again.",
            )
            return
        self._next_conn_id += 1
        conn = Connection(self, stream, self._next_conn_id)
        self.connections[conn.id] = conn
        try:
            await conn.serve()
        finally:
            del self.connections[conn.id]

    def _make_room(self) -> bool:
        """Whether a new connection fits, closing the longest-idle one with nothing in
        flight when the daemon is at its limit. A plain connection goes before an MCP host's
        or an editor's: those hold a session a person is using and do not reconnect alone."""
        limit = self.config.daemon.max_connections
        live = [c for c in self.connections.values() if not c.closing]
        if len(live) < limit:
            return True
        idle = [c for c in live if not c.busy]
        if not idle:
            return False
        victim = min(idle, key=lambda c: (c.mcp is not None or c.editor is not None, c.last_active))
        victim.close_with(
            "The daemon is at its connection limit (daemon.max_connections) and this "
            "connection was the longest idle; closing it. Connect again when needed."
        )
        return True

    def status(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime": round(trio.current_time() - self.started_at, 3),
            "sessions": len(self.sessions.sessions) if self.sessions_loaded.is_set() else 0,
            "connections": len(self.connections),
            "socket": str(self.socket_path),
        }


def _import_services(names: tuple[str, ...]) -> None:
    for name in names:
        importlib.import_module(name)


async def _refuse(stream: trio.SocketStream, message: str) -> None:
    """Tell a connection the daemon will not serve it (a JSON-RPC error line), then close."""
    reply = error_response(None, ErrorCode.CONNECTION_CLOSED, message)
    frame = encode_frame(Framing.NDJSON, encode(reply))
    with trio.move_on_after(1.0), contextlib.suppress(trio.BrokenResourceError, OSError):
        await stream.send_all(frame)
    await trio.aclose_forcefully(stream)
