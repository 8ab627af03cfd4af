"""The language servers of one session behind one interface: the only part of
`codeward.daemon.lsp` the rest of the daemon uses.

    service = LanguageService(root, config, on_progress)
    await nursery.start(service.run)     # owns the server actors; cancel stops them all

It is built of parts that each do one job and call only down: `routing` (a path's
language, the order of its servers, the routing errors), `pool` (the server actors),
`file_events` (changes on disk told to the servers), `texts` (files' text and positions
for clients), `project` (the walk of the project's files) and `diagnostics` (fresh
diagnostics in client terms). It asks each server's actor (`server.LanguageServer`)
through the actor's methods only.

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
  `partial`. The timeout is `lsp.timeout_for(method)` (by method, else `request_timeout`); a
  timeout or cancellation sends `$/cancelRequest`. A `ContentModified` answer is retried
  once. With `snapshot`, `Answer.versions` holds the server's open documents (version,
  content hash) as it computed the answer: the basis an edit in it is checked against.
- `await service.request_held(path, method, params, *, result_type=Any) -> Answer`: the
  editor dialect's `request` without a readiness wait; about a file an editor holds, whose
  server runs, routes `method` without a wait and has the buffer open, it is sent at once
  with nothing read from the disk (the buffer is the text; the other open documents'
  changes reach the servers from the watcher's events). Anything else goes as `request`.
- `await service.request_together(path, [(method, params, result_type), ...]) ->
  list[Answer | ToolError]`: several requests about one file, those the first one's server
  offers sent to it at once, in one write, after one sync (hover and the definition that
  names its module); the first one's error is raised, the others' come back in place.
- `await service.request_all(path, method, params, ...) -> (list[Answer], list[ToolError])`:
  the same, to every server of the language that offers `method` (to merge, e.g. code
  actions); the errors of servers that failed come back beside the answers.
- `await service.workspace_request(method, params, *, languages, ...) -> list[Answer]`:
  a request naming no file (`workspace/symbol`) to each running server of `languages`
  offering it (a language with none: its first server that offers it, started);
  `service.workspace_languages(files)`: the languages a question about the whole project
  is about (running ones, and the main ones by file count; configuration files' never).
- `await answer.follow(method, params)` / `await service.ask(server, method, params)`: a
  follow-up to the server that gave an answer (`callHierarchy/incomingCalls`,
  `codeAction/resolve`). `await service.route(language, method)`: the server's name;
  `service.supports(server, method)`, `await service.offers(server, method)`.
- `await service.will_rename(old, new) -> (list[Answer], list[str])`:
  `workspace/willRenameFiles` to each server of the file's language whose file operation
  filters take it (the file opened first), and the servers that do not;
  `await service.did_rename(old, new)`: `workspace/didRenameFiles` after the move.
- `await service.execute_command(server, command, on_edit)`: `workspace/executeCommand`;
  the `workspace/applyEdit` requests the server sends meanwhile go to `on_edit(edit,
  encoding, versions)`. `service.snapshot(server)`: its open documents' versions now.
- `await service.capabilities_of(languages) -> list[Offer]`: each server of the languages,
  started: its static capabilities as it sent them, its encoding, `supports(method)` (the
  editor dialect's `initialize`).
- `Answer.point(uri, position)`, `Answer.span(uri, range)`: 1-based code points from the
  server's positions in any file; `service.relative(uri)`: root-relative output path or
  None; `service.source_line(uri, line)`: the trimmed source line (1-based);
  `service.line_index(path)`: the text of a file as the servers see it.
- `service.known_text(path, stat) -> LineIndex | None`: the text already read when the
  file's stat was `stat` (tool inputs need not read an unchanged file again);
  `service.language_or_none(path)`: the configured language of a path (remembered;
  codeward's own `.codeward.toml` has none); `service.project_files()`: the one walk of
  the project's files by language (kept while the watcher sees no file come or go).

Diagnostics: `await service.diagnostics(path) -> FileDiagnostics`,
`await service.files_diagnostics(paths, first)` (each file's, or its error, asked at once; the
others wait no longer than the `first` took),
`await service.workspace_diagnostics(folder=...) -> FolderDiagnostics` (fresh, as
get_diagnostics shows them: a folder asks every diagnostic server of each of its
languages; a server that pulls workspace diagnostics is pulled, one that reports only
open files has the folder's files opened in batches while the call's time lasts, the rest
making the answer `partial`), and
`await service.server_diagnostics(path)`: each server's own items, for code actions.

Editors' buffers (an overlay over the disk, `lsp/overlay.py`, told to the servers by
`lsp/editors.py`): `editor_open`/`editor_change(holder, path, text, version)`,
`editor_save`, `editor_close(holder, path)`, `editor_release(holder)`,
`editor_buffer(path)`. A held file's servers see the buffer's text, not the disk's.

The session's hooks: `files_changed(paths)`, `status()`, `park(reason)`,
`restart_failed()`, `warm()` (start the main languages' first servers: an agent's
session), `await set_restricted(bool)`, `busy`, `last_used`;
`formatting_off(server)` says why a server does not format in an untrusted root. A server that was
not installed is looked for again (its default command resolved anew) on the next need,
at most once every `LOOKUP_INTERVAL` seconds of the trio clock.

Errors are `ToolError`s: `unsupported_file_type` (no language for the file),
`lsp_unavailable` (not installed, naming what to install, every missing server of the
language in routing order), `unsupported_by_server` (every server runs and none offers
the method: never an empty answer), `lsp_error` (crash, failure, refusal), `timeout`,
`file_not_found`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import trio

from codeward.daemon.config import Config
from codeward.daemon.files import UNTRUSTED, Stat
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.connection import CONTENT_MODIFIED, REQUEST_CANCELLED, SERVER_CANCELLED
from codeward.daemon.lsp.defaults import effective_languages
from codeward.daemon.lsp.diagnostics import (
    Diagnostics,
    FileDiagnostics,
    FolderDiagnostics,
    Found,
    ServerDiagnostics,
)
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.editors import Editors, canonical
from codeward.daemon.lsp.file_events import FileEvents
from codeward.daemon.lsp.file_operations import rename_params, takes
from codeward.daemon.lsp.folder_diagnostics import Folders
from codeward.daemon.lsp.overlay import Buffer, EditorHolder
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.preview import Previewer, hold_for_preview
from codeward.daemon.lsp.project import WALK_LIMIT, main_languages, project_files
from codeward.daemon.lsp.restricted import FORMATTING_OFF
from codeward.daemon.lsp.routing import Languages, unsupported
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.shared import Repository, SharedServers, repository_of
from codeward.daemon.lsp.texts import Texts, stat_of
from codeward.daemon.lsp.types import PositionLike, RangeLike
from codeward.daemon.lsp.uris import path_to_uri, real_path
from codeward.daemon.lsp.watcher import watch_root
from codeward.protocol.errors import ErrorKind, ToolError

__all__ = [
    "CONTENT_MODIFIED",
    "Answer",
    "Ask",
    "DocumentContext",
    "FileDiagnostics",
    "FolderDiagnostics",
    "Found",
    "LanguageService",
    "Offer",
    "OnEdit",
    "Previewer",
    "ServerDiagnostics",
    "SharedServers",
    "Versions",
    "repository_of",
]

# Error codes of an answer worth one more try: the content changed, or the server cancelled
# the request itself (codeward's own cancellations never come back as answers).
RETRIED_CODES = frozenset({CONTENT_MODIFIED, REQUEST_CANCELLED, SERVER_CANCELLED})

WARM_WALK_LIMIT = 5000  # files `warm` looks at to tell the main languages (as session/open)
Versions = dict[Path, tuple[int, str]]  # canonical path -> (version, content hash)
# one request of `request_together`: (method, params builder, result type)
Ask = tuple[str, Callable[["DocumentContext"], Any], Any]
Listing = tuple[dict[str, list[Path]], bool]  # files by language, and whether that is all
# a server's own edit during a command: (WorkspaceEdit, its encoding, its documents) -> answer
OnEdit = Callable[[Any, Encoding, Versions], Awaitable[None]]


@dataclass(frozen=True)
class Offer:
    """What one running server offers: its static capabilities as it sent them (JSON
    data), its position encoding, and `supports(method)` (dynamic registrations too)."""

    server: str
    capabilities: dict[str, Any]
    encoding: Encoding
    supports: Callable[[str], bool]


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

    def span(self, uri: str, rng: RangeLike | dict[str, Any]) -> tuple[int, int, int, int]:
        """1-based (line, character, end_line, end_character) of a server range in `uri`."""
        if isinstance(rng, dict):
            start, end = rng["start"], rng["end"]
        else:
            start, end = rng.start, rng.end
        return (*self.point(uri, start), *self.point(uri, end))

    async def follow(self, method: str, params: Any, *, result_type: Any = Any) -> Answer:
        """A follow-up request to the server that gave this answer (`callHierarchy/...`,
        `codeAction/resolve`), as that server computes it."""
        return await self.service.ask(self.server, method, params, result_type=result_type)


def _joined(first: Answer, more: Sequence[Answer | ToolError]) -> Answer:
    """`first` with the list results of `more` (answers of the same server) added to its
    own, each item once."""
    items: list[Any] = list(first.result or [])
    seen = {msgspec.json.encode(item) for item in items}
    for answer in more:
        if isinstance(answer, ToolError) or not isinstance(answer.result, list):
            continue
        for item in answer.result:
            key = msgspec.json.encode(item)
            if key not in seen:
                seen.add(key)
                items.append(item)
    return dataclasses.replace(first, result=items)


class LanguageService:
    """The language servers of one root (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        config: Config,
        on_progress: Callable[[dict[str, Any]], None],
        budget: ServerBudget | None = None,
        *,
        restricted: bool = False,
        shared: SharedServers | None = None,
        repository: str | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.budget = budget
        self.shared = shared
        # the root's git common directory: its sessions share server processes, the gate
        # and the previews (a nested root's files are the same documents)
        self.repository = repository if shared is not None else None
        held = shared.join(repository) if shared is not None and repository else Repository()
        self.gate = held.gate  # requests share the servers; a preview has them alone
        self.previews = held.previews  # files shown a text that is not on disk
        self.pool = ServerPool(
            root,
            config,
            on_progress,
            budget,
            restricted=restricted,
            shared=shared,
            repository=self.repository,
        )
        self.languages = Languages(root, effective_languages(config))
        servers = self.pool.servers
        self.overlay = held.overlay  # editors' buffers, the text the servers see for them
        limit = config.lsp.max_file_bytes
        self.texts = Texts(root, limit, servers, self.previews, self.gate, self.overlay)
        self.events = FileEvents(
            root, servers, self.texts, self.languages, self.previews, self.gate
        )
        self.diagnostics_of = Diagnostics(
            root,
            config.lsp,
            self.pool,
            self.languages,
            self.texts,
            self.events,
            self.gate,
        )
        self.folders = Folders(self.diagnostics_of)
        self.editors = Editors(root, self.overlay, self.pool, self.languages, self.texts, self.gate)
        self.last_used = 0.0  # trio time of its last request's end
        self._in_flight = 0  # requests through `_ask`
        self._watching = False  # the watcher reports creations and deletions
        self._listing: tuple[tuple[int, Path | None, int], Listing] | None = None

    # -- lifetime and the session's hooks ----------------------------------------------

    async def run(
        self, *, watch: bool = True, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the server actors and the root watcher until cancelled; then stop every server."""
        async with trio.open_nursery() as nursery:
            self.pool.nursery = nursery
            if watch:
                await nursery.start(watch_root, self.root, self.events.on_watch)
                self._watching = True
            nursery.start_soon(self.events.run)
            task_status.started()
            if self.budget is not None:
                self.budget.managers.add(self)
            try:
                await trio.sleep_forever()
            finally:
                self._watching = False
                self.pool.nursery = None
                self.pool.release()
                if self.shared is not None and self.repository is not None:
                    self.shared.leave(self.repository)
                if self.budget is not None:
                    self.budget.managers.discard(self)

    def status(self) -> list[dict[str, Any]]:
        return self.pool.status()

    @property
    def restricted(self) -> bool:
        return self.pool.restricted

    def formatting_off(self, server: str) -> str | None:
        """Why server `server` does not format in this (untrusted) root, else None."""
        return FORMATTING_OFF.get(server) if self.pool.restricted else None

    def servers_of(self, language: str) -> list[str]:
        """The servers of `language` in routing order, as the project narrowed them."""
        return self.languages.servers(language)

    def code_actions_at(self, server: str) -> str:
        """Where server `server` answers quick fixes: its config's `code_actions_at`."""
        config = self.pool.configs.get(server)
        return config.code_actions_at if config is not None else "range"

    @property
    def busy(self) -> bool:
        """Whether a request is in flight on any of its servers."""
        return self._in_flight > 0 or any(s.busy for s in self.pool.servers.values())

    def park(self, reason: str) -> None:
        """Stop every live server; each starts again on its next need."""
        self.pool.park(reason)

    def restart_failed(self) -> None:
        """Failed or missing servers start again on their next need."""
        self.pool.restart_failed()

    def warm(self) -> list[str]:
        """Start, in the background, the first installed server of each of the project's
        main languages (`project.main_languages`: configuration files' never), which an
        agent's first question will need: their start overlaps the rest of the daemon's.
        The servers started (or already running)."""
        started: list[str] = []
        for language in main_languages(self.project_files(limit=WARM_WALK_LIMIT)[0]):
            for name in self.languages.servers(language):
                if self.pool.unavailable(name, language) is not None:
                    continue  # not installed, or not in an untrusted root: the next one
                with contextlib.suppress(ToolError):  # failed lately: on its next need
                    self.pool.server_for(name, language).start()
                    started.append(name)
                break
        return started

    async def set_restricted(self, restricted: bool) -> None:
        """The root's trust changed: servers restart in the configuration it allows."""
        await self.pool.set_restricted(restricted)
        await self.editors.reshow()  # new actors: the editors' buffers again

    def files_changed(self, paths: Sequence[Path], created: Sequence[Path] = ()) -> None:
        """Files changed by git writes or edits (`created`: the new ones among them): the
        servers are told before the next request."""
        self.events.files_changed(paths, created)

    async def flush(self) -> None:
        """Tell running servers everything that changed on disk up to now."""
        await self.events.flush()

    # -- languages and the project --------------------------------------------------------

    def language_or_none(self, path: Path) -> str | None:
        """The language whose patterns match `path` (codeward's own files match none)."""
        return self.languages.of(path)

    def language(self, path: Path) -> str:
        """The language of `path`, or `unsupported_file_type`."""
        return self.languages.require(path)

    def configured_languages(self) -> list[str]:
        return sorted(self.languages.configs)

    def project_files(self, limit: int = WALK_LIMIT, folder: Path | None = None) -> Listing:
        """The files under `folder` (default: the root) by language, and whether that is
        all of them (see `project.project_files`; not to be changed by the caller). While
        the watcher runs, the last walk serves until a file is created or deleted."""
        key = (self.events.listing, folder, limit)
        listing = self._walked(key)
        if listing is None:
            listing = project_files(self.root, self.languages.configs, folder, limit)
            self._listing = (key, listing)
        return listing

    async def listing(self) -> Listing:
        """`project_files()` off the event loop: the walk in a worker thread, unless the
        last walk serves (then with no hop to a thread: an editor's `initialize` waits)."""
        listing = self._walked((self.events.listing, None, WALK_LIMIT))
        return listing or await trio.to_thread.run_sync(self.project_files)

    def _walked(self, key: tuple[int, Path | None, int]) -> Listing | None:
        if self._watching and self._listing is not None and self._listing[0] == key:
            return self._listing[1]
        return None

    def project_languages(self, limit: int = WALK_LIMIT) -> list[str]:
        """Languages with at least one file under the root (ignored folders skipped)."""
        return sorted(self.project_files(limit)[0])

    def workspace_languages(self, files: Mapping[str, Sequence[Path]]) -> list[str]:
        """The languages a question about the whole project (`files`: its walk) is about:
        those with files whose servers already run for the root, and its main languages
        by file count (`project.main_languages`: configuration files' languages never)."""
        running = {
            lang
            for lang in files
            if lang in self.languages.configs
            and any(
                (server := self.pool.servers.get(name)) is not None and server.live
                for name in self.languages.servers(lang)
            )
        }
        return sorted(running | set(main_languages(files)))

    # -- text and positions ---------------------------------------------------------------

    def line_index(self, path: Path, stat: Stat | None = None) -> LineIndex | None:
        """The text of `path` as the servers see it: an open document, else the disk
        (`stat`: the file's, when the caller has just taken it)."""
        return self.texts.line_index(path, stat)

    def known_text(self, path: Path, stat: Stat) -> LineIndex | None:
        """The text of `path` as read when its stat was `stat`, or None."""
        return self.texts.known_text(path, stat)

    def to_client(
        self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
    ) -> tuple[int, int]:
        """1-based (line, character) in code points of a server position in `uri`."""
        return self.texts.to_client(uri, position, encoding)

    def relative(self, uri: str) -> str | None:
        """The root-relative path of `uri`, or None when it is outside the root."""
        return self.texts.relative(uri)

    def source_line(self, uri: str, line: int) -> str:
        """The trimmed text of 1-based `line` of `uri`."""
        return self.texts.source_line(uri, line)

    # -- diagnostics ----------------------------------------------------------------------

    # The diagnostics part gathers them (inside the gate) and calls the servers itself:
    # these hand over its coroutines, so the service is not a step of their line.

    def diagnostics(
        self, path: Path, servers: Sequence[str] | None = None
    ) -> Awaitable[FileDiagnostics]:
        """Diagnostics of every diagnostic server (or those of `servers`) for the file's
        current content (fresh); inside a preview of the file, for the preview's text."""
        return self.diagnostics_of.file(path, servers)

    def files_diagnostics(
        self, paths: Sequence[Path], first: Collection[Path] = ()
    ) -> Awaitable[dict[Path, FileDiagnostics | ToolError]]:
        """Each file's diagnostics (as `diagnostics`), asked at once: by path, its answer
        or the error it failed with; the others than `first` wait no longer than those
        (see `Diagnostics.files`)."""
        return self.diagnostics_of.files(paths, first)

    def workspace_diagnostics(
        self, languages: Sequence[str] | None = None, folder: Path | None = None
    ) -> Awaitable[FolderDiagnostics]:
        """Diagnostics of every file under `folder` (default: the root), fresh."""
        return self.folders.folder(languages, folder)

    def server_diagnostics(self, path: Path) -> Awaitable[ServerDiagnostics]:
        """Each diagnostic server's own diagnostics of the file now, for code actions."""
        return self.diagnostics_of.by_server(path)

    def open_files(self, languages: Sequence[str], limit: int) -> list[Path]:
        """Up to `limit` files under the root the servers of `languages` have open, most
        recently used first (the files an edit of another file may break)."""
        names = set(self.languages.servers_of(languages))
        found: dict[Path, None] = {}
        for name in sorted(names):
            server = self.pool.servers.get(name)
            if server is not None:
                for doc in reversed(server.open_documents()):
                    if doc.path.is_relative_to(self.root):  # not another root's (shared)
                        found.setdefault(doc.path, None)
        return list(found)[:limit]

    # -- previews -------------------------------------------------------------------------

    def previewing(self) -> AbstractAsyncContextManager[Previewer]:
        """`async with service.previewing() as p:` the servers to the caller alone (no
        other request runs meanwhile); `async with p.show(path, data):` shows them `data`
        as the content of `path`, given back the disk's after the block (`lsp.preview`)."""
        return hold_for_preview(self)

    async def show(self, path: Path) -> None:
        """Send the preview text of `path` to every server of its language (started)."""
        language = self.languages.require(path)
        data = self.previews[path]
        for name in self.languages.servers(language):
            with contextlib.suppress(ToolError):  # its diagnostics say it failed
                server = await self.pool.started(name, language)
                server.sync(path, self.languages.language_id(language), data)

    def restore(self, path: Path) -> None:
        """Give every server that has `path` open its text again: the buffer an editor
        holds, else the disk's (or close it when the file is not there)."""
        self.editors.restore(path)

    # -- editors' buffers (lsp/overlay.py, lsp/editors.py) --------------------------------

    async def editor_open(self, holder: EditorHolder, path: Path, text: str, version: int) -> None:
        """An editor opened `path`: its servers see `text` as its content, not the disk's."""
        await self.editors.put(holder, path, text, version)

    async def editor_change(
        self, holder: EditorHolder, path: Path, text: str, version: int
    ) -> None:
        """The buffer's whole new text (the editor dialect applied its changes)."""
        await self.editors.put(holder, path, text, version)

    async def editor_save(self, holder: EditorHolder, path: Path) -> None:
        """The editor wrote the buffer to disk (it stays the text the servers see)."""
        self.editors.saved(path)

    async def editor_close(self, holder: EditorHolder, path: Path) -> None:
        """The editor closed `path`: the servers see another holder's buffer, else the disk."""
        await self.editors.close(holder, path)

    async def editor_release(self, holder: EditorHolder) -> None:
        """The editor disconnected: every buffer it held is closed."""
        await self.editors.release(holder)

    def editor_buffer(self, path: Path) -> Buffer | None:
        """The buffer an editor holds for `path` (the one the servers see), or None."""
        return self.overlay.buffer(canonical(path))

    def editor_buffers(self) -> dict[Path, list[Buffer]]:
        """Every holder's buffer of each file editors hold (a copy): what a write checks."""
        return self.overlay.every()

    async def editor_settled(self, expected: Mapping[Path, bytes], timeout: float) -> bool:
        """Whether each file of `expected` came to be held with that text (or no more held)."""
        return await self.editors.settled(expected, timeout)

    def editor_unsaved(self, buffers: Collection[Buffer]) -> list[Buffer]:
        """Those of `buffers` whose text is not the disk's (an unsaved change)."""
        return [b for b in buffers if self.editors.unsaved(b)]

    # -- requests -------------------------------------------------------------------------

    async def route(self, language: str, method: str) -> str:
        """The name of the first server of `language` (routing order) offering `method`."""
        return (await self._route(language, method)).name

    async def _route(self, language: str, method: str) -> LanguageServer:
        """The first server of `language` (routing order) that offers `method`, started.

        A server that is missing or failed ends the search when it would offer `method`
        (as it did when it last ran, or when it never ran): its error is the answer, not
        another server's weaker one (with the later servers that are not installed either)."""
        errors: list[ToolError] = []
        names = self.languages.servers(language)
        blocked = False  # a server that would own `method` failed: no later one answers
        for name in names:
            if blocked:
                error = self.pool.unavailable(name, language)
                if error is not None:
                    errors.append(error)
                continue
            try:
                server = await self.pool.started(name, language)
            except ToolError as exc:
                errors.append(exc)
                blocked = self.pool.may_offer(name, method)
                continue
            if await server.offers(method):
                return server
        if errors:
            raise self.pool.missing(errors, names)
        raise unsupported(method, names, language)

    async def _open(self, server: LanguageServer, path: Path, language: str) -> Document:
        """`path` as `server` has it open, synced from disk (or from its preview) first."""
        unchanged = await self.events.flush()
        if not server.running:
            await server.connection()
            unchanged = False
        doc = server.document(path_to_uri(path))
        held = self.texts.held(path)
        if (
            doc is not None
            and path not in self.previews
            and (
                doc.hash == held.hash  # an editor's buffer, as sent
                if held is not None
                else doc.stat is not UNTRUSTED
                and (unchanged or stat_of(path) == doc.stat)  # the flush's stat, just taken
            )
        ):
            server.touch(doc.uri)
            return doc
        data, stat = self.texts.override(path), UNTRUSTED
        if data is None:
            data, stat = self.texts.read(path)
        if data is None:
            raise ToolError(ErrorKind.FILE_NOT_FOUND, f"{path.name!r} no longer exists.")
        return server.sync(path, self.languages.language_id(language), data, stat)

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
        language = self.languages.require(path)
        async with self.gate.shared():
            server = await self._route(language, method)
            return await self._ask(
                server, path, language, method, params, result_type, wait_ready, timeout, snapshot
            )

    async def request_held(
        self,
        path: Path,
        method: str,
        params: Callable[[DocumentContext], Any],
        *,
        result_type: Any = Any,
    ) -> Answer:
        """`request` without a readiness wait, about a file an editor holds: the fast way
        when nothing needs doing first (its server runs and routes `method` without a wait,
        has the held buffer open, no preview shows the file and no file event waits to be
        told). The disk is not looked at: the buffer is the document's text, and the other
        open documents' changes on disk reach the servers from the watcher's events.
        Anything else, or an answer worth asking again, goes the way of `request`."""
        async with self.gate.shared():
            server, doc = self._held_document(path, method)
            if server is not None and doc is not None:
                answer = await self._ask_held(server, path, doc, method, params, result_type)
                if answer is not None:
                    return answer
            return await self.request(path, method, params, result_type=result_type,
                                      wait_ready=False)  # fmt: skip

    def _held_document(
        self, path: Path, method: str
    ) -> tuple[LanguageServer | None, Document | None]:
        """The server for `method` and the held buffer of `path` as it has it open, when
        the fast way applies (see `request_held`)."""
        language = self.languages.of(path)
        if language is None or self.events.pending or path in self.previews:
            return None, None
        held = self.texts.held(path)
        server = self.pool.routed_now(self.languages.servers(language), method)
        if held is None or server is None:
            return None, None
        doc = server.document(path_to_uri(path))
        return (server, doc) if doc is not None and doc.hash == held.hash else (None, None)

    async def _ask_held(
        self,
        server: LanguageServer,
        path: Path,
        doc: Document,
        method: str,
        params: Callable[[DocumentContext], Any],
        result_type: Any,
    ) -> Answer | None:
        """`method` to `server` about `doc` as it has it open; None when the answer is to
        be asked again (the server broke, or the document changed meanwhile)."""
        started = trio.current_time()
        self._in_flight += 1
        try:
            server.touch(doc.uri)
            ctx = DocumentContext(
                server.name, path, doc.uri, doc.text, doc.version, server.encoding, doc.index
            )
            try:
                result = await server.request(method, params(ctx), result_type=result_type)
            except ToolError as exc:
                if exc.kind is ErrorKind.TIMEOUT:
                    waited = trio.current_time() - started
                    raise _waited(server.name, method, waited, 0.0) from None
                if _retried(exc):
                    return None
                raise
            if server.document(doc.uri) is not doc:
                return None
            return Answer(server.name, result, False, server.encoding, self)
        finally:
            self._in_flight -= 1
            self.last_used = trio.current_time()

    async def request_together(
        self,
        path: Path,
        asks: Sequence[Ask],
        *,
        wait_ready: bool = True,
        timeout: float | None = None,
        enough: Callable[[Any], bool] | None = None,
    ) -> list[Answer | ToolError]:
        """Requests about `path` (method, params, result type), each as `request` sends it;
        those the first one's server offers now are sent with it at once, in one write,
        after one sync and one readiness wait, and awaited together (the server answers
        them one after the other, without a round trip between), when that server is the
        first of the file's language. Each answer, or the error its request failed with, in
        order; the first one's error is raised. The others are asked at the same time,
        each routed as `request` routes it. When `enough(result)` of the first one's result
        is true, the others are not awaited (`$/cancelRequest`; a `cancelled` ToolError in
        their place)."""
        language = self.languages.require(path)
        async with self.gate.shared():
            server = await self._route(language, asks[0][0])
            leads = self.languages.servers(language)[0] == server.name
            offered = server.capabilities.supports
            apart = [i for i, (m, _, _) in enumerate(asks) if i and not (leads and offered(m))]
            if not apart:
                return await self._ask_together(
                    server, path, language, asks, wait_ready, timeout, enough=enough
                )
            answers: dict[int, Answer | ToolError] = {}

            async def alone(i: int) -> None:
                method, params, result_type = asks[i]
                try:
                    answers[i] = await self.request(
                        path, method, params, result_type=result_type, wait_ready=wait_ready,
                        timeout=timeout,
                    )  # fmt: skip
                except ToolError as exc:
                    answers[i] = exc

            together = [i for i in range(len(asks)) if i not in apart]
            failure: ToolError | None = None
            async with trio.open_nursery() as nursery:
                for i in apart:
                    nursery.start_soon(alone, i)
                try:
                    found = await self._ask_together(
                        server, path, language, [asks[i] for i in together], wait_ready, timeout,
                        enough=enough,
                    )  # fmt: skip
                except ToolError as exc:  # the first one's: the others are not needed
                    failure = exc
                    nursery.cancel_scope.cancel()
                else:
                    answers.update(zip(together, found, strict=True))
                    first = found[0]
                    if enough is not None and isinstance(first, Answer) and enough(first.result):
                        nursery.cancel_scope.cancel()
            if failure is not None:
                raise failure
            return [
                answers[i] if i in answers else _unawaited(asks[i][0]) for i in range(len(asks))
            ]

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
        also: Callable[[str], Sequence[Callable[[DocumentContext], Any]]] | None = None,
    ) -> tuple[list[Answer], list[ToolError]]:
        """`method` to every server of the file's language that offers it, concurrently.
        `also(server)`: more requests of `method` to that server, sent with the first
        after one sync; their list results are added to its own (exact repeats dropped),
        and one that fails is left out."""
        language = self.languages.require(path)
        names = self.languages.servers(language)
        answers: list[Answer | None] = [None] * len(names)
        errors: list[ToolError] = []

        async def one(i: int, name: str) -> None:
            try:
                server = await self.pool.started(name, language)
                if not await server.offers(method):
                    return
                more = also(name) if also is not None else ()
                asks = [(method, p, result_type) for p in (params, *more)]
                found = await self._ask_together(
                    server, path, language, asks, wait_ready, timeout, snapshot
                )
                first = found[0]
                if isinstance(first, ToolError):
                    raise first
                answers[i] = _joined(first, found[1:]) if more else first
            except ToolError as exc:
                errors.append(exc)

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for i, name in enumerate(names):
                nursery.start_soon(one, i, name)
        found = [a for a in answers if a is not None]
        if not found and errors:
            raise self.pool.missing(errors, names)
        if not found:
            raise unsupported(method, names, language)
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
        """A request naming no document, to each server of `languages` that offers it and
        runs; for a language none of whose running servers offers it, its servers are
        started in routing order until one does (ruff does not start for basedpyright's
        workspace symbols)."""
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
        names = self.languages.servers_of(languages)
        tried: set[str] = set()
        offering: set[str] = set()
        await self.events.flush()

        async def ask(name: str) -> None:
            tried.add(name)
            try:
                server = await self.pool.started(name)
                if not await server.offers(method):
                    return
                offering.add(name)
                ready = await self._loaded(server, languages)
                result = await server.request(
                    method, params, timeout=timeout, result_type=result_type
                )
                answers.append(Answer(server.name, result, not ready, server.encoding, self))
            except ToolError as exc:
                errors.append(exc)

        for name in names:  # the servers already running are asked
            server = self.pool.servers.get(name)
            if server is not None and server.live:
                await ask(name)
        for language in languages:  # else the first server of the language that offers it
            mine = self.languages.servers(language)
            for name in mine:
                if offering.intersection(mine):
                    break
                if name not in tried:
                    await ask(name)
        if not answers and errors:
            raise self.pool.missing(errors, names)
        if not answers and names:
            raise unsupported(method, names, ", ".join(languages))
        return answers

    async def _loaded(self, server: LanguageServer, languages: Sequence[str]) -> bool:
        """Whether a server whose readiness policy is strict became ready for a request
        naming no file within `lsp.ready_timeout` (one that loads nothing until a file is
        open gets the first project file of its languages opened), and answers it for the
        whole project."""
        readiness = server.readiness
        if not readiness.strict:
            return True
        if readiness.needs_document and not server.open_documents():
            files, _ = await trio.to_thread.run_sync(self.project_files)
            mine = [lang for lang in languages if server.name in self.languages.servers(lang)]
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
        """One request (see `_ask_together`): its answer, or its error raised."""
        [answer] = await self._ask_together(
            server, path, language, [(method, params, result_type)], wait_ready, timeout, snapshot
        )
        if isinstance(answer, ToolError):
            raise answer
        return answer

    async def _ask_together(
        self,
        server: LanguageServer,
        path: Path,
        language: str,
        asks: Sequence[Ask],
        wait_ready: bool,
        timeout: float | None,
        snapshot: bool = False,
        *,
        enough: Callable[[Any], bool] | None = None,
    ) -> list[Answer | ToolError]:
        """Requests about one document to one server, sent at once after one sync and one
        readiness wait: each answer, or the error its request failed with (the others than
        the first not awaited once `enough` of its result). The first one's error is
        raised; all are asked again, once, when one failed in a way worth it (`_retried`)
        or when the document changed while the server answered."""
        started = trio.current_time()
        self._in_flight += 1
        try:
            for attempt in (1, 2):
                doc = await self._open(server, path, language)
                partial = False
                ready = 0.0  # seconds waited for the server to be ready
                if wait_ready and not server.ready_for(doc):
                    asked = trio.current_time()
                    partial = not await self._wait_ready(server, doc, asked)
                    ready = trio.current_time() - asked
                ctx = DocumentContext(
                    server.name, path, doc.uri, doc.text, doc.version, server.encoding, doc.index
                )
                calls = [(method, params(ctx), result_type) for method, params, result_type in asks]
                versions = self.snapshot(server.name) if snapshot else None
                results = await server.requests(calls, timeout=timeout, enough=enough)
                if attempt == 1 and any(map(_retried, results)):
                    continue
                failed = results[0]
                if isinstance(failed, ToolError):
                    if failed.kind is ErrorKind.TIMEOUT:
                        waited = trio.current_time() - started
                        raise _waited(server.name, asks[0][0], waited, ready) from None
                    raise failed
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
                return [
                    result
                    if isinstance(result, ToolError)
                    else Answer(server.name, result, partial, server.encoding, self, versions)
                    for result in results
                ]
            raise AssertionError("unreachable")
        finally:
            self._in_flight -= 1
            self.last_used = trio.current_time()

    async def _wait_ready(self, server: LanguageServer, doc: Document, now: float) -> bool:
        """Whether `server` analysed `doc` and ended its work-done progress in time (from
        `now`). The wait may pull the document's diagnostics: when that pull fails (the
        server's error, not the caller's request), readiness is the end of its progress alone."""
        timeout = self.config.lsp.ready_timeout
        deadline = now + timeout
        try:
            return await server.wait_ready(doc, timeout)
        except ToolError:
            return await server.wait_idle(max(0.0, deadline - trio.current_time()))

    # -- follow-ups, snapshots and commands ---------------------------------------------

    def snapshot(self, server: str) -> Versions:
        """The documents `server` has open now, by canonical path: (version, content hash),
        the content an edit it computes from now on is computed from."""
        actor = self.pool.servers.get(server)
        return {} if actor is None else _versions(actor.open_documents())

    def supports(self, server: str, method: str) -> bool:
        """Whether server `server` offers `method` now (no wait for a registration)."""
        actor = self.pool.servers.get(server)
        return actor is not None and actor.capabilities.supports(method)

    async def offers(self, server: str, method: str) -> bool:
        """Whether server `server` (started on need) offers `method`."""
        return await (await self.pool.started(server)).offers(method)

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
            actor = await self.pool.started(server)
            await self.events.flush()
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
        actor = await self.pool.started(server)
        await self.events.flush()
        arguments = command.get("arguments") or []

        async def handle(edit: Any, documents: tuple[Document, ...]) -> None:
            await on_edit(edit, actor.encoding, _versions(documents))

        return await actor.execute_command(command["command"], arguments, handle)

    async def will_rename(self, old: Path, new: Path) -> tuple[list[Answer], list[str]]:
        """`workspace/willRenameFiles` about moving `old` (opened first, so its project is
        loaded) to `new`, to each server of its language whose filters take it: their
        answers (with `versions`), and the language's servers that do not take it."""
        language = self.languages.require(old)
        names = self.languages.servers(language)
        method, params = "workspace/willRenameFiles", rename_params(old, new)
        answers: list[Answer] = []
        errors: list[ToolError] = []
        async with self.gate.shared():
            for name in names:
                try:
                    server = await self.pool.started(name, language)
                    await server.offers(method)  # a moment for a dynamic registration
                    if not takes(server.capabilities.file_filters(method), old):
                        continue
                    doc = await self._open(server, old, language)
                    ready = server.ready_for(doc) or await self._wait_ready(
                        server, doc, trio.current_time()
                    )
                    versions = self.snapshot(name)
                    result = await server.request(method, params)
                    answers.append(Answer(name, result, not ready, server.encoding, self, versions))
                except ToolError as exc:
                    errors.append(exc)
        if errors and len(errors) == len(names):
            raise self.pool.missing(errors, names)
        asked = {a.server for a in answers}
        return answers, [name for name in names if name not in asked]

    async def did_rename(self, old: Path, new: Path) -> None:
        """`workspace/didRenameFiles` to the running servers whose filters take `new`, once
        they heard of the files' change on disk."""
        method = "workspace/didRenameFiles"
        await self.events.flush()
        for server in self.pool.live():
            if takes(server.capabilities.file_filters(method), new):
                server.notify(method, rename_params(old, new))

    async def capabilities_of(self, languages: Sequence[str]) -> list[Offer]:
        """The servers of `languages` (routing order, each once), started together: what
        each offers, for an editor's `initialize`. A server that cannot start is left out."""
        names = self.languages.servers_of(languages)
        offers: list[Offer | None] = [None] * len(names)

        async def one(i: int, name: str) -> None:
            with contextlib.suppress(ToolError):
                server = await self.pool.started(name)
                data = server.capabilities.static_data()
                offers[i] = Offer(name, data, server.encoding, server.capabilities.supports)

        async with self.gate.shared(), trio.open_nursery() as nursery:
            for i, name in enumerate(names):
                nursery.start_soon(one, i, name)
        return [offer for offer in offers if offer is not None]

    def indexing(self, server: str) -> bool:
        """Whether server `server` is not ready (an index still loading, as its readiness
        policy tells: work-done progress for most)."""
        actor = self.pool.servers.get(server)
        return actor is not None and not actor.ready


def _versions(documents: Sequence[Document]) -> Versions:
    """Documents by canonical path: (version, content hash)."""
    return {Path(real_path(d.path)): (d.version, d.hash) for d in documents}


def _unawaited(method: str) -> ToolError:
    """The place of a request not awaited (its answer not needed)."""
    return ToolError(ErrorKind.CANCELLED, f"{method} was not awaited: an answer was enough.")


def _retried(result: Any) -> bool:
    """Whether a request failed in a way worth asking again once: the server answered that
    the content changed or that it cancelled the request itself, or it broke and restarts."""
    return isinstance(result, ToolError) and (
        result.details.get("code") in RETRIED_CODES or bool(result.details.get("restarting"))
    )


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
