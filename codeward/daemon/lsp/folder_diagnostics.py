"""A folder's (or the project's) diagnostics, from every diagnostic server of its
languages (`Folders`): a server that pulls workspace diagnostics is pulled (unless its
entry says `workspace_pull = false`: basedpyright); the files a server has not checked yet
are asked in batches (`FolderBatches`): each batch's documents opened at once
(`FOLDER_CONCURRENCY` asked together), its answers taken, then closed again, so the
server's open documents stay bounded. What each server checked is kept (`coverage`)
while the root's files stay as they are, so the next call goes on from there. basedpyright
and pyright are asked only about the files of the project their configuration says
(`pyright_scope`), as their own CLI checks it.

Batches of `lsp.folder_diagnostics_files` go on while the call is within
`lsp.folder_diagnostics_seconds` (the first batch runs until one `lsp.settle_timeout` from
the call's start at least); a file's answer is awaited until then. Every wait of the call
counts against that time, the one for a server's work-done progress to end included (a
type checker's analysis that never seemed to end held a call on sympy for 20 s more): a
call lasts at most the longer of the two, and one settle timeout more. At that deadline a
batch stops (`Pulls`): the pulls waiting their turn are cancelled, the file the server is
checking has one settle timeout more (basedpyright checks a file to its end whatever is
sent, after the answer if need be), and what the batch answered is kept: a fast server that
reports only open files (ruff) checks a whole project in one call, a slow one what the
time allows.
Each batch holds the session's gate on its own: a preview waiting for the servers (a safe
edit's) stops it the same way and goes first, and the batch goes on after it. No batch
starts once the server's process group is past `NEAR_CAP` of its memory cap (`stopped:
"memory"`), and each batch is reported to the session's progress sink as it ends. (One
module with `Folders`: a call's line to the server stays straight.)
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import LspConfig
from codeward.daemon.files import UNTRUSTED
from codeward.daemon.lsp.coverage import Coverage, ServerCoverage, content_state
from codeward.daemon.lsp.diagnostics import Diagnostics, FolderDiagnostics, Found, found
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.process import group_rss
from codeward.daemon.lsp.project import project_files
from codeward.daemon.lsp.pyright_scope import SCOPED_SERVERS, project_split
from codeward.daemon.lsp.routing import Languages, in_routing_order
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.server_watch import NEAR_CAP
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.types import DiagnosticLike
from codeward.daemon.lsp.uris import path_to_uri, uri_to_path
from codeward.protocol.errors import ToolError

FOLDER_CONCURRENCY = 8  # files asked about at once, per server, for a folder's diagnostics
TITLE = "project diagnostics"  # the progress reports' title
REPORT_EVERY = 1.0  # seconds between the progress reports of the files answered in a batch

Answers = dict[str, Sequence[Diagnostic] | None]  # uri -> diagnostics; None: no answer in time
_tokens = itertools.count(1)


@dataclass
class Batched:
    """What the batches of one call checked, and why they stopped before the end."""

    answers: Answers = field(default_factory=dict)
    # why files were left for the next call: "time", "memory" (near its cap), "failed"
    # (the server failed: `error`)
    stopped: str | None = None
    error: ToolError | None = None

    @property
    def checked(self) -> int:
        """The files answered for (not those whose server gave no answer in time)."""
        return sum(1 for items in self.answers.values() if items is not None)


def near_cap(server: LanguageServer, lsp: LspConfig) -> bool:
    """Whether the server's process group is past `NEAR_CAP` of its memory cap (blocking:
    reads /proc; run in a thread)."""
    pid = server.pid
    if pid is None:
        return False
    cap = server.config.max_rss_mb or lsp.max_rss_mb
    return group_rss(pid) > cap * NEAR_CAP * 1024 * 1024


class FolderBatches:
    """Asks one server about files in batches, within a deadline and its memory cap, each
    batch in a hold of the session's gate of its own that a preview cuts short."""

    def __init__(
        self,
        lsp: LspConfig,
        languages: Languages,
        texts: Texts,
        gate: Gate,
        on_progress: Callable[[dict[str, Any]], None],
    ) -> None:
        self.lsp = lsp
        self.languages = languages
        self.texts = texts
        self.gate = gate
        self.on_progress = on_progress

    async def check(
        self,
        server: LanguageServer,
        files: Sequence[tuple[str, Path]],
        deadline: float,
        cut: float,
        done: int = 0,
        total: int | None = None,
    ) -> Batched:
        """`server`'s diagnostics of `files` (`(language, path)`), batch after batch while
        the trio clock is before `deadline` and the server below its memory cap, the first
        batch until `cut` (none once it passed); `done` of `total` files were checked
        before (for the progress reports). A batch that a preview cut short is asked again
        after it, but for the files answered."""
        size = self.lsp.folder_diagnostics_files
        total = len(files) + done if total is None else total
        batched = Batched()
        if size <= 0 or not files:
            return batched
        if trio.current_time() >= cut:  # the call's time went on waiting for the server
            batched.stopped = "time"
            return batched
        token = f"codeward/diagnostics/{next(_tokens)}"
        report = _Reporter(self.on_progress, server.name, token, total)
        pending = list(files)
        first = True
        try:
            while pending:
                if not first and trio.current_time() >= deadline:
                    batched.stopped = "time"
                    break
                if await trio.to_thread.run_sync(near_cap, server, self.lsp):
                    batched.stopped = "memory"
                    break
                if first:
                    report.send("begin", done)
                batch, pending = pending[:size], pending[size:]
                end = cut if first else deadline  # the first batch's own time: `cut`
                first = False
                answered = partial(report.answered, done, batched)
                gave_way = await self._turn(server, batch, batched, end, answered)
                report.send("report", done + batched.checked)
                if batched.error is not None:
                    batched.stopped = "failed"
                    break
                if gave_way:  # a preview went first: what the batch did not answer goes on
                    answers = batched.answers
                    pending = [f for f in batch if answers.get(path_to_uri(f[1])) is None] + pending
            if batched.stopped is None and batched.checked < len(files):
                batched.stopped = "time"  # the last batch was cut at the deadline
        finally:
            report.send("end", done + batched.checked)
        return batched

    async def _turn(
        self,
        server: LanguageServer,
        batch: Sequence[tuple[str, Path]],
        batched: Batched,
        cut: float,
        answered: Callable[[], None],
    ) -> bool:
        """One batch, in a shared hold of the gate of its own, until `cut` (trio clock):
        whether it gave way to a preview (a safe edit's, say) that began to wait for the
        servers meanwhile. Either stops it (`Pulls.stop`): the documents it opened are
        closed, and the hold let go for the preview to go first."""
        gave_way = False
        pulls = Pulls(self.lsp.settle_timeout)

        async def stop_at_cut() -> None:
            await trio.sleep_until(cut)
            pulls.stop()

        async def give_way() -> None:
            nonlocal gave_way
            await self.gate.preview_waits()
            gave_way = True
            pulls.stop()

        watch = not self.gate.held()  # a caller's own hold is not this batch's to give
        async with self.gate.shared(), trio.open_nursery() as nursery:
            nursery.start_soon(stop_at_cut)
            if watch:
                nursery.start_soon(give_way)
            batched.error = await self._batch(server, batch, batched.answers, pulls, answered)
            nursery.cancel_scope.cancel()
        return gave_way

    async def _batch(
        self,
        server: LanguageServer,
        files: Sequence[tuple[str, Path]],
        answers: Answers,
        pulls: Pulls,
        answered: Callable[[], None],
    ) -> ToolError | None:
        """One batch: each file opened as needed and asked about (for its content on disk),
        `FOLDER_CONCURRENCY` at once, each answer awaited until `pulls` stop; the
        documents opened here are closed again after, whether the batch ended or was
        stopped. A failure of the server (stopped, restarted) ends the batch: its error
        comes back, the answers it had stand."""
        limiter = trio.CapacityLimiter(FOLDER_CONCURRENCY)
        opened: list[str] = []  # closed again after: the servers' memory stays bounded

        async def ask(language: str, path: Path) -> None:
            async with limiter:
                if pulls.stopped:
                    return
                data, stat = self.texts.override(path), UNTRUSTED
                if data is None:
                    data, stat = self.texts.read(path)
                if data is None:  # gone since the walk
                    return
                language_id = self.languages.language_id(language)
                if server.document(path_to_uri(path)) is None:
                    opened.append(path_to_uri(path))
                doc = server.sync(path, language_id, data, stat, fresh_diagnostics=True, own=True)
                try:
                    with pulls.sent():
                        answers[doc.uri] = await server.document_diagnostics(doc, math.inf)
                    if answers.get(doc.uri) is not None:
                        answered()
                except ToolError as exc:
                    failed.append(exc)
                    nursery.cancel_scope.cancel()

        failed: list[ToolError] = []
        try:
            async with trio.open_nursery() as nursery:
                for language, path in files:
                    nursery.start_soon(ask, language, path)
        finally:
            for uri in opened:
                server.close_document(uri)
        return failed[0] if failed else None


class Pulls:
    """The pulls of one batch, in the order they were sent (a server takes them in turn).
    Stopped (at the call's deadline, or for a preview), those not sent yet are not, and
    those waiting behind the first are cancelled; the first, the file the server is
    checking now, has `grace` seconds more to answer, while one cancelled before its turn
    loses nothing. A type checker may not stop in the middle of a file: basedpyright (run
    without file-based cancellation) reads a `$/cancelRequest` only between two files, so
    the file under way is checked to its end whatever is sent, and its result kept (the
    next call's pull of it answers at once). Its answer within the grace leaves the server
    idle at the call's answer; a file that takes longer (sympy's `__init__.py`: 31 s of
    CPU) goes on being checked after it, for that file alone."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.stopped = False
        self._sent: dict[int, trio.CancelScope] = {}  # by the order they were sent
        self._order = itertools.count()

    @contextlib.contextmanager
    def sent(self) -> Iterator[None]:
        """A pull sent within the block, until `stop`."""
        key = next(self._order)
        with trio.CancelScope() as scope:
            self._sent[key] = scope
            try:
                yield
            finally:
                del self._sent[key]

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        for key, scope in self._sent.items():
            if key == min(self._sent):
                scope.deadline = min(scope.deadline, trio.current_time() + self.grace)
            else:
                scope.cancel()


class _Reporter:
    """Work-done progress of one server's batches, in the shape the servers' own takes."""

    def __init__(
        self, sink: Callable[[dict[str, Any]], None], server: str, token: str, total: int
    ) -> None:
        self.sink = sink
        self.server = server
        self.token = token
        self.total = total
        self.begun = False
        self.last = -math.inf  # when the last report was sent (trio clock)

    def answered(self, done: int, batched: Batched) -> None:
        """A file of a batch was answered: reported when `REPORT_EVERY` seconds passed
        since the last report (a slow server's batch can last the whole call)."""
        if trio.current_time() - self.last >= REPORT_EVERY:
            self.send("report", done + batched.checked)

    def send(self, kind: str, checked: int) -> None:
        if kind != "begin" and not self.begun:
            return
        self.begun = True
        self.last = trio.current_time()
        self.sink(
            {
                "server": self.server,
                "token": self.token,
                "kind": kind,
                "title": TITLE,
                "message": f"{checked:,} of {self.total:,} files",
                "percentage": checked * 100 // max(self.total, 1),
            }
        )


class Folders:
    """The diagnostics of a root's folders (or the whole project), from every diagnostic
    server of their languages; what each server checked kept in `coverage`."""

    def __init__(self, files: Diagnostics) -> None:
        self.parts = files  # a file's diagnostics: the root, its servers, texts and gate
        self.coverage = Coverage()  # what folders' diagnostics checked, per server
        on_progress = files.pool.on_progress
        self.batches = FolderBatches(
            files.lsp, files.languages, files.texts, files.gate, on_progress
        )

    async def folder(
        self, languages: Sequence[str] | None = None, folder: Path | None = None
    ) -> FolderDiagnostics:
        """Diagnostics of every file under `folder` (default: the root) from every
        diagnostic server of its languages (default: those with files there).

        Each server's work-done progress is awaited within `lsp.ready_timeout`, and only
        while its first batch keeps one settle timeout before the end of the first batches
        (`cut`: every wait of the call counts against its time). The files
        a server checked since the root's files last changed are answered from
        `self.coverage`. A server that pulls workspace diagnostics is pulled (unless its
        entry says `workspace_pull = false`), waiting for a report on every file of its
        languages in the folder; what it published is included. The files still not
        checked (all of them for a server that reports only open files) are asked about in
        batches (opened, and closed after) while the call is within
        `lsp.folder_diagnostics_seconds` (`FolderBatches`); the rest leave it `partial`.

        Each part runs in a shared hold of the session's gate of its own, not the whole
        call in one: a preview (a safe edit's) waiting for the servers cuts the batch under
        way and goes first, the batches going on after it.
        """
        gate = self.parts.gate
        async with gate.shared():
            await self.parts.events.flush()
            files, whole = await trio.to_thread.run_sync(
                project_files,
                self.parts.root,
                self.parts.languages.configs,
                folder or self.parts.root,
            )
            state = await trio.to_thread.run_sync(self._state, files, folder)
        if languages is None:
            languages = sorted(files)
        names = self.parts.languages.servers_of(languages)
        errors: list[ToolError] = []
        by_uri: dict[tuple[str, str], Sequence[DiagnosticLike]] = {}
        encodings: dict[str, Encoding] = {}
        partial = not whole
        unchecked = 0
        lsp = self.parts.lsp
        begun = trio.current_time()
        deadline = begun + lsp.folder_diagnostics_seconds  # no batch starts after it
        # the end of the first batch, and of every wait before it: one settle timeout from
        # the call's start at least (the file under way then has one more: `Pulls`)
        cut = max(deadline, begun + lsp.settle_timeout)
        report: dict[str, ServerCoverage] = {}

        async def one(name: str) -> None:
            nonlocal partial, unchecked
            served = [lang for lang in languages if name in self.parts.languages.servers(lang)]
            mine = [(lang, path) for lang in served for path in files.get(lang, ())]
            scoped = None
            if name in SCOPED_SERVERS:  # a blocking read of its configuration, and stats
                paths = [path for _, path in mine]
                scoped = await trio.to_thread.run_sync(project_split, self.parts.root, name, paths)
            left_out: set[str] = set()
            if scoped is not None:  # only the files of its project are asked about
                kept = set(scoped[1].analysed)
                mine = [(lang, path) for lang, path in mine if path in kept]
                left_out = {path_to_uri(path) for path in scoped[1].left_out}
            uris = [path_to_uri(path) for _, path in mine]
            covered = self.coverage.of(name, state)
            server: LanguageServer | None = None
            try:
                with trio.move_on_at(cut):  # a start, the gate: the call's time too
                    async with gate.shared():
                        server = await self.parts.pool.started(name)
                        offered = False
                        # the waits before its first batch leave it one settle timeout
                        with trio.move_on_at(cut - lsp.settle_timeout):
                            await server.wait_idle(lsp.ready_timeout)  # its analysis under way
                            unchecked_now = any(u not in covered.checked for u in uris)
                            if unchecked_now and server.config.workspace_pull is not False:
                                offered = await server.offers("workspace/diagnostic")
                        encodings[name] = server.encoding
                        for uri, published in server.published.items():
                            if uri not in left_out:
                                by_uri[(name, uri)] = published.diagnostics
                        if offered:
                            pulled = await self._pull(server, mine, uris, whole, cut)
                            covered.checked.update(pulled)
                left = [f for f, u in zip(mine, uris, strict=True) if u not in covered.checked]
                done = len(mine) - len(left)
                if server is None or name not in encodings:  # the call's time ran out first
                    batched = Batched(stopped="time" if left else None)
                    known = self.parts.pool.servers.get(name)
                    if known is not None:
                        encodings[name] = known.encoding  # what it checked in earlier calls
                else:
                    batched = await self.batches.check(server, left, deadline, cut, done, len(mine))
            except ToolError as exc:
                errors.append(exc)
                return
            if batched.error is not None:  # stopped during a batch: what it checked stands
                errors.append(batched.error)
            answers = batched.answers
            covered.checked.update((u, items) for u, items in answers.items() if items is not None)
            for uri in uris:
                items = covered.checked.get(uri)
                if items is not None and name in encodings:
                    by_uri[(name, uri)] = items
            checked = sum(1 for uri in uris if uri in covered.checked)
            unchecked += len(uris) - checked
            complete = whole and checked == len(uris)
            stopped = None if complete else batched.stopped
            report[name] = ServerCoverage(name, checked, len(uris), complete, stopped)
            if scoped is not None:
                report[name].leaving_out(*scoped)
            partial = partial or not report[name].complete

        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(one, name)
        shown: list[Found] = []
        async with gate.shared():  # the lines of the disk's texts, not a preview's
            for (name, uri), items in by_uri.items():
                path = uri_to_path(uri)
                index = self.parts.texts.line_index(path) if path is not None else None
                file = self.parts.texts.relative(uri)
                if index is None or file is None:
                    continue
                root = self.parts.root
                shown.extend(found(file, d, index, encodings[name], root, name) for d in items)
        if names and len(errors) == len(names):
            raise self.parts.pool.missing(errors, names)
        errors = in_routing_order(errors, names)
        servers = [report[name] for name in names if name in report]
        return FolderDiagnostics(shown, errors, partial or bool(errors), unchecked, servers)

    def _state(self, files: Mapping[str, Sequence[Path]], folder: Path | None) -> int:
        """The content state of the root's files (a folder's answer stands for the
        project's while nothing changed). Blocking: run in a thread."""
        if folder is not None and folder != self.parts.root:
            files = project_files(self.parts.root, self.parts.languages.configs)[0]
        return content_state([path for paths in files.values() for path in paths])

    async def _pull(
        self,
        server: LanguageServer,
        mine: Sequence[tuple[str, Path]],
        uris: list[str],
        whole: bool,
        cut: float,
    ) -> dict[str, Sequence[Diagnostic]]:
        """A workspace pull, within the settle timeout and until `cut` (the trio clock of the
        call's end): the files it checked (uri -> their
        diagnostics). Complete, every file of `mine` (one it did not report has none);
        else the files it reported problems in, and those it reported while no progress
        was under way: basedpyright first reports every file clean, checked or not, in a
        round under progress. The rest are opened in batches instead."""
        expected = {path for _, path in mine} if whole else None
        final: set[str] = set()
        timeout = max(min(self.parts.lsp.settle_timeout, cut - trio.current_time()), 0.0)
        pulled, complete = await server.workspace_diagnostics(timeout, expected, final)
        if complete:
            return {uri: pulled.get(uri, ()) for uri in uris}
        wanted = set(uris)
        return {
            uri: items for uri, items in pulled.items() if (items or uri in final) and uri in wanted
        }
