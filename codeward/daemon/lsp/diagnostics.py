"""Fresh diagnostics of a file, gathered from every diagnostic server of its language and
shown in client terms, and the shapes of diagnostics answers (a folder's are asked by
`folder_diagnostics`).

A file asks each of its servers about its content now: pulled, or the push for the
version sent.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import LspConfig
from codeward.daemon.files import UNTRUSTED, content_hash, read_file
from codeward.daemon.lsp.coverage import ServerCoverage
from codeward.daemon.lsp.documents import decode_text
from codeward.daemon.lsp.file_events import FileEvents
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.routing import Languages, in_routing_order
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.types import DiagnosticLike
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
    file: str, d: DiagnosticLike, index: LineIndex, encoding: Encoding, root: Path, server: str = ""
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

    async def file(self, path: Path, servers: Sequence[str] | None = None) -> FileDiagnostics:
        """Diagnostics of every diagnostic server (or those of `servers`) for the file's
        current content (fresh); inside a preview of the file, for the preview's text."""
        async with self.gate.shared():
            return await self._file(path, servers)

    async def files(
        self, paths: Sequence[Path], first: Collection[Path] = ()
    ) -> dict[Path, FileDiagnostics | ToolError]:
        """Each file's diagnostics (as `file` answers them): its answer, or the error it
        failed with. The files `first` are asked at once, the others once those have their
        answers, one after another (a type checker takes its pulls one at a time, in the
        order they came, and checks one it had begun even when cancelled: on sympy an
        edited file asked after eight others it had to check again waited 10 to 30 s, and
        the next edit's behind those cancelled), and they have as long as `first` took (at
        least `OTHERS_GRACE` seconds), then those still without an answer are `silent` for
        that file: files another query opened never make the wait for `first` longer, and
        leave the server one file to finish at most. Without `first`, every file is asked
        at once."""
        answers: dict[Path, FileDiagnostics | ToolError] = {}
        waits = _Waits()
        pending = {p for p in paths if p in first}
        answered = trio.Event()
        start = trio.current_time()

        async def one(path: Path) -> None:
            try:
                answers[path] = await self._file(path, waits=None if path in first else waits)
            except ToolError as exc:
                answers[path] = exc
            finally:
                pending.discard(path)
                if path in first and not pending:
                    took = trio.current_time() - start
                    waits.end_at(trio.current_time() + max(took, OTHERS_GRACE))
                    answered.set()

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for path in paths:
                if path in pending or not pending:
                    nursery.start_soon(one, path)
            if pending:
                await answered.wait()
                for path in paths:
                    if path not in first:
                        await one(path)
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
