"""The language servers of one session behind one interface: the only part of
`codeward.daemon.lsp` the rest of the daemon uses.

    service = LanguageService(root, config, on_progress)
    await nursery.start(service.run)     # owns the server actors; cancel stops them all

Requests (every call syncs from disk first: pending file events are flushed, open
documents changed on disk get `didChange`, the named file gets `didOpen`/`didChange`):

- `await service.request(path, method, params, *, result_type=Any, wait_ready=True,
  timeout=None, snapshot=False) -> Answer`: sends `method` to the first server of the
  file's language whose capabilities (static or dynamically registered) include it.
  `params` is a function of a `DocumentContext` (`ctx.text_document`,
  `ctx.position(line, character)` from 1-based code points to the server's encoding,
  `ctx.range(...)`), called after the sync. `result_type` decodes the result straight from
  JSON (msgspec Structs from `codeward.daemon.lsp.types` for hot results such as
  `list[Location]`). With `wait_ready`, the server must first have analysed the document
  and ended its work-done progress, within `lsp.ready_timeout`; else the `Answer` is
  `partial`. The timeout is `lsp.method_timeouts[method]`, else `lsp.request_timeout`; a
  timeout or cancellation sends `$/cancelRequest`. A `ContentModified` answer is retried
  once. With `snapshot`, `Answer.versions` holds the server's open documents (version,
  content hash) as it computed the answer: the basis an edit in it is checked against.
- `await service.request_all(path, method, params, ...) -> (list[Answer], list[ToolError])`:
  the same, to every server of the language that offers `method` (to merge, e.g. code
  actions); the errors of servers that failed come back beside the answers.
- `await service.workspace_request(method, params, *, languages, ...) -> list[Answer]`:
  a request naming no file (`workspace/symbol`) to each server of `languages` offering it.
- `await answer.follow(method, params)` / `await service.ask(server, method, params)`: a
  follow-up to the server that gave an answer (`callHierarchy/incomingCalls`,
  `codeAction/resolve`). `await service.route(language, method)`: the server's name;
  `service.supports(server, method)`, `await service.offers(server, method)`.
- `await service.execute_command(server, command, on_edit)`: `workspace/executeCommand`;
  the `workspace/applyEdit` requests the server sends meanwhile go to `on_edit(edit,
  encoding, versions)`. `service.snapshot(server)`: its open documents' versions now.
- `Answer.point(uri, position)`, `Answer.span(uri, range)`: 1-based code points from the
  server's positions in any file; `service.relative(uri)`: root-relative output path or
  None; `service.preview(uri, line)`: the trimmed source line (1-based);
  `service.line_index(path)`: the text of a file as the servers see it.
- `service.known_text(path, stat) -> LineIndex | None`: the text already read when the
  file's stat was `stat` (tool inputs need not read an unchanged file again);
  `service.language_or_none(path)`: the configured language of a path (remembered).

Diagnostics: `await service.diagnostics(path) -> FileDiagnostics`,
`await service.workspace_diagnostics(folder=...) -> FolderDiagnostics` (fresh, as
get_diagnostics shows them: a folder asks every diagnostic server of each of its
languages; a server that pulls workspace diagnostics is pulled, one that reports only
open files has the folder's files opened, at most `lsp.folder_diagnostics_files` of them
per request, the rest making the answer `partial`), and
`await service.server_diagnostics(path)`: each server's own items, for code actions.

The session's hooks: `files_changed(paths)`, `status()`, `park(reason)`,
`restart_failed()`, `await set_restricted(bool)`, `busy`, `last_used`. A server that was
not installed is looked for again (its default command resolved anew) on the next need,
at most once every `LOOKUP_INTERVAL` seconds of the trio clock.

Errors are `ToolError`s: `unsupported_file_type` (no language for the file),
`lsp_unavailable` (not installed, naming what to install, every missing server of the
language in routing order; or no server offers the method),
`lsp_error` (crash, failure, refusal), `timeout`, `file_not_found`.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from lsprotocol.types import Diagnostic

from codeward.daemon.config import Config, ServerConfig
from codeward.daemon.files import Missing, read_file
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.connection import CONTENT_MODIFIED, REQUEST_CANCELLED, SERVER_CANCELLED
from codeward.daemon.lsp.defaults import (
    command_available,
    effective_languages,
    effective_servers,
    language_of,
)
from codeward.daemon.lsp.documents import (
    UNTRUSTED,
    Document,
    Stat,
    content_hash,
    decode_text,
    stat_key,
)
from codeward.daemon.lsp.ignored import is_ignored
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Gate, Previewer, hold_for_preview
from codeward.daemon.lsp.restricted import NotInRestrictedMode
from codeward.daemon.lsp.restricted import restricted as restricted_config
from codeward.daemon.lsp.server import LanguageServer, ServerState
from codeward.daemon.lsp.types import PositionLike, RangeLike
from codeward.daemon.lsp.uris import path_to_uri, real_path, uri_to_path
from codeward.daemon.lsp.watcher import CHANGED, CREATED, DELETED, glob_matches, watch_root
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

__all__ = [
    "CONTENT_MODIFIED",
    "Answer",
    "DocumentContext",
    "FileDiagnostics",
    "FolderDiagnostics",
    "Found",
    "LanguageService",
    "OnEdit",
    "Previewer",
    "ServerDiagnostics",
    "Versions",
]

RACY_NS = 50_000_000  # a stat is trusted once the file is this much older than our read
FOLDER_CONCURRENCY = 8  # files asked about at once, per server, for a folder's diagnostics
LOOKUP_INTERVAL = 1.0  # a server that was not installed is looked for again at most this often
# Error codes of an answer worth one more try: the content changed, or the server cancelled
# the request itself (codeward's own cancellations never come back as answers).
RETRIED_CODES = frozenset({CONTENT_MODIFIED, REQUEST_CANCELLED, SERVER_CANCELLED})

Versions = dict[Path, tuple[int, str]]  # canonical path -> (version, content hash)
# a server's own edit during a command: (WorkspaceEdit, its encoding, its documents) -> answer
OnEdit = Callable[[Any, Encoding, Versions], Awaitable[None]]
ServerDiagnostics = dict[str, tuple[int, Sequence[Diagnostic]]]  # server -> (version, items)


@dataclass
class DocumentContext:
    """What a params builder needs: the synced document and the server's position encoding."""

    server: str
    path: Path
    uri: str
    text: str
    version: int
    encoding: Encoding
    index: LineIndex

    @property
    def text_document(self) -> dict[str, str]:
        return {"uri": self.uri}

    def position(self, line: int, character: int) -> dict[str, int]:
        """An LSP Position from 1-based line and character in code points."""
        return self.index.to_server(line, character, self.encoding)

    def range(self, line: int, character: int, end_line: int, end_character: int) -> dict[str, Any]:
        return {
            "start": self.position(line, character),
            "end": self.position(end_line, end_character),
        }


@dataclass
class Answer:
    server: str
    result: Any
    partial: bool
    encoding: Encoding
    service: LanguageService = field(repr=False)
    # with `snapshot=True`: the server's open documents when it was asked (see `snapshot`)
    versions: Versions | None = field(default=None, repr=False)

    def point(self, uri: str, position: PositionLike | dict[str, int]) -> tuple[int, int]:
        """1-based (line, character) in code points of a server position in `uri`."""
        return self.service.to_client(uri, position, self.encoding)

    async def follow(self, method: str, params: Any, *, result_type: Any = Any) -> Any:
        """A follow-up request to the server that gave this answer (`callHierarchy/...`,
        `codeAction/resolve`): the result, as that server computed it."""
        return await self.service.ask(self.server, method, params, result_type=result_type)

    def span(self, uri: str, rng: RangeLike | dict[str, Any]) -> tuple[int, int, int, int]:
        """1-based (line, character, end_line, end_character) of a server range in `uri`."""
        if isinstance(rng, dict):
            start, end = rng["start"], rng["end"]
        else:
            start, end = rng.start, rng.end
        return (*self.point(uri, start), *self.point(uri, end))


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


class LanguageService:
    def __init__(
        self,
        root: Path,
        config: Config,
        on_progress: Callable[[dict[str, Any]], None],
        budget: ServerBudget | None = None,
        *,
        restricted: bool = False,
    ) -> None:
        self.root = root
        self.config = config
        self.on_progress = on_progress
        self.restricted = restricted  # an untrusted root: servers start restricted
        self.server_configs = effective_servers(config)
        self.languages = effective_languages(config)
        self.servers: dict[str, LanguageServer] = {}
        self._nursery: trio.Nursery | None = None
        self._changes: dict[Path, int | None] = {}
        self._wake = trio.Event()
        self._texts: dict[Path, tuple[Stat, LineIndex]] = {}
        self._language_cache: dict[Path, str | None] = {}
        self._missing: dict[str, tuple[float, ToolError]] = {}  # not installed: when, why
        self.budget = budget
        self.last_used = 0.0  # trio time of its last request's end
        self._in_flight = 0  # requests through `_ask`
        self.gate = Gate()  # requests share the servers; a preview has them alone
        self.previews: dict[Path, bytes] = {}  # files shown a text that is not on disk

    # -- lifetime ---------------------------------------------------------------------

    async def run(
        self, *, watch: bool = True, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the server actors and the root watcher until cancelled; then stop every server."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if watch:
                await nursery.start(watch_root, self.root, self._on_watch)
            nursery.start_soon(self._flush_loop)
            task_status.started()
            if self.budget is not None:
                self.budget.managers.add(self)
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None
                if self.budget is not None:
                    self.budget.managers.discard(self)

    def status(self) -> list[dict[str, Any]]:
        return [server.status() for server in self.servers.values()]

    @property
    def busy(self) -> bool:
        """Whether a request is in flight on any of its servers."""
        return self._in_flight > 0 or any(s.busy for s in self.servers.values())

    def live_servers(self) -> list[LanguageServer]:
        return [s for s in self.servers.values() if s.live]

    def park(self, reason: str) -> None:
        """Stop every live server; each starts again on its next need."""
        for server in self.live_servers():
            server.halt(reason, park=True)

    def restart_failed(self) -> None:
        """Failed or missing servers start again on their next need."""
        for server in self.servers.values():
            server.retry()

    def server_for(self, name: str, language: str = "") -> LanguageServer:
        """The actor of server `name`, created (not started) on first use."""
        server = self.servers.get(name)
        if server is not None:
            return server
        config = self.server_configs.get(name)
        if config is None:
            raise ToolError(
                ErrorKind.LSP_UNAVAILABLE,
                f"No language server named {name!r} is configured; add it under [servers].",
                server=name,
            )
        if self._nursery is None:
            raise ToolError(
                ErrorKind.LSP_ERROR, "The session's language servers are stopped; open it again."
            )
        config = self._as_trusted(name, config)
        server = LanguageServer(
            name,
            config,
            root=self.root,
            lsp=self.config.lsp,
            max_message=self.config.daemon.max_message_bytes,
            on_progress=self.on_progress,
            language=language or ",".join(config.languages),
        )
        if self.budget is not None:
            server.on_start = self.budget.admit
        self.servers[name] = server
        self._nursery.start_soon(server.run)
        return server

    def _as_trusted(self, name: str, config: ServerConfig) -> ServerConfig:
        """`config` as the root's trust allows: unchanged, or restricted (an untrusted root;
        `lsp_unavailable` for a server that does not start there)."""
        if not self.restricted:
            return config
        try:
            return restricted_config(name, config, self.root)
        except NotInRestrictedMode as exc:
            raise ToolError(
                ErrorKind.LSP_UNAVAILABLE,
                f"The {name} language server does not start in an untrusted root: {exc}; "
                "trust the root (codeward trust) to use it.",
                server=name,
                restricted=True,
            ) from None

    async def started(self, name: str, language: str = "") -> LanguageServer:
        """The actor of server `name`, running (started on first need).

        A server that was not installed is looked for again, at most once per
        LOOKUP_INTERVAL: its default command is resolved anew (a `pip install` into the
        daemon's environment shows up without a restart) and the program searched for."""
        server = self.server_for(name, language)
        if server.state is ServerState.UNAVAILABLE:
            self._look_again(server)
        try:
            await server.connection()
        except ToolError as exc:
            if exc.kind is ErrorKind.LSP_UNAVAILABLE:
                self._missing[name] = (trio.current_time(), exc)
            raise
        self._missing.pop(name, None)
        return server

    def _look_again(self, server: LanguageServer) -> None:
        """Raise the last `lsp_unavailable` if it is recent, else refresh the command."""
        looked, error = self._missing.get(server.name, (-math.inf, None))
        if error is not None and trio.current_time() - looked < LOOKUP_INTERVAL:
            raise error
        importlib.invalidate_caches()  # a package installed since: importable now
        fresh = effective_servers(self.config).get(server.name)
        if fresh is not None:
            self.server_configs[server.name] = fresh
            fresh = self._as_trusted(server.name, fresh)
            if fresh.command != server.config.command:
                server.config = fresh

    def missing(self, errors: Sequence[ToolError], names: Sequence[str]) -> ToolError:
        """The error to raise when every server of `names` failed: the first in routing
        order, or, when several are not installed, one naming them all in that order."""
        ordered = in_routing_order(errors, names)
        absent = [e.details["server"] for e in ordered if e.kind is ErrorKind.LSP_UNAVAILABLE
                  and e.details.get("server") in self.server_configs]  # fmt: skip
        if len(absent) < 2:
            return ordered[0]
        hints = [self.server_configs[n].install_hint or f"install {n}" for n in absent]
        listed = ", ".join(absent[:-1]) + f" and {absent[-1]}"
        return ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"The {listed} language servers are not installed; {'; '.join(hints)}.",
            server=absent[0],
            servers=absent,
        )

    async def set_restricted(self, restricted: bool) -> None:
        """The root's trust changed: every server stops, and those that were running start
        again in the configuration of the new trust (restricted or normal)."""
        self.restricted = restricted
        old, self.servers = self.servers, {}
        active = [
            (name, server.language)
            for name, server in old.items()
            if server.state in (ServerState.STARTING, ServerState.RUNNING, ServerState.RESTARTING)
        ]
        for server in old.values():
            server.stop()
        for server in old.values():
            await server.stopped.wait()
        for name, language in active:
            # one that does not start in this configuration: its tools say why
            with contextlib.suppress(ToolError):
                self.server_for(name, language).start()

    # -- follow-ups, snapshots and commands ---------------------------------------------

    def snapshot(self, server: str) -> Versions:
        """The documents `server` has open now, by canonical path: (version, content hash),
        the content an edit it computes from now on is computed from."""
        actor = self.servers.get(server)
        return {} if actor is None else _versions(actor.open_documents())

    def supports(self, server: str, method: str) -> bool:
        """Whether server `server` offers `method` now (no wait for a registration)."""
        actor = self.servers.get(server)
        return actor is not None and actor.capabilities.supports(method)

    async def offers(self, server: str, method: str) -> bool:
        """Whether server `server` (started on need) offers `method`."""
        return await (await self.started(server)).offers(method)

    async def ask(
        self,
        server: str,
        method: str,
        params: Any,
        *,
        result_type: Any = Any,
        timeout: float | None = None,
        snapshot: bool = False,
    ) -> Answer:
        """`method` to server `server` after the disk sync: a follow-up to one of its
        answers (`callHierarchy/incomingCalls`, `codeAction/resolve`)."""
        async with self.gate.shared():
            actor = await self.started(server)
            await self.flush()
            versions = self.snapshot(server) if snapshot else None
            result = await actor.request(method, params, timeout=timeout, result_type=result_type)
            return Answer(actor.name, result, False, actor.encoding, self, versions)

    async def execute_command(self, server: str, command: dict[str, Any], on_edit: OnEdit) -> Any:
        """`workspace/executeCommand` on server `server`; each `workspace/applyEdit` it sends
        meanwhile (or within a grace period after its answer, as ruff does) goes to
        `on_edit(edit, encoding, versions)` with the server's documents when it asked (a
        ToolError refuses it). The server runs one command at a time; outside a command its
        edit requests are refused."""
        async with self.gate.shared():
            return await self._execute_command(server, command, on_edit)

    async def _execute_command(self, server: str, command: dict[str, Any], on_edit: OnEdit) -> Any:
        actor = await self.started(server)
        await self.flush()
        arguments = command.get("arguments") or []

        async def handle(edit: Any, documents: tuple[Document, ...]) -> None:
            await on_edit(edit, actor.encoding, _versions(documents))

        return await actor.execute_command(command["command"], arguments, handle)

    def indexing(self, server: str) -> bool:
        """Whether server `server` is not ready (an index still loading, as its readiness
        policy tells: work-done progress for most)."""
        actor = self.servers.get(server)
        return actor is not None and not actor.ready

    # -- file events --------------------------------------------------------------------

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        """Files changed by git writes or edits (`created`: those of them that are new, so
        a server resolving imports hears of them as created): the servers are told before
        the next request."""
        new = set(created)
        for path in paths:
            kind = CREATED if path in new else None
            path = path if path.is_absolute() else self.root / path
            try:
                self._changes[Path(real_path(path))] = kind
            except ToolError:  # it keeps changing: the watcher reports where it ends
                self._changes[path] = kind
        self._wake.set()

    def _on_watch(self, changes: list[tuple[Path, int]]) -> None:
        for path, kind in changes:
            self._changes[path] = kind
        self._wake.set()

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.flush()

    async def flush(self) -> None:
        """Tell running servers everything that changed on disk up to now (a file under
        preview keeps its preview text: it is synced when the preview ends).

        No await inside once the gate lets it in (it waits only while another task's
        preview holds the servers): each flush is whole before any other task runs (no
        lock needed), and each server sends its notifications as they are made, in order."""
        if not self._changes and not self._stale_documents():
            return  # the common case
        async with self.gate.shared():
            changes = {p: k for p, k in self._changes.items() if p not in self.previews}
            self._changes = {p: k for p, k in self._changes.items() if p in self.previews}
            running = [s for s in self.servers.values() if s.running]
            for path in self._stale_documents():
                changes.setdefault(path, None)
            if not changes:
                return
            events: dict[str, list[dict[str, Any]]] = {s.name: [] for s in running}
            for path, kind in changes.items():
                self._texts.pop(path, None)
                uri = path.as_uri()
                data, stat = None, UNTRUSTED
                if any(server.document(uri) is not None for server in running):
                    try:  # only open documents are read (never a FIFO or a huge file)
                        data, stat = self._read(path)
                    except ToolError:
                        data = None  # no longer a readable file: closed like a deleted one
                if kind is None:
                    kind = CHANGED if os.path.lexists(path) else DELETED
                for server in running:
                    doc = server.document(uri)
                    if doc is not None:
                        if data is None:
                            server.close_document(doc.uri)
                        else:
                            server.sync(path, doc.language_id, data, stat)
                    elif self._watched_by(server, path):
                        events[server.name].append({"uri": uri, "type": kind})
            for server in running:
                server.watched_files_changed(events[server.name])

    def _stale_documents(self) -> list[Path]:
        """Open documents whose file changed on disk since it was read (or may have).

        A stat per open file (once per path, however many servers have it open): the
        watcher's events come later than a request may follow a write. Kept lean: it runs
        before every request."""
        stale: list[Path] = []
        stats: dict[str, Stat] = {}
        for server in self.servers.values():
            if not server.running:
                continue
            for doc in server.open_documents():
                if doc.path in self.previews:
                    continue
                name = str(doc.path)
                current = stats.get(name)
                if current is None:
                    try:
                        current = stat_key(os.stat(name))
                    except OSError:
                        current = UNTRUSTED
                    stats[name] = current
                if current != doc.stat or doc.stat is UNTRUSTED:
                    stale.append(doc.path)
        return stale

    def _watched_by(self, server: LanguageServer, path: Path) -> bool:
        globs = server.capabilities.watched_file_globs()
        if globs:
            return any(glob_matches(g, path) for g in globs)
        language = language_of(path, self.root, self.languages)
        return language is not None and server.name in self.languages[language].servers

    # -- requests -----------------------------------------------------------------------

    def language_or_none(self, path: Path) -> str | None:
        """The language whose patterns match `path` (remembered: the patterns never change)."""
        try:
            return self._language_cache[path]
        except KeyError:
            pass
        language = language_of(path, self.root, self.languages)
        if len(self._language_cache) >= 4096:
            self._language_cache.clear()
        self._language_cache[path] = language
        return language

    def language(self, path: Path) -> str:
        language = self.language_or_none(path)
        if language is None:
            raise ToolError(
                ErrorKind.UNSUPPORTED_FILE_TYPE,
                f"No language is configured for {path.name!r}; give a file of a configured "
                "language or add one under [languages].",
            )
        return language

    def _language_id(self, language: str) -> str:
        return self.languages[language].language_id or language

    async def route(self, language: str, method: str) -> str:
        """The name of the first server of `language` (routing order) offering `method`."""
        return (await self._route(language, method)).name

    async def _route(self, language: str, method: str) -> LanguageServer:
        """The first server of `language` (routing order) that offers `method`, started.

        A server that is missing or failed ends the search when it would offer `method`
        (as it did when it last ran, or when it never ran): its error is the answer, not
        another server's weaker one (with the later servers that are not installed either)."""
        errors: list[ToolError] = []
        names = self.languages[language].servers
        blocked = False  # a server that would own `method` failed: no later one answers
        for name in names:
            if blocked:
                later = self.server_for(name, language)
                if not command_available(later.config.command, later.config.env):
                    errors.append(later.unavailable())
                continue
            try:
                server = await self.started(name, language)
            except ToolError as exc:
                errors.append(exc)
                blocked = self.server_for(name, language).may_offer(method)
                continue
            if await server.offers(method):
                return server
        if errors:
            raise self.missing(errors, names)
        raise ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"No {language} language server offers {method}; configure one that does.",
        )

    async def _open(self, server: LanguageServer, path: Path, language: str) -> Document:
        await self.flush()
        await server.connection()
        doc = server.document(path_to_uri(path))
        if doc is not None and doc.stat is not UNTRUSTED and _stat(path) == doc.stat:
            server.touch(doc.uri)
            return doc
        data, stat = self.previews.get(path), UNTRUSTED
        if data is None:
            data, stat = self._read(path)
        if data is None:
            raise ToolError(ErrorKind.FILE_NOT_FOUND, f"{path.name!r} no longer exists.")
        return server.sync(path, self._language_id(language), data, stat)

    async def request(
        self,
        path: Path,
        method: str,
        params: Callable[[DocumentContext], Any],
        *,
        result_type: Any = Any,
        wait_ready: bool = True,
        timeout: float | None = None,
        snapshot: bool = False,
    ) -> Answer:
        """Send a request about `path` to the server that offers `method` (see the module doc)."""
        language = self.language(path)
        async with self.gate.shared():
            server = await self._route(language, method)
            return await self._ask(
                server, path, language, method, params, result_type, wait_ready, timeout, snapshot
            )

    async def request_all(
        self,
        path: Path,
        method: str,
        params: Callable[[DocumentContext], Any],
        *,
        result_type: Any = Any,
        wait_ready: bool = False,
        timeout: float | None = None,
        snapshot: bool = False,
    ) -> tuple[list[Answer], list[ToolError]]:
        """`method` to every server of the file's language that offers it, concurrently."""
        language = self.language(path)
        names = self.languages[language].servers
        answers: list[Answer | None] = [None] * len(names)
        errors: list[ToolError] = []

        async def one(i: int, name: str) -> None:
            try:
                server = await self.started(name, language)
                if await server.offers(method):
                    answers[i] = await self._ask(
                        server,
                        path,
                        language,
                        method,
                        params,
                        result_type,
                        wait_ready,
                        timeout,
                        snapshot,
                    )
            except ToolError as exc:
                errors.append(exc)

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for i, name in enumerate(names):
                nursery.start_soon(one, i, name)
        found = [a for a in answers if a is not None]
        if not found and errors:
            raise self.missing(errors, names)
        return found, errors

    async def workspace_request(
        self,
        method: str,
        params: Any,
        *,
        languages: Sequence[str],
        result_type: Any = Any,
        timeout: float | None = None,
    ) -> list[Answer]:
        """A request naming no document, to each server of `languages` that offers it."""
        async with self.gate.shared():
            return await self._workspace_request(method, params, languages, result_type, timeout)

    async def _workspace_request(
        self,
        method: str,
        params: Any,
        languages: Sequence[str],
        result_type: Any,
        timeout: float | None,
    ) -> list[Answer]:
        answers: list[Answer] = []
        errors: list[ToolError] = []
        names = list(dict.fromkeys(n for lang in languages for n in self.languages[lang].servers))
        await self.flush()
        for name in names:
            try:
                server = await self.started(name)
                if not await server.offers(method):
                    continue
                ready = await self._loaded(server, languages)
                result = await server.request(
                    method, params, timeout=timeout, result_type=result_type
                )
                answers.append(Answer(server.name, result, not ready, server.encoding, self))
            except ToolError as exc:
                errors.append(exc)
        if not answers and errors:
            raise self.missing(errors, names)
        return answers

    async def _loaded(self, server: LanguageServer, languages: Sequence[str]) -> bool:
        """Whether a server whose readiness policy is strict became ready for a request
        naming no file within `lsp.ready_timeout` (one that loads nothing until a file is
        open gets the first project file of its languages opened), and answers it for the
        whole project."""
        readiness = server.readiness
        if not readiness.strict:
            return True
        if readiness.needs_document and not len(server.open_documents()):
            files, _ = await trio.to_thread.run_sync(self.project_files)
            mine = [lang for lang in languages if server.name in self.languages[lang].servers]
            first = [(min(files[lang]), lang) for lang in mine if files.get(lang)]
            if first:
                path, language = min(first)
                await self._open(server, path, language)
        ready = await server.until_ready(self.config.lsp.ready_timeout)
        return ready and readiness.complete

    async def _ask(
        self,
        server: LanguageServer,
        path: Path,
        language: str,
        method: str,
        params: Callable[[DocumentContext], Any],
        result_type: Any,
        wait_ready: bool,
        timeout: float | None,
        snapshot: bool = False,
    ) -> Answer:
        """One request, retried once when the server answers that the content changed or
        that it cancelled the request itself, or when it broke and restarted."""
        started = trio.current_time()
        self._in_flight += 1
        try:
            for attempt in (1, 2):
                doc = await self._open(server, path, language)
                partial = False
                asked = trio.current_time()
                if wait_ready:
                    partial = not await server.wait_ready(doc, self.config.lsp.ready_timeout)
                ready = trio.current_time() - asked
                ctx = DocumentContext(
                    server.name, path, doc.uri, doc.text, doc.version, server.encoding, doc.index
                )
                built = params(ctx)
                versions = self.snapshot(server.name) if snapshot else None
                try:
                    result = await server.request(
                        method, built, timeout=timeout, result_type=result_type
                    )
                except ToolError as exc:
                    if attempt == 1 and (
                        exc.details.get("code") in RETRIED_CODES or exc.details.get("restarting")
                    ):
                        continue
                    if exc.kind is ErrorKind.TIMEOUT:
                        waited = trio.current_time() - started
                        raise _waited(server.name, method, waited, ready) from None
                    raise
                if server.document(doc.uri) is not doc or doc.version != ctx.version:
                    # The file changed (or was closed, and the server may have read the disk
                    # itself) while the server answered: the answer is not about our text.
                    if attempt == 1:
                        continue
                    raise ToolError(
                        ErrorKind.LSP_ERROR,
                        f"{path.name!r} changed on disk while the language server answered; "
                        "run the tool again once it is settled.",
                        server=server.name,
                        code=CONTENT_MODIFIED,
                    )
                return Answer(server.name, result, partial, server.encoding, self, versions)
            raise AssertionError("unreachable")
        finally:
            self._in_flight -= 1
            self.last_used = trio.current_time()

    # -- positions and paths ------------------------------------------------------------

    def line_index(self, path: Path) -> LineIndex | None:
        """The text of `path` as the servers see it: an open document, else the disk (and
        the disk for a file under another task's preview)."""
        uri = path_to_uri(path)
        hidden = path in self.previews and not self.gate.held()
        for server in () if hidden else self.servers.values():
            doc = server.document(uri)
            if doc is not None:
                return doc.index
        now = time.time_ns()
        stat = _stat(path)
        cached = self._texts.get(path)
        if cached is not None and stat is not UNTRUSTED and cached[0] == stat:
            return cached[1]
        try:  # a path the server named outside the root (a stub) may be read, if it stays out
            data, st = read_file(
                path, self.root, self.config.lsp.max_file_bytes, outside=not self._under_root(path)
            )
        except ToolError:
            return None
        stat = _trusted(st, now)
        index = LineIndex(data.decode("utf-8", "replace"))
        if len(self._texts) > 512:
            self._texts.clear()
        self._texts[path] = (stat, index)
        return index

    def _under_root(self, path: Path) -> bool:
        """Whether `path`, as written, lies under the root (it must then resolve inside it)."""
        text, base = str(path), str(self.root)
        return text == base or text.startswith(base.rstrip("/") + "/")

    def _read(self, path: Path) -> tuple[bytes | None, Stat]:
        """The bytes of `path` (inside the root) through `read_file`, and the stat under
        which an unchanged file need not be read again; None when the file is gone."""
        now = time.time_ns()
        try:
            data, st = read_file(path, self.root, self.config.lsp.max_file_bytes)
        except Missing:
            return None, UNTRUSTED
        return data, _trusted(st, now)

    def known_text(self, path: Path, stat: Stat) -> LineIndex | None:
        """The text of `path` as read when its stat was `stat` (an open document, or the
        line cache), or None: a file whose stat still matches need not be read again."""
        uri = path_to_uri(path)
        for server in self.servers.values():
            doc = server.document(uri)
            if doc is not None and doc.stat == stat:
                return doc.index
        cached = self._texts.get(path)
        if cached is not None and cached[0] == stat:
            return cached[1]
        return None

    def to_client(
        self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
    ) -> tuple[int, int]:
        if isinstance(position, dict):
            line, character = position["line"], position["character"]
        else:
            line, character = position.line, position.character
        path = uri_to_path(uri)
        index = self.line_index(path) if path is not None else None
        if index is None:
            return line + 1, character + 1
        return index.to_client(line, character, encoding)

    def relative(self, uri: str) -> str | None:
        """The root-relative path of `uri`, or None when it is outside the root."""
        path = uri_to_path(uri)
        if path is None:
            return None
        real = Path(real_path(path))
        try:
            return real.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def preview(self, uri: str, line: int) -> str:
        path = uri_to_path(uri)
        index = self.line_index(path) if path is not None else None
        return index.line(line - 1).strip() if index is not None else ""

    # -- diagnostics --------------------------------------------------------------------

    def open_files(self, languages: Sequence[str], limit: int) -> list[Path]:
        """Up to `limit` files the servers of `languages` have open, most recently used
        first (the files an edit of another file may break)."""
        names = {n for lang in languages for n in self.languages[lang].servers}
        found: dict[Path, None] = {}
        for name in sorted(names):
            server = self.servers.get(name)
            if server is not None:
                for doc in reversed(server.open_documents()):
                    found.setdefault(doc.path, None)
        return list(found)[:limit]

    # -- previews -----------------------------------------------------------------------

    def previewing(self) -> AbstractAsyncContextManager[Previewer]:
        """`async with service.previewing() as p:` the servers to the caller alone (no
        other request runs meanwhile); `async with p.show(path, data):` shows them `data`
        as the content of `path`, given back the disk's after the block (`lsp.preview`)."""
        return hold_for_preview(self)

    async def show(self, path: Path) -> None:
        """Send the preview text of `path` to every server of its language (started)."""
        language = self.language(path)
        data = self.previews[path]
        for name in self.languages[language].servers:
            with contextlib.suppress(ToolError):  # its diagnostics say it failed
                server = await self.started(name, language)
                server.sync(path, self._language_id(language), data)

    def restore(self, path: Path) -> None:
        """Give every server that has `path` open the disk's content again (or close it
        when the file is not there)."""
        uri = path_to_uri(path)
        try:
            data, stat = self._read(path)
        except ToolError:
            data, stat = None, UNTRUSTED
        for server in self.servers.values():
            doc = server.document(uri)
            if doc is None:
                continue
            if data is None:
                server.close_document(uri)
            else:
                server.sync(path, doc.language_id, data, stat)

    # -- diagnostics --------------------------------------------------------------------

    async def diagnostics(self, path: Path) -> FileDiagnostics:
        """Diagnostics of every diagnostic server for the file's current content (fresh);
        inside a preview of the file, for the preview's text."""
        async with self.gate.shared():
            return await self._diagnostics(path)

    async def _diagnostics(self, path: Path) -> FileDiagnostics:
        language = self.language(path)
        await self.flush()
        data, stat = self.previews.get(path), UNTRUSTED
        if data is None:
            data, stat = self._read(path)
        if data is None:
            raise ToolError(ErrorKind.FILE_NOT_FOUND, f"{path.name!r} does not exist.")
        digest = content_hash(data)
        settle = self.config.lsp.settle_timeout
        found: list[Found] = []
        errors: list[ToolError] = []
        silent: list[str] = []

        async def one(name: str) -> None:
            try:
                server = await self.started(name, language)
                doc = server.sync(
                    path, self._language_id(language), data, stat, fresh_diagnostics=True
                )
                items = await server.document_diagnostics(doc, settle)
            except ToolError as exc:
                errors.append(exc)
                return
            if items is None:
                silent.append(name)
                return
            file = self.relative(doc.uri) or doc.uri
            found.extend(self._found(file, d, doc.index, server.encoding) for d in items)

        async with trio.open_nursery() as nursery:
            for name in self.languages[language].servers:
                nursery.start_soon(one, name)
        if errors and len(errors) == len(self.languages[language].servers):
            raise self.missing(errors, self.languages[language].servers)
        names = self.languages[language].servers
        errors = in_routing_order(errors, names)
        silent = [n for n in names if n in silent]
        return FileDiagnostics(
            found, digest, bool(silent or errors), errors, decode_text(data), silent
        )

    async def server_diagnostics(self, path: Path) -> ServerDiagnostics:
        """Each diagnostic server's own diagnostics (with their `data`) for the file's
        content now, by server: the context a code action request needs (ruff's quick
        fixes). A server that fails or does not answer in time is left out."""
        async with self.gate.shared():
            return await self._server_diagnostics(path)

    async def _server_diagnostics(self, path: Path) -> ServerDiagnostics:
        language = self.language(path)
        await self.flush()
        try:
            data, _ = read_file(path, self.root, self.config.lsp.max_file_bytes)
        except ToolError:
            return {}  # the code action request reports what is wrong with the file
        settle = self.config.lsp.settle_timeout
        found: ServerDiagnostics = {}

        async def one(name: str) -> None:
            try:
                server = self.server_for(name, language)
                await server.connection()
                doc = server.sync(path, self._language_id(language), data, fresh_diagnostics=True)
                items = await server.document_diagnostics(doc, settle)
            except ToolError:
                return  # the code action request reports the server's failure
            if items is not None:
                found[name] = (doc.version, items)

        async with trio.open_nursery() as nursery:
            for name in self.languages[language].servers:
                nursery.start_soon(one, name)
        return found

    async def workspace_diagnostics(
        self, languages: Sequence[str] | None = None, folder: Path | None = None
    ) -> FolderDiagnostics:
        """`_workspace_diagnostics`, while no preview holds the servers."""
        async with self.gate.shared():
            return await self._workspace_diagnostics(languages, folder)

    async def _workspace_diagnostics(
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
        await self.flush()
        folder = folder or self.root
        files, whole = await trio.to_thread.run_sync(self.project_files, 20000, folder)
        for paths in files.values():
            paths.sort()  # a budget takes the same files every time
        if languages is None:
            languages = sorted(files)
        names = list(dict.fromkeys(n for lang in languages for n in self.languages[lang].servers))
        errors: list[ToolError] = []
        by_uri: dict[tuple[str, str], Sequence[Diagnostic]] = {}
        encodings: dict[str, Encoding] = {}
        partial = not whole
        unchecked = 0
        budget = max(0, self.config.lsp.folder_diagnostics_files)

        async def one(name: str) -> None:
            nonlocal partial, unchecked
            served = [lang for lang in languages if name in self.languages[lang].servers]
            mine = [(lang, path) for lang in served for path in files.get(lang, ())]
            try:
                server = await self.started(name)
                await server.wait_idle(self.config.lsp.ready_timeout)
                encodings[name] = server.encoding
                for uri, published in server.published.items():
                    by_uri[(name, uri)] = published.diagnostics
                if await server.offers("workspace/diagnostic"):
                    expected = {path for _, path in mine} if whole else None
                    pulled, complete = await server.workspace_diagnostics(
                        self.config.lsp.settle_timeout, expected
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
        found: list[Found] = []
        for (name, uri), items in by_uri.items():
            path = uri_to_path(uri)
            index = self.line_index(path) if path is not None else None
            file = self.relative(uri)
            if index is None or file is None:
                continue
            found.extend(self._found(file, d, index, encodings[name]) for d in items)
        if names and len(errors) == len(names):
            raise self.missing(errors, names)
        errors = in_routing_order(errors, names)
        return FolderDiagnostics(found, errors, partial or bool(errors), unchecked)

    async def _each_file(
        self, server: LanguageServer, files: Sequence[tuple[str, Path]]
    ) -> dict[str, Sequence[Diagnostic] | None]:
        """`server`'s diagnostics of each file (opened as needed) for its content on disk:
        uri -> diagnostics, or None where it did not answer within the settle timeout."""
        settle = self.config.lsp.settle_timeout
        limiter = trio.CapacityLimiter(FOLDER_CONCURRENCY)
        answers: dict[str, Sequence[Diagnostic] | None] = {}

        async def ask(language: str, path: Path) -> None:
            async with limiter:
                data, stat = self._read(path)
                if data is None:  # gone since the walk
                    return
                doc = server.sync(
                    path, self._language_id(language), data, stat, fresh_diagnostics=True
                )
                answers[doc.uri] = await server.document_diagnostics(doc, settle)

        async with trio.open_nursery() as nursery:
            for language, path in files:
                nursery.start_soon(ask, language, path)
        return answers

    def project_files(
        self, limit: int = 20000, folder: Path | None = None
    ) -> tuple[dict[str, list[Path]], bool]:
        """The files under `folder` (default: the root) by language (ignored folders
        skipped), and whether that is all of them: the walk stops after `limit` files."""
        files: dict[str, list[Path]] = {}
        count = 0
        for dirpath, dirnames, filenames in os.walk(folder or self.root):
            folder = Path(dirpath)
            dirnames[:] = [d for d in dirnames if not is_ignored(folder / d, self.root)]
            for filename in filenames:
                count += 1
                path = folder / filename
                language = language_of(path, self.root, self.languages)
                if language is not None:
                    files.setdefault(language, []).append(path)
            if count > limit:
                return files, False
        return files, True

    def _found(self, file: str, d: Diagnostic, index: LineIndex, encoding: Encoding) -> Found:
        line, column = index.to_client(d.range.start.line, d.range.start.character, encoding)
        end_line, end_column = index.to_client(d.range.end.line, d.range.end.character, encoding)
        return Found(
            file=file,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            severity=int(d.severity or 1),
            message=scrub(d.message, self.root),
            code=d.code,
            source=scrub(d.source, self.root) if d.source else d.source,
        )


def _versions(documents: Sequence[Document]) -> Versions:
    """Documents by canonical path: (version, content hash)."""
    return {Path(real_path(d.path)): (d.version, d.hash) for d in documents}


def in_routing_order(errors: Sequence[ToolError], names: Sequence[str]) -> list[ToolError]:
    """Servers' errors sorted as their servers are in `names` (concurrent asks end in any order)."""
    rank = {name: i for i, name in enumerate(names)}
    return sorted(errors, key=lambda e: rank.get(e.details.get("server", ""), len(rank)))


def _waited(server: str, method: str, waited: float, ready: float) -> ToolError:
    """A timeout that says how long the caller waited in all, readiness included."""
    readiness = f", {round(ready):g} s of it for the server to be ready" if ready >= 1 else ""
    return ToolError(
        ErrorKind.TIMEOUT,
        f"The {server} language server did not answer {method} within "
        f"{round(waited, 1):g} s{readiness}; retry, or raise lsp.method_timeouts "
        "(or lsp.ready_timeout) in the config.",
        server=server,
    )


def _stat(path: Path) -> Stat:
    try:
        return stat_key(os.stat(path))
    except OSError:
        return UNTRUSTED


def _trusted(st: os.stat_result, now: int) -> Stat:
    """The stat under which an unchanged file need not be read again, for a read at `now`.

    As in git's "racy" check, a stat is only trusted when the file was last changed well
    before the read: a later write then always shows in its timestamps, even with the
    coarse clock of the file system. Otherwise it is UNTRUSTED and the file is read (and
    hashed) again next time.
    """
    key = stat_key(st)
    if now - max(key[0], key[3]) < RACY_NS:
        return UNTRUSTED
    return key
