"""Diagnostics freshness of one server: what it published for which version, what it
answered to pulls, its work-done progress, and the waits built on them (a document's
diagnostics for its content now, a workspace pull, readiness).

Whether a server's answers can be trusted beyond its progress (rust-analyzer quiescent, a
project loaded, an index built) is its `readiness.Readiness`, made anew for each process:
it sees the notifications it `listens` to, says whether a publish `counts`, and
`ready(progress, documents)` gates `wait_ready` (and, when `strict`, a document's
diagnostics). A server configured with `diagnostics_from = "tsserver"` has a document's
diagnostics asked of tsserver (`tsserver.diagnostics`) before its pushes are waited for.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.lsp import tsserver
from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.connection import (
    ConnectionClosed,
    LspConnection,
    RequestTimeout,
    ResponseError,
)
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.readiness import Readiness
from codeward.daemon.lsp.shapes import (
    OffSpec,
    answer,
    document_params,
    lenient,
    off_spec,
    result_type,
    structure,
    unstructure,
)
from codeward.daemon.lsp.uris import uri_to_path
from codeward.protocol.errors import ErrorKind, ToolError

log = logging.getLogger("codeward.lsp")

QUIET = 0.3  # seconds without news before a streamed workspace pull may be over
BARRIER = "$/codeward/barrier"  # a request every server must refuse: its answer orders output
# clangd's own per-file status (asked for with `clangdFileStatus`): "idle" once it has taken
# every update of the file. A text sent again unchanged ends idle without a publish when
# nothing it includes changed; otherwise it rebuilds ("parsing includes", then a publish).
FILE_STATUS = "textDocument/clangd.fileStatus"
_TOKENS = itertools.count(1)

ProgressSink = Callable[[dict[str, Any]], None]
Request = Callable[..., Awaitable[Any]]


@dataclass
class Published:
    """The diagnostics a server last pushed for a document, and the version they describe."""

    version: int | None
    diagnostics: Sequence[lsp.Diagnostic]


def left_out(server: str, method: str, wrong: list[str]) -> None:
    """Log the diagnostics of a `method` left out for being off the LSP spec."""
    if wrong:
        log.warning(
            "%s: %d diagnostics of %s off the LSP spec left out: %s",
            server,
            len(wrong),
            method,
            wrong[0],
        )


class Freshness:
    def __init__(
        self,
        name: str,
        changes: Changes,
        *,
        request: Request,
        connection: Callable[[], LspConnection | None],
        pulls: Callable[[], bool],
        on_progress: ProgressSink,
        request_timeout: float,
        ready_timeout: float,
        documents: Callable[[], int],
        current: Callable[[str], Document | None],
        readiness: Callable[[], Readiness] = Readiness,
        from_tsserver: Callable[[], bool] = lambda: False,
    ) -> None:
        self.name = name
        self.changes = changes
        self._make_readiness = readiness
        self.readiness = Readiness()  # idle until its first process: see `reset`
        self._documents = documents  # how many documents the server has open
        self._current = current  # the version of a document the server has open now
        self._ready_timeout = ready_timeout
        self._from_tsserver = from_tsserver  # its diagnostics asked of tsserver (see tsserver)
        self._request = request
        self._connection = connection
        self._pulls = pulls  # whether the server offers pull diagnostics now
        self._on_progress = on_progress
        self._request_timeout = request_timeout
        self.published: dict[str, Published] = {}
        self.analysed: dict[str, int] = {}  # uri -> version answered by a diagnostic pull
        self.statuses = 0  # file statuses seen so far (each one's number orders them)
        self.status: dict[str, tuple[int, str]] = {}  # uri -> (number, state) of its last
        self._resent: dict[str, tuple[int, int]] = {}  # uri -> (version, statuses when sent)
        self.progress: dict[int | str, str] = {}  # active work-done progress: token -> title
        self.announced: set[int | str] = set()  # tokens it created and has not begun yet
        self.push_silent = False  # it never pushed diagnostics and let a settle time out
        self.partial: dict[int | str, Callable[[Any], None]] = {}  # token -> partial results

    def reset(self) -> None:
        """A new process: nothing it said before counts."""
        self.published.clear()
        self.analysed.clear()
        self.status.clear()
        self._resent.clear()
        self.progress.clear()
        self.announced.clear()
        self.readiness = self._make_readiness()

    # -- what the server sends --------------------------------------------------------

    def on_publish(self, params: lsp.PublishDiagnosticsParams, version: int | None) -> None:
        """publishDiagnostics; `version` is the open document's when the server sent none."""
        if not self.readiness.counts():
            return  # a stand-in published before it began to load
        self.published[params.uri] = Published(version, params.diagnostics)
        self.push_silent = False
        self.changes.touch()

    def on_created(self, token: int | str) -> None:
        """window/workDoneProgress/create."""
        self.announced.add(token)
        self.changes.touch()

    def on_progress(self, params: lsp.ProgressParams) -> None:
        """$/progress: partial results of a pull, or work-done progress."""
        sink = self.partial.get(params.token)
        if sink is not None:
            sink(params.value)
            return
        value = params.value if isinstance(params.value, dict) else {}
        kind = value.get("kind")
        if kind not in ("begin", "report", "end"):
            return  # partial results, not work-done progress
        self.announced.discard(params.token)
        title = value.get("title") or self.progress.get(params.token, "")
        if kind == "begin":
            self.progress[params.token] = str(title)
        elif kind == "end":
            self.progress.pop(params.token, None)
        self.changes.touch()
        self._on_progress(
            {
                "server": self.name,
                "token": params.token,
                "kind": kind,
                "title": title,
                "message": value.get("message"),
                "percentage": value.get("percentage"),
            }
        )

    def listens(self, method: str) -> bool:
        """Whether the server's readiness, or the file status, wants to see `method`."""
        return method == FILE_STATUS or method in self.readiness.listens

    def observe(self, method: str, params: Any) -> None:
        """A notification `listens` asked for."""
        if method == FILE_STATUS:
            self._file_status(params)
        elif self.readiness.observe(method, params):
            self.changes.touch()

    def _file_status(self, params: Any) -> None:
        if isinstance(params, dict):
            uri, state = params.get("uri"), params.get("state")
            if isinstance(uri, str) and isinstance(state, str):
                self.statuses += 1
                self.status[uri] = (self.statuses, state)
                self.changes.touch()

    def forget(self, uri: str) -> None:
        """A closed document: what it published no longer stands."""
        self.published.pop(uri, None)
        self.status.pop(uri, None)
        self._resent.pop(uri, None)

    # -- waits ------------------------------------------------------------------------

    async def document_diagnostics(
        self, doc: Document, settle: float
    ) -> Sequence[lsp.Diagnostic] | None:
        """Diagnostics for this content of `doc`: pulled, or the push for its version.

        None when no answer came within `settle` seconds.
        """

        def answered() -> bool:
            published = self.published.get(doc.uri)
            return published is not None and (published.version or 0) >= doc.version

        if self.readiness.strict and not await self.until_ready(self._ready_timeout):
            return None
        if self._from_tsserver():
            with trio.move_on_after(settle):
                pulled = await tsserver.diagnostics(self._request, str(doc.path), settle)
                if pulled is not None and self._current(doc.uri) is doc:  # not changed since
                    self.analysed[doc.uri] = doc.version
                    self.changes.touch()
                    return pulled
        with trio.move_on_after(settle):
            if not self._pulls():
                # A server may register pull diagnostics only after `initialized`.
                if self.push_silent and doc.uri not in self.published:
                    return []
                if await self._unchanged(doc, answered):
                    return self.published[doc.uri].diagnostics
                await self.changes.wait_for(lambda: answered() or self._pulls(), math.inf)
                if answered():
                    return self.published[doc.uri].diagnostics
            try:
                method = "textDocument/diagnostic"
                result = await self._request(
                    method, document_params(method, doc.uri), timeout=settle
                )
            except ToolError as exc:
                if exc.kind is ErrorKind.TIMEOUT:
                    return None
                raise
            try:
                report, wrong = lenient(result, result_type(method), "items", lsp.Diagnostic)
            except OffSpec as exc:
                raise off_spec(self.name, method, exc.detail) from None
            left_out(self.name, method, wrong)
            self.analysed[doc.uri] = doc.version
            self.changes.touch()
            if isinstance(report, lsp.RelatedFullDocumentDiagnosticReport):
                return report.items
            return []  # "unchanged": codeward sends no previous result id to go by
        if not self.published and not self._pulls():
            self.push_silent = True
        return None

    async def _unchanged(self, doc: Document, answered: Callable[[], bool]) -> bool:
        """For a text sent again unchanged (`doc.same_since`) to a server with file statuses:
        whether it took it without a new publish, so that what it published for this text
        stands. Its status must go idle after the resend and stay quiet for `QUIET` (a
        rebuild of what the file includes says "parsing includes" first, then publishes).
        False as soon as `answered()` (the new publish came), and at once for any other
        document or a server that sends no file statuses."""
        published = self.published.get(doc.uri)
        if not doc.same_since or published is None or (published.version or 0) < doc.same_since:
            return False
        if not self.status:
            return False  # no file statuses from this server: its publish is awaited

        def last() -> tuple[int, str]:
            return self.status.get(doc.uri, (0, ""))

        # the first wait for a resend comes right after it was sent: later statuses are
        # about it (a second wait for the same version goes by the same mark)
        version, mark = self._resent.get(doc.uri, (0, 0))
        if version != doc.version:
            mark = self.statuses
            self._resent[doc.uri] = (doc.version, mark)
        while True:
            await self.changes.wait_for(
                lambda m=mark: answered() or (last()[0] > m and last()[1] == "idle"), math.inf
            )
            if answered():
                return False
            mark = last()[0]
            with trio.move_on_after(QUIET):
                await self.changes.wait_for(lambda m=mark: answered() or last()[0] != m, math.inf)
            if answered():
                return False
            if last()[0] == mark:
                return True  # idle and quiet: nothing it includes changed

    async def workspace_diagnostics(
        self, deadline: float, expected: Collection[Path] | None = None
    ) -> tuple[dict[str, Sequence[lsp.Diagnostic]], bool]:
        """Pull workspace diagnostics until `deadline` (trio time): (uri -> diagnostics,
        complete). One pull at a time: the actor gives each its turn.

        Results may stream as partial results on a request the server never answers
        (basedpyright). Such a pull is over once every file of `expected` (the files of the
        server's languages under the root) has had a report and no work-done progress is
        active or announced: basedpyright creates its progress token before the first
        reports of a pass that takes several rounds, reports files it has not checked yet
        as clean in that first round, and ends the progress after the last. Files it never
        reports (excluded by its own settings) end the pull after a quiet moment, once the
        answer to a later request shows that everything it sent before has been read.
        """
        results: dict[str, Sequence[lsp.Diagnostic]] = {}
        missing = set(expected) if expected is not None else None
        news = 0  # partial results received
        done = False

        def take(
            report: lsp.WorkspaceDiagnosticReport | lsp.WorkspaceDiagnosticReportPartialResult,
        ) -> None:
            nonlocal news
            news += 1
            for item in report.items:
                path = uri_to_path(item.uri) if missing else None
                if missing and path is not None:
                    missing.discard(path)
                if isinstance(item, lsp.WorkspaceFullDocumentDiagnosticReport):
                    results[item.uri] = item.items

        def sink(value: Any) -> None:
            try:
                take(structure(value, lsp.WorkspaceDiagnosticReportPartialResult))
            except OffSpec as exc:
                log.warning("%s: workspace diagnostics off the LSP spec: %s", self.name, exc.detail)
            self.changes.touch()

        async def ask(token: str) -> None:
            nonlocal done
            try:
                params = lsp.WorkspaceDiagnosticParams(
                    previous_result_ids=[], partial_result_token=token
                )
                method = "workspace/diagnostic"
                timeout = max(deadline - trio.current_time(), 0)
                result = await self._request(method, unstructure(params), timeout=timeout)
                take(answer(result, self.name, method))
            except ToolError as exc:
                if exc.kind is not ErrorKind.TIMEOUT:
                    raise
            else:
                done = True
            self.changes.touch()

        with trio.move_on_at(deadline):
            token = f"codeward-{next(_TOKENS)}"
            self.partial[token] = sink
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(ask, token)
                    while not done:
                        if missing is not None and not missing and not self._busy():
                            done = True
                            break
                        seen = news
                        with trio.move_on_after(QUIET) as quiet:
                            await self.changes.wait()
                        if quiet.cancelled_caught and results and not self.progress:
                            await self._barrier()
                            done = news == seen and not self._busy()
                    nursery.cancel_scope.cancel()
            finally:
                del self.partial[token]
        return results, done

    def _busy(self) -> bool:
        return bool(self.progress or self.announced)

    async def _barrier(self) -> None:
        """Send a request the server must refuse and wait for its answer: every message it
        wrote before has then been read. Progress tokens it created before and still has
        not begun are forgotten (it answered a later message without using them)."""
        conn = self._connection()
        if conn is None:
            return
        announced = set(self.announced)
        with contextlib.suppress(ConnectionClosed, RequestTimeout, ResponseError):
            await conn.request(BARRIER, None, timeout=self._request_timeout)
        self.announced -= announced

    @property
    def ready(self) -> bool:
        """Whether its answers can be trusted now, as its readiness says."""
        return self.readiness.ready(self.progress, self._documents())

    async def until_ready(self, timeout: float) -> bool:
        """Wait until it is `ready`; False when it was not within `timeout`."""
        return await self.changes.wait_for(lambda: self.ready, timeout)

    def ready_for(self, doc: Document) -> bool:
        """Whether the server is ready and has analysed `doc` (no wait)."""
        if not self.ready:
            return False
        if self.analysed.get(doc.uri) == doc.version:
            return True
        published = self.published.get(doc.uri)
        return published is not None and (published.version or 0) >= doc.version

    async def wait_ready(self, doc: Document, timeout: float) -> bool:
        """Wait until the server is ready and has analysed `doc`."""

        def ready() -> bool:
            return self.ready_for(doc)

        if ready():
            return True
        with trio.move_on_after(timeout):
            if not ready():
                await self.document_diagnostics(doc, timeout)
            return await self.changes.wait_for(ready, timeout)
        return False

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no work-done progress is active."""
        return await self.changes.wait_for(lambda: not self.progress, timeout)
