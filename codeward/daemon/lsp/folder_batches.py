"""The files of a folder's diagnostics that one server has not checked yet, asked in
batches: each batch's documents opened at once (`FOLDER_CONCURRENCY` asked together), its
answers taken, then closed again, so the server's open documents stay bounded.

Batches of `lsp.folder_diagnostics_files` go on while the call is within
`lsp.folder_diagnostics_seconds` (the first batch always runs, for one `lsp.settle_timeout`
at least; a batch is cut at that deadline, what it answered kept: basedpyright busy with
sympy took 141 s for one uncut batch of 100 files, 8 at a time, 10 s each): a fast server
that reports only open files (ruff) checks a whole project in one call, a slow one what
the time allows. No batch starts once the server's process group is past `NEAR_CAP` of its
memory cap (`stopped: "memory"`), and each batch is reported to the session's progress sink
as it ends.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import LspConfig
from codeward.daemon.files import UNTRUSTED
from codeward.daemon.lsp.process import group_rss
from codeward.daemon.lsp.routing import Languages
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.supervisor import NEAR_CAP
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.uris import path_to_uri
from codeward.protocol.errors import ToolError

FOLDER_CONCURRENCY = 8  # files asked about at once, per server, for a folder's diagnostics
TITLE = "project diagnostics"  # the progress reports' title

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
    """Asks one server about files in batches, within a deadline and its memory cap."""

    def __init__(
        self,
        lsp: LspConfig,
        languages: Languages,
        texts: Texts,
        on_progress: Callable[[dict[str, Any]], None],
    ) -> None:
        self.lsp = lsp
        self.languages = languages
        self.texts = texts
        self.on_progress = on_progress

    async def check(
        self,
        server: LanguageServer,
        files: Sequence[tuple[str, Path]],
        deadline: float,
        done: int = 0,
        total: int | None = None,
    ) -> Batched:
        """`server`'s diagnostics of `files` (`(language, path)`), batch after batch while
        the trio clock is before `deadline` and the server below its memory cap; `done` of
        `total` files were checked before (for the progress reports)."""
        size = self.lsp.folder_diagnostics_files
        total = len(files) + done if total is None else total
        batched = Batched()
        if size <= 0 or not files:
            return batched
        token = f"codeward/diagnostics/{next(_tokens)}"
        report = _Reporter(self.on_progress, server.name, token, total)
        try:
            for start in range(0, len(files), size):
                if start and trio.current_time() >= deadline:
                    batched.stopped = "time"
                    break
                if await trio.to_thread.run_sync(near_cap, server, self.lsp):
                    batched.stopped = "memory"
                    break
                if not start:
                    report.send("begin", done)
                batch = files[start : start + size]
                # the first batch has one settle timeout at least, whatever the deadline
                first = trio.current_time() + self.lsp.settle_timeout
                with trio.move_on_at(deadline if start else max(deadline, first)):
                    batched.error = await self._batch(server, batch, batched.answers)
                report.send("report", done + batched.checked)
                if batched.error is not None:
                    batched.stopped = "failed"
                    break
                if start + size < len(files) and trio.current_time() >= deadline:
                    batched.stopped = "time"
                    break
        finally:
            report.send("end", done + batched.checked)
        return batched

    async def _batch(
        self, server: LanguageServer, files: Sequence[tuple[str, Path]], answers: Answers
    ) -> ToolError | None:
        """One batch: each file opened as needed and asked about (for its content on disk),
        `FOLDER_CONCURRENCY` at once; the documents opened here are closed again after,
        whether the batch ended or was cut short. A failure of the server (stopped,
        restarted) ends the batch: its error comes back, the answers it had stand."""
        settle = self.lsp.settle_timeout
        limiter = trio.CapacityLimiter(FOLDER_CONCURRENCY)
        opened: list[str] = []  # closed again after: the servers' memory stays bounded

        async def ask(language: str, path: Path) -> None:
            async with limiter:
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
                    answers[doc.uri] = await server.document_diagnostics(doc, settle)
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

    def send(self, kind: str, checked: int) -> None:
        if kind != "begin" and not self.begun:
            return
        self.begun = True
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
