"""Fresh diagnostics, gathered from every diagnostic server of a file's (or a folder's)
languages and shown in client terms.

A file asks each of its servers about its content now: pulled, or the push for the
version sent. A folder (or the project) asks every diagnostic server of each of its
languages: a server that pulls workspace diagnostics is pulled; one that reports only open
files, or whose pull did not finish in time, has the folder's files not checked yet opened
(and closed again) in batches (`folder_batches`: while the call is within
`lsp.folder_diagnostics_seconds` and the server below its memory cap; the rest make the
answer `partial`, `coverage` keeps what was checked for the next request).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import LspConfig
from codeward.daemon.files import UNTRUSTED, content_hash, read_file
from codeward.daemon.lsp.coverage import Coverage, ServerCoverage, content_state
from codeward.daemon.lsp.documents import decode_text
from codeward.daemon.lsp.file_events import FileEvents
from codeward.daemon.lsp.folder_batches import FolderBatches
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.project import project_files
from codeward.daemon.lsp.routing import Languages, in_routing_order
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.uris import path_to_uri, uri_to_path
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

OTHERS_GRACE = 1.0  # seconds the other files of `files` have at least, once `first` answered
ServerDiagnostics = dict[str, tuple[int, Sequence[Diagnostic]]]  # server -> (version, items)


class _Waits:
    """The waits of the other files of `Diagnostics.files`: each ends by a deadline set once
    the files asked `first` have their answers (a wait that ends so is no answer)."""

    def __init__(self) -> None:
        self.deadline = math.inf
        self.scopes: list[trio.CancelScope] = []

    def scope(self) -> trio.CancelScope:
        scope = trio.CancelScope(deadline=self.deadline)
        self.scopes.append(scope)
        return scope

    def end_at(self, deadline: float) -> None:
        self.deadline = deadline
        for scope in self.scopes:
            scope.deadline = deadline


@dataclass
class Found:
    """One diagnostic in client terms."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    severity: int
    message: str
    code: str | int | None
    source: str | None
    server: str = field(default="", compare=False)  # the server that reported it


@dataclass
class FolderDiagnostics:
    diagnostics: list[Found]
    errors: list[ToolError]  # servers that failed; their diagnostics are missing
    partial: bool  # a server did not answer in time, or files were left unchecked
    unchecked: int = 0  # files a server has not checked (summed over the servers)
    servers: list[ServerCoverage] = field(default_factory=list)  # what each server checked


@dataclass
class FileDiagnostics:
    diagnostics: list[Found]
    content_hash: str
    partial: bool  # a server did not answer for this content within the settle timeout
    errors: list[ToolError]  # servers that failed; their diagnostics are missing
    text: str = ""  # the content answered for
    silent: list[str] = field(default_factory=list)  # servers that did not answer in time


def found(
    file: str, d: Diagnostic, index: LineIndex, encoding: Encoding, root: Path, server: str = ""
) -> Found:
    """`d` in client terms: 1-based code points in `file`, paths in its text root-relative."""
    line, column = index.to_client(d.range.start.line, d.range.start.character, encoding)
    end_line, end_column = index.to_client(d.range.end.line, d.range.end.character, encoding)
    return Found(
        file=file,
        line=line,
        column=column,
        end_line=end_line,
        end_column=end_column,
        severity=int(d.severity or 1),
        message=scrub(d.message, root),
        code=d.code,
        source=scrub(d.source, root) if d.source else d.source,
        server=server,
    )


class Diagnostics:
    """The diagnostics of one root's files, from the servers of `pool`."""

    def __init__(
        self,
        root: Path,
        lsp: LspConfig,
        pool: ServerPool,
        languages: Languages,
        texts: Texts,
        events: FileEvents,
        gate: Gate,
    ) -> None:
        self.gate = gate  # each call runs inside `gate.shared()`, as every request does
        self.root = root
        self.lsp = lsp
        self.pool = pool
        self.languages = languages
        self.texts = texts
        self.events = events
        self.coverage = Coverage()  # what folders' diagnostics checked, per server
        self.batches = FolderBatches(lsp, languages, texts, pool.on_progress)

    async def file(self, path: Path, servers: Sequence[str] | None = None) -> FileDiagnostics:
        """Diagnostics of every diagnostic server (or those of `servers`) for the file's
        current content (fresh); inside a preview of the file, for the preview's text."""
        async with self.gate.shared():
            return await self._file(path, servers)

    async def files(
        self, paths: Sequence[Path], first: Collection[Path] = ()
    ) -> dict[Path, FileDiagnostics | ToolError]:
        """Each file's diagnostics (as `file` answers them), asked at once: its answer, or
        the error it failed with. When the files `first` have their answers, the others'
        servers have as long again (at least `OTHERS_GRACE` seconds), then those still
        without an answer are `silent` for that file: files another query opened never
        make the wait for `first` longer."""
        answers: dict[Path, FileDiagnostics | ToolError] = {}
        waits = _Waits()
        pending = {p for p in paths if p in first}
        start = trio.current_time()

        async def one(path: Path) -> None:
            try:
                answers[path] = await self._file(path, waits=None if path in first else waits)
            except ToolError as exc:
                answers[path] = exc
            finally:
                pending.discard(path)
                if first and not pending:
                    took = trio.current_time() - start
                    waits.end_at(trio.current_time() + max(took, OTHERS_GRACE))

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for path in paths:
                nursery.start_soon(one, path)
        return answers

    async def _file(
        self, path: Path, servers: Sequence[str] | None = None, waits: _Waits | None = None
    ) -> FileDiagnostics:
        language = self.languages.require(path)
        names = [n for n in self.languages.servers(language) if servers is None or n in servers]
        await self.events.flush()
        data, stat = self.texts.override(path), UNTRUSTED
        if data is None:
            data, stat = self.texts.read(path)
        if data is None:
            raise ToolError(ErrorKind.FILE_NOT_FOUND, f"{path.name!r} does not exist.")
        language_id = self.languages.language_id(language)
        settle = self.lsp.settle_timeout
        shown: list[Found] = []
        errors: list[ToolError] = []
        silent: list[str] = []

        async def one(name: str) -> None:
            try:
                server = await self.pool.started(name, language)
                doc = server.sync(path, language_id, data, stat, fresh_diagnostics=True)
                items = None
                with waits.scope() if waits is not None else contextlib.nullcontext():
                    items = await server.document_diagnostics(doc, settle)
            except ToolError as exc:
                errors.append(exc)
                return
            if items is None:
                silent.append(name)
                return
            file = self.texts.relative(doc.uri) or doc.uri
            shown.extend(found(file, d, doc.index, server.encoding, self.root, name) for d in items)

        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(one, name)
        if errors and len(errors) == len(names):
            raise self.pool.missing(errors, names)
        errors = in_routing_order(errors, names)
        silent = [n for n in names if n in silent]
        return FileDiagnostics(
            shown, content_hash(data), bool(silent or errors), errors, decode_text(data), silent
        )

    async def by_server(self, path: Path) -> ServerDiagnostics:
        """Each diagnostic server's own diagnostics (with their `data`) for the file's
        content now, by server: the context a code action request needs (ruff's quick
        fixes). A server that fails or does not answer in time is left out."""
        async with self.gate.shared():
            return await self._by_server(path)

    async def _by_server(self, path: Path) -> ServerDiagnostics:
        language = self.languages.require(path)
        await self.events.flush()
        data = self.texts.override(path)
        try:
            if data is None:
                data, _ = read_file(path, self.root, self.lsp.max_file_bytes)
        except ToolError:
            return {}  # the code action request reports what is wrong with the file
        language_id = self.languages.language_id(language)
        settle = self.lsp.settle_timeout
        answers: ServerDiagnostics = {}

        async def one(name: str) -> None:
            try:
                server = self.pool.server_for(name, language)
                await server.connection()
                doc = server.sync(path, language_id, data, fresh_diagnostics=True)
                items = await server.document_diagnostics(doc, settle)
            except ToolError:
                return  # the code action request reports the server's failure
            if items is not None:
                answers[name] = (doc.version, items)

        async with trio.open_nursery() as nursery:
            for name in self.languages.servers(language):
                nursery.start_soon(one, name)
        return answers

    async def folder(
        self, languages: Sequence[str] | None = None, folder: Path | None = None
    ) -> FolderDiagnostics:
        """Diagnostics of every file under `folder` (default: the root) from every
        diagnostic server of its languages (default: those with files there).

        Each server's work-done progress is awaited within `lsp.ready_timeout`. The files
        a server checked since the root's files last changed are answered from
        `self.coverage`. A server that pulls workspace diagnostics is pulled, waiting for a
        report on every file of its languages in the folder; what it published is
        included. The files still not checked (all of them for a server that reports only
        open files) are asked about in batches (opened, and closed after) while the call is
        within `lsp.folder_diagnostics_seconds` (`folder_batches`); the rest leave it
        `partial`.
        """
        async with self.gate.shared():
            return await self._folder(languages, folder)

    async def _folder(
        self, languages: Sequence[str] | None, folder: Path | None
    ) -> FolderDiagnostics:
        await self.events.flush()
        files, whole = await trio.to_thread.run_sync(
            project_files, self.root, self.languages.configs, folder or self.root
        )
        if languages is None:
            languages = sorted(files)
        names = self.languages.servers_of(languages)
        errors: list[ToolError] = []
        by_uri: dict[tuple[str, str], Sequence[Diagnostic]] = {}
        encodings: dict[str, Encoding] = {}
        partial = not whole
        unchecked = 0
        deadline = trio.current_time() + self.lsp.folder_diagnostics_seconds
        state = await trio.to_thread.run_sync(self._state, files, folder)
        report: dict[str, ServerCoverage] = {}

        async def one(name: str) -> None:
            nonlocal partial, unchecked
            served = [lang for lang in languages if name in self.languages.servers(lang)]
            mine = [(lang, path) for lang in served for path in files.get(lang, ())]
            uris = [path_to_uri(path) for _, path in mine]
            covered = self.coverage.of(name, state)
            try:
                server = await self.pool.started(name)
                await server.wait_idle(self.lsp.ready_timeout)
                encodings[name] = server.encoding
                for uri, published in server.published.items():
                    by_uri[(name, uri)] = published.diagnostics
                left = [f for f, uri in zip(mine, uris, strict=True) if uri not in covered.checked]
                if left and await server.offers("workspace/diagnostic"):
                    pulled = await self._pull(server, mine, uris, whole)
                    covered.checked.update(pulled)
                    left = [f for f, u in zip(mine, uris, strict=True) if u not in covered.checked]
                done = len(mine) - len(left)
                batched = await self.batches.check(server, left, deadline, done, len(mine))
            except ToolError as exc:
                errors.append(exc)
                return
            if batched.error is not None:  # stopped during a batch: what it checked stands
                errors.append(batched.error)
            answers = batched.answers
            covered.checked.update((u, items) for u, items in answers.items() if items is not None)
            for uri in uris:
                items = covered.checked.get(uri)
                if items is not None:
                    by_uri[(name, uri)] = items
            checked = sum(1 for uri in uris if uri in covered.checked)
            unchecked += len(uris) - checked
            complete = whole and checked == len(uris)
            stopped = None if complete else batched.stopped
            report[name] = ServerCoverage(name, checked, len(uris), complete, stopped)
            partial = partial or not report[name].complete

        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(one, name)
        shown: list[Found] = []
        for (name, uri), items in by_uri.items():
            path = uri_to_path(uri)
            index = self.texts.line_index(path) if path is not None else None
            file = self.texts.relative(uri)
            if index is None or file is None:
                continue
            shown.extend(found(file, d, index, encodings[name], self.root, name) for d in items)
        if names and len(errors) == len(names):
            raise self.pool.missing(errors, names)
        errors = in_routing_order(errors, names)
        servers = [report[name] for name in names if name in report]
        return FolderDiagnostics(shown, errors, partial or bool(errors), unchecked, servers)

    def _state(self, files: Mapping[str, Sequence[Path]], folder: Path | None) -> int:
        """The content state of the root's files (a folder's answer stands for the
        project's while nothing changed). Blocking: run in a thread."""
        if folder is not None and folder != self.root:
            files = project_files(self.root, self.languages.configs)[0]
        return content_state([path for paths in files.values() for path in paths])

    async def _pull(
        self, server: LanguageServer, mine: Sequence[tuple[str, Path]], uris: list[str], whole: bool
    ) -> dict[str, Sequence[Diagnostic]]:
        """A workspace pull, within the settle timeout: the files it checked (uri -> their
        diagnostics). Complete, every file of `mine` (one it did not report has none);
        else the files it reported problems in, and those it reported while no progress
        was under way: basedpyright first reports every file clean, checked or not, in a
        round under progress. The rest are opened in batches instead."""
        expected = {path for _, path in mine} if whole else None
        final: set[str] = set()
        pulled, complete = await server.workspace_diagnostics(
            self.lsp.settle_timeout, expected, final
        )
        if complete:
            return {uri: pulled.get(uri, ()) for uri in uris}
        wanted = set(uris)
        return {
            uri: items for uri, items in pulled.items() if (items or uri in final) and uri in wanted
        }
