"""The watch over a running language server: stopped when unused, restarted when its
process group grows past its memory cap or when it leaves a request it was told to cancel
unanswered while it shows no work (`_watch`, started by the supervisor with each process).

`ServerWatch` is the part of `supervisor.Supervisor` (one of its bases) that watches: its
methods are the supervisor's own, the state they share declared below."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from codeward.daemon.lsp.process import SNAPSHOT_AGE, group_usage
from codeward.daemon.lsp.server_state import ServerState

if TYPE_CHECKING:
    from codeward.daemon.config import LspConfig, ServerConfig
    from codeward.daemon.lsp.changes import Changes
    from codeward.daemon.lsp.connection import LspConnection
    from codeward.daemon.lsp.process import ServerProcess

log = logging.getLogger("codeward.lsp")

NEAR_CAP = 0.8  # of max_rss_mb: the server is told to drop what it can
WORKING_SHARE = 0.1  # of a core over a window: a server using this much is working, not hung
# Seconds at least between the two readings a CPU share is taken from (or one check, when
# longer): /proc counts CPU time in ticks of 10 ms, so over a short check a busy server on
# a loaded machine can show none and look hung.
WORK_WINDOW = 0.5
HUNG_AFTER = 10  # times lsp.cancel_grace: a request this long unanswered restarts it anyway


class ServerWatch:
    """The watch of a supervisor (a base of `Supervisor`, which gives the state below)."""

    if TYPE_CHECKING:
        name: str
        config: ServerConfig
        lsp: LspConfig
        changes: Changes
        state: ServerState
        last_used: float
        _shed: Callable[[], int]
        _working: Callable[[], bool]

        def halt(self, reason: str, *, park: bool = False, graceful: bool = True) -> None: ...

    async def _watch(self, process: ServerProcess, conn: LspConnection) -> None:
        """Every `lsp.check_interval` seconds: stop the running server when no request used
        it for `lsp.idle_stop` seconds (parked: it starts again on its next need); restart it
        when its process group uses more memory than its cap (once no request is in flight,
        or after one request timeout), or when a request it was told to cancel stays
        unanswered for `lsp.cancel_grace` seconds while it shows no work (no work-done
        progress active, and under `WORKING_SHARE` of a core over the last `WORK_WINDOW`
        measured since the request was given up on: never judged before one was;
        basedpyright busy with a large project answers a cancelled request only once its
        analysis gets there, minutes on sympy), or `HUNG_AFTER` times as long. Past
        `NEAR_CAP` of its cap it is first told to drop what it can (the documents opened
        for the daemon's own purposes)."""
        cap = self.config.max_rss_mb or self.lsp.max_rss_mb
        over_since: float | None = None
        shed = False  # told to drop what it can since it last was below NEAR_CAP
        # while it owes an answer: (its CPU seconds, when) the window being measured began,
        # and whether it worked over the last whole one (None: none measured yet)
        began: tuple[float, float] | None = None
        worked: bool | None = None
        # the walk of /proc shared with the other servers' watches: one newer than its last
        # check's by at least half an interval (`process.SNAPSHOT_AGE`)
        fresh = min(SNAPSHOT_AGE, self.lsp.check_interval / 2)
        while not conn.closed.is_set():
            await trio.sleep(self.lsp.check_interval)
            if self.state is not ServerState.RUNNING:
                continue
            if self._idle(conn):
                idle = self.lsp.idle_stop
                self.halt(
                    f"unused for {idle:g} s (lsp.idle_stop); it starts again on its next need",
                    park=True,
                )
                return
            usage = await trio.to_thread.run_sync(group_usage, process.pid, fresh)
            overdue = conn.oldest_abandoned()
            hung = False
            if overdue is None:
                began, worked = None, None
            else:  # it owes an answer to a cancelled request: is it working or hung?
                now = (usage.cpu, usage.taken)  # over the walks' own times
                if began is None:
                    began = now
                elif now[1] - began[1] >= WORK_WINDOW:
                    worked = (now[0] - began[0]) >= WORKING_SHARE * (now[1] - began[1])
                    began = now
                hung = worked is False and not self._working()
            grace = self.lsp.cancel_grace
            if overdue is not None and (
                (overdue[1] >= grace and hung) or overdue[1] >= grace * HUNG_AFTER
            ):
                self.halt(
                    f"it left a cancelled {overdue[0]} unanswered for {overdue[1]:.0f} s",
                    graceful=False,
                )
                return
            rss = usage.rss
            if rss <= cap * NEAR_CAP * 1024 * 1024:
                shed = False
            elif not shed:  # near its cap: told once to drop what it can
                shed = True
                closed = self._shed()
                log.info("%s: near its memory cap: %d documents closed", self.name, closed)
                self.changes.touch()
            if rss <= cap * 1024 * 1024:
                over_since = None
                continue
            now = trio.current_time()
            over_since = now if over_since is None else over_since
            if conn.in_flight == 0 or now - over_since >= self.lsp.request_timeout:
                self.halt(f"it used {rss // (1024 * 1024)} MB, above its max_rss_mb of {cap}")
                return

    def _idle(self, conn: LspConnection) -> bool:
        """Whether no request used it for `lsp.idle_stop` seconds (and none is in flight)."""
        idle = self.lsp.idle_stop
        return bool(idle) and conn.in_flight == 0 and trio.current_time() - self.last_used >= idle
