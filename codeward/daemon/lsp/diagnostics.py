"""Fresh diagnostics, gathered from every diagnostic server of a file's (or a folder's)
languages and shown in client terms.

A file asks each of its servers about its content now: pulled, or the push for the
version sent. A folder (or the project) asks every diagnostic server of each of its
languages: a server that pulls workspace diagnostics is pulled; one that reports only open
files has the folder's files opened, at most `lsp.folder_diagnostics_files` of them per
request (the rest make the answer `partial`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import LspConfig
from codeward.daemon.files import UNTRUSTED, content_hash, read_file
from codeward.daemon.lsp.documents import decode_text
from codeward.daemon.lsp.file_events import FileEvents
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.project import project_files
from codeward.daemon.lsp.routing import Languages, in_routing_order
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.uris import uri_to_path
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

FOLDER_CONCURRENCY = 8  # files asked about at once, per server, for a folder's diagnostics

ServerDiagnostics = dict[str, tuple[int, Sequence[Diagnostic]]]  # server -> (version, items)


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


@dataclass
class FolderDiagnostics:
    diagnostics: list[Found]
    errors: list[ToolError]  # servers that failed; their diagnostics are missing
    partial: bool  # a server did not answer in time, or files were left unchecked
    unchecked: int = 0  # files a server that reports only open files was not asked about


@dataclass
class FileDiagnostics:
    diagnostics: list[Found]
    content_hash: str
    partial: bool  # a server did not answer for this content within the settle timeout
    errors: list[ToolError]  # servers that failed; their diagnostics are missing
    text: str = ""  # the content answered for
    silent: list[str] = field(default_factory=list)  # servers that did not answer in time


def found(file: str, d: Diagnostic, index: LineIndex, encoding: Encoding, root: Path) -> Found:
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
        previews: Mapping[Path, bytes],
        gate: Gate,
    ) -> None:
        self.previews = previews  # files shown a text that is not on disk
        self.gate = gate  # each call runs inside `gate.shared()`, as every request does
        self.root = root
        self.lsp = lsp
        self.pool = pool
        self.languages = languages
        self.texts = texts
        self.events = events

    async def file(self, path: Path, servers: Sequence[str] | None = None) -> FileDiagnostics:
        """Diagnostics of every diagnostic server (or those of `servers`) for the file's
        current content (fresh); inside a preview of the file, for the preview's text."""
        async with self.gate.shared():
            return await self._file(path, servers)

    async def files(self, paths: Sequence[Path]) -> dict[Path, FileDiagnostics | ToolError]:
        """Each file's diagnostics (as `file` answers them), asked at once: its answer, or
        the error it failed with."""
        answers: dict[Path, FileDiagnostics | ToolError] = {}

        async def one(path: Path) -> None:
            try:
                answers[path] = await self._file(path)
            except ToolError as exc:
                answers[path] = exc

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for path in paths:
                nursery.start_soon(one, path)
        return answers

    async def _file(self, path: Path, servers: Sequence[str] | None = None) -> FileDiagnostics:
        language = self.languages.require(path)
        names = [n for n in self.languages.servers(language) if servers is None or n in servers]
        await self.events.flush()
        data, stat = self.previews.get(path), UNTRUSTED
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
                items = await server.document_diagnostics(doc, settle)
            except ToolError as exc:
                errors.append(exc)
                return
            if items is None:
                silent.append(name)
                return
            file = self.texts.relative(doc.uri) or doc.uri
            shown.extend(found(file, d, doc.index, server.encoding, self.root) for d in items)

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
        try:
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

        Each server's work-done progress is awaited within `lsp.ready_timeout`. A server
        that pulls workspace diagnostics is pulled, waiting for a report on every file of
        its languages in the folder; what it published is included. A server that reports
        only open files is asked about each file (opened as needed), at most
        `lsp.folder_diagnostics_files` files, concurrently; the rest leave it `partial`.
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
        budget = max(0, self.lsp.folder_diagnostics_files)

        async def one(name: str) -> None:
            nonlocal partial, unchecked
            served = [lang for lang in languages if name in self.languages.servers(lang)]
            mine = [(lang, path) for lang in served for path in files.get(lang, ())]
            try:
                server = await self.pool.started(name)
                await server.wait_idle(self.lsp.ready_timeout)
                encodings[name] = server.encoding
                for uri, published in server.published.items():
                    by_uri[(name, uri)] = published.diagnostics
                if await server.offers("workspace/diagnostic"):
                    expected = {path for _, path in mine} if whole else None
                    pulled, complete = await server.workspace_diagnostics(
                        self.lsp.settle_timeout, expected
                    )
                    partial = partial or not complete
                    for uri, items in pulled.items():
                        by_uri[(name, uri)] = items
                    return
                unchecked += max(0, len(mine) - budget)
                partial = partial or len(mine) > budget
                answers = await self._each_file(server, mine[:budget])
            except ToolError as exc:
                errors.append(exc)
                return
            for uri, items in answers.items():
                if items is None:
                    partial = True
                else:
                    by_uri[(name, uri)] = items

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
            shown.extend(found(file, d, index, encodings[name], self.root) for d in items)
        if names and len(errors) == len(names):
            raise self.pool.missing(errors, names)
        errors = in_routing_order(errors, names)
        return FolderDiagnostics(shown, errors, partial or bool(errors), unchecked)

    async def _each_file(
        self, server: LanguageServer, files: Sequence[tuple[str, Path]]
    ) -> dict[str, Sequence[Diagnostic] | None]:
        """`server`'s diagnostics of each file (opened as needed) for its content on disk:
        uri -> diagnostics, or None where it did not answer within the settle timeout."""
        settle = self.lsp.settle_timeout
        limiter = trio.CapacityLimiter(FOLDER_CONCURRENCY)
        answers: dict[str, Sequence[Diagnostic] | None] = {}

        async def ask(language: str, path: Path) -> None:
            async with limiter:
                data, stat = self.texts.read(path)
                if data is None:  # gone since the walk
                    return
                language_id = self.languages.language_id(language)
                doc = server.sync(path, language_id, data, stat, fresh_diagnostics=True)
                answers[doc.uri] = await server.document_diagnostics(doc, settle)

        async with trio.open_nursery() as nursery:
            for language, path in files:
                nursery.start_soon(ask, language, path)
        return answers
