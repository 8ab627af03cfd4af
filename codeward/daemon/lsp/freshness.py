"""Diagnostics freshness of one server: what it published for which version, what it
answered to pulls, its work-done progress, and the waits built on them (what it pushed
for a document's content now, the state of a workspace pull, readiness). It sends
nothing: the actor asks it what stands or what to ask, sends the pull itself, and hands
the answer back (`pulled`, `WorkspacePull.answered`).

Whether a server's answers can be trusted beyond its progress (rust-analyzer quiescent, a
project loaded, an index built) is its `readiness.Readiness`, made anew for each process:
it sees the notifications it `listens` to, says whether a publish `counts`, and
`ready(progress, documents)` gates the actor's `wait_ready` (and, when `strict`, a
document's diagnostics). A server with a `diagnosis_progress` title (gopls) has what it
pushed for a document taken once the progress of its diagnosis of every change sent before
has ended (the actor sends a barrier first: `needs_barrier`).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types as lsp

from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.readiness import Readiness
from codeward.daemon.lsp.shapes import (
    OffSpec,
    answer,
    lenient,
    off_spec,
    result_type,
    structure,
    unstructure,
)
from codeward.daemon.lsp.uris import uri_to_path

log = logging.getLogger("codeward.lsp")

QUIET = 0.3  # seconds without news before a streamed workspace pull may be over
PULL = "textDocument/diagnostic"
WORKSPACE_PULL = "workspace/diagnostic"
BARRIER = "$/codeward/barrier"  # a request every server must refuse: its answer orders output
# clangd's own per-file status (asked for with `clangdFileStatus`): "idle" once it has taken
# every update of the file. A text sent again unchanged ends idle without a publish when
# nothing it includes changed; otherwise it rebuilds ("parsing includes", then a publish).
FILE_STATUS = "textDocument/clangd.fileStatus"
_TOKENS = itertools.count(1)

ProgressSink = Callable[[dict[str, Any]], None]


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
        pulls: Callable[[], bool],
        on_progress: ProgressSink,
        documents: Callable[[], int],
        readiness: Callable[[], Readiness] = Readiness,
        diagnosis: Callable[[], str] = lambda: "",
    ) -> None:
        self.name = name
        self.changes = changes
        self._make_readiness = readiness
        self.readiness = Readiness()  # idle until its first process: see `reset`
        self._documents = documents  # how many documents the server has open
        self._pulls = pulls  # whether the server offers pull diagnostics now
        self._on_progress = on_progress
        self._diagnosis = diagnosis  # the title of its progress around a change's diagnosis
        self.published: dict[str, Published] = {}
        self.analysed: dict[str, int] = {}  # uri -> version it answered for (`analysed_now`)
        self.statuses = 0  # file statuses seen so far (each one's number orders them)
        self.status: dict[str, tuple[int, str]] = {}  # uri -> (number, state) of its last
        self._resent: dict[str, tuple[int, int]] = {}  # uri -> (version, statuses when sent)
        self.progress: dict[int | str, str] = {}  # active work-done progress: token -> title
        self.announced: set[int | str] = set()  # tokens it created and has not begun yet
        self.push_silent = False  # it never pushed diagnostics and let a settle time out
        self.diagnoses = False  # it began a `diagnosis` progress: it reports each diagnosis
        self.partial: dict[int | str, Callable[[Any], None]] = {}  # token -> partial results

    def reset(self) -> None:
        """A new process: nothing it said before counts."""
        self.published.clear()
        self.analysed.clear()
        self.status.clear()
        self._resent.clear()
        self.progress.clear()
        self.announced.clear()
        self.diagnoses = False
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
            diagnosis = self._diagnosis()
            if diagnosis and str(title).startswith(diagnosis):
                self.diagnoses = True
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

    async def pushed(self, doc: Document) -> Sequence[lsp.Diagnostic] | None:
        """What a server that pushes its diagnostics published for this content of `doc`,
        waited for as long as it takes (the caller bounds the wait); None at once, or as
        soon as it registers pull diagnostics: pull them (`pulled`)."""

        def answered() -> bool:
            published = self.published.get(doc.uri)
            return published is not None and (published.version or 0) >= doc.version

        if self._pulls():
            return None
        # A server may register pull diagnostics only after `initialized`.
        if self.push_silent and doc.uri not in self.published:
            return []
        if await self._diagnosed(doc):
            return self.published[doc.uri].diagnostics
        if await self._unchanged(doc, answered):
            return self.published[doc.uri].diagnostics
        await self.changes.wait_for(lambda: answered() or self._pulls(), math.inf)
        if answered():
            return self.published[doc.uri].diagnostics
        return None

    def needs_barrier(self, doc: Document) -> bool:
        """Whether a barrier must be answered before `pushed(doc)`: for a server with a
        `diagnosis` progress, each change's progress is begun while the server takes the
        change, so once a request sent after `doc` is answered, every change sent before
        has its progress begun. Not when this version was found done already."""
        return bool(self._diagnosis()) and not self._pulls() and not self._done(doc)

    def _done(self, doc: Document) -> bool:
        return self.analysed.get(doc.uri) == doc.version and doc.uri in self.published

    async def _diagnosed(self, doc: Document) -> bool:
        """For a server that reports its diagnosis of each change as a work-done progress
        titled `diagnosis` (seen begun), asked after a barrier (`needs_barrier`): whether
        it is done with every change sent before (no such progress active or announced)
        and published for `doc`, whose version is then marked `analysed`. What it published
        last stands, whatever version it names: gopls cuts the pass of a change short when
        a later change comes (whose pass covers every file), may publish a file under the
        version of an older pass, and does not always publish again a file whose
        diagnostics stay the same. False at once for any other server."""
        title = self._diagnosis()
        if not title or not self.diagnoses:
            return False  # it does not say when it is done (gopls without its option)
        if self._done(doc):
            return True

        def diagnosing() -> bool:
            return bool(self.announced) or any(t.startswith(title) for t in self.progress.values())

        await self.changes.wait_for(lambda: not diagnosing(), math.inf)
        if doc.uri not in self.published:
            return False
        if self.analysed.get(doc.uri, 0) < doc.version:
            self.analysed_now(doc)
        return True

    def pulled(self, doc: Document, result: Any) -> Sequence[lsp.Diagnostic]:
        """The diagnostics of a pull's `result` for this content of `doc` (off-spec items
        left out, logged), which the server has now analysed."""
        try:
            report, wrong = lenient(result, result_type(PULL), "items", lsp.Diagnostic)
        except OffSpec as exc:
            raise off_spec(self.name, PULL, exc.detail) from None
        left_out(self.name, PULL, wrong)
        self.analysed_now(doc)
        if isinstance(report, lsp.RelatedFullDocumentDiagnosticReport):
            return report.items
        return []  # "unchanged": codeward sends no previous result id to go by

    def analysed_now(self, doc: Document) -> None:
        """The server answered for this content of `doc`."""
        self.analysed[doc.uri] = doc.version
        self.changes.touch()

    def unanswered(self) -> None:
        """No diagnostics came within a settle time: a server that pushes and never did is
        taken to push none (its next waits answer `[]` at once)."""
        if not self.published and not self._pulls():
            self.push_silent = True

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

    def workspace_pull(self, expected: Collection[Path] | None = None) -> WorkspacePull:
        """A new workspace pull (`with` it while it runs: its partial results come in)."""
        return WorkspacePull(self, expected)

    def unbegun(self) -> frozenset[int | str]:
        """The progress tokens it created and has not begun yet, now."""
        return frozenset(self.announced)

    def forget_unbegun(self, tokens: frozenset[int | str]) -> None:
        """It answered a message sent after creating `tokens` without beginning them: they
        will not be begun."""
        self.announced -= tokens

    @property
    def busy(self) -> bool:
        """Whether work-done progress is active or announced."""
        return bool(self.progress or self.announced)

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

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no work-done progress is active."""
        return await self.changes.wait_for(lambda: not self.progress, timeout)


class WorkspacePull:
    """One workspace diagnostics pull: the reports it got, as partial results or in its
    answer, and whether it is over. The actor sends it (`params`) and decides when it ends.

    Results may stream as partial results on a request the server never answers
    (basedpyright). Such a pull is over once every file of `expected` (the files of the
    server's languages under the root) has had a report and no work-done progress is
    active or announced (`covered`): basedpyright creates its progress token before the
    first reports of a pass that takes several rounds, reports files it has not checked
    yet as clean in that first round, and ends the progress after the last. Files it never
    reports (excluded by its own settings) end the pull after a `quiet` moment, once the
    answer to a later request shows that everything it sent before has been read.
    """

    def __init__(self, freshness: Freshness, expected: Collection[Path] | None) -> None:
        self._freshness = freshness
        self._missing = set(expected) if expected is not None else None
        self.token = f"codeward-{next(_TOKENS)}"
        self.results: dict[str, Sequence[lsp.Diagnostic]] = {}
        # reports received while no work-done progress was active or announced: final, not
        # the first round's "clean" of files not checked yet
        self.final: set[str] = set()
        self.news = 0  # reports received
        self.done = False

    def __enter__(self) -> WorkspacePull:
        self._freshness.partial[self.token] = self._sink
        return self

    def __exit__(self, *exc: object) -> None:
        del self._freshness.partial[self.token]

    @property
    def params(self) -> Any:
        pull = lsp.WorkspaceDiagnosticParams(
            previous_result_ids=[], partial_result_token=self.token
        )
        return unstructure(pull)

    def answered(self, result: Any) -> None:
        """The pull's own answer: its reports, and the pull is over."""
        self._take(answer(result, self._freshness.name, WORKSPACE_PULL))
        self.done = True
        self._freshness.changes.touch()

    def covered(self) -> bool:
        """Whether every expected file has had a report and no progress is under way."""
        return self._missing is not None and not self._missing and not self._freshness.busy

    async def quiet(self) -> bool:
        """Wait for news, at most `QUIET` seconds: whether none came while some results are
        in and no progress is active (then only a barrier tells whether it is over)."""
        with trio.move_on_after(QUIET) as quiet:
            await self._freshness.changes.wait()
        return quiet.cancelled_caught and bool(self.results) and not self._freshness.progress

    def _take(
        self, report: lsp.WorkspaceDiagnosticReport | lsp.WorkspaceDiagnosticReportPartialResult
    ) -> None:
        self.news += 1
        missing = self._missing
        for item in report.items:
            path = uri_to_path(item.uri) if missing else None
            if missing and path is not None:
                missing.discard(path)
            if isinstance(item, lsp.WorkspaceFullDocumentDiagnosticReport):
                self.results[item.uri] = item.items
                if not self._freshness.busy:
                    self.final.add(item.uri)

    def _sink(self, value: Any) -> None:
        try:
            self._take(structure(value, lsp.WorkspaceDiagnosticReportPartialResult))
        except OffSpec as exc:
            log.warning(
                "%s: workspace diagnostics off the LSP spec: %s", self._freshness.name, exc.detail
            )
        self._freshness.changes.touch()
