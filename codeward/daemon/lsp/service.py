"""The language servers of one session behind one interface: the only part of
`codeward.daemon.lsp` the rest of the daemon uses.

    service = LanguageService(root, config, on_progress)
    await nursery.start(service.run)     # owns the server actors; cancel stops them all

It is built of parts that each do one job and call only down: `routing` (a path's
language, the order of its servers, the routing errors), `pool` (the server actors),
`file_events` (changes on disk told to the servers), `texts` (files' text and positions
for clients), `project` (the walk of the project's files) and `diagnostics` (fresh
diagnostics in client terms). It asks each server's actor (`server.LanguageServer`)
through the actor's methods only. Its interface besides the requests about a file below
is its bases', each documented in its module: `session_hooks.SessionHooks` (`run` and the
session's hooks), `project_listing.ProjectListing` (languages, the project's files),
`served_texts.ServedTexts` (the text the servers see: the disk, editors' buffers,
previews; positions), `service_diagnostics.ServiceDiagnostics`,
`request_routing.RequestRouting` (routing, what each server offers),
`workspace_requests.WorkspaceRequests` (requests naming no file) and
`held_requests.HeldRequests` (the editor dialect's requests about the buffers it holds:
`request_held`, `relay_held`); its values are
`answers`' (`Answer`, `DocumentContext`, `Offer`).

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
- `service.relay_held(path, method, params, uri, encoding, done) -> Relay | None`: that fast
  way with no task waiting: sent now, its answer to `done` (`lsp.relay`); None when it
  does not apply.
- `await service.request_together(path, [(method, params, result_type), ...]) ->
  list[Answer | ToolError]`: several requests about one file, those the first one's server
  offers sent to it at once, in one write, after one sync (hover and the definition that
  names its module); the first one's error is raised, the others' come back in place.
- `await service.request_all(path, method, params, ...) -> (list[Answer], list[ToolError])`:
  the same, to every server of the language that offers `method` (to merge, e.g. code
  actions); the errors of servers that failed come back beside the answers.
- `await answer.follow(method, params)` / `await service.ask(server, method, params)`: a
  follow-up to the server that gave an answer (`callHierarchy/incomingCalls`,
  `codeAction/resolve`).
- `await service.will_rename(old, new) -> (list[Answer], list[str])`:
  `workspace/willRenameFiles` to each server of the file's language whose file operation
  filters take it (the file opened first), and the servers that do not;
  `await service.did_rename(old, new)`: `workspace/didRenameFiles` after the move.
- `await service.execute_command(server, command, on_edit)`: `workspace/executeCommand`;
  the `workspace/applyEdit` requests the server sends meanwhile go to `on_edit(edit,
  encoding, versions)`. `service.snapshot(server)`: its open documents' versions now.

A server that was not installed is looked for again (its default command resolved anew)
on the next need, at most once every `LOOKUP_INTERVAL` seconds of the trio clock.

Errors are `ToolError`s: `unsupported_file_type` (no language for the file),
`lsp_unavailable` (not installed, naming what to install, every missing server of the
language in routing order), `unsupported_by_server` (every server runs and none offers
the method: never an empty answer), `lsp_error` (crash, failure, refusal), `timeout`,
`file_not_found`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.config import Config
from codeward.daemon.lsp.answers import (
    Answer,
    Ask,
    DocumentContext,
    Offer,
    OnEdit,
    Versions,
    joined,
    versions_of,
)
from codeward.daemon.lsp.budget import ServerBudget
from codeward.daemon.lsp.connection import CONTENT_MODIFIED
from codeward.daemon.lsp.defaults import effective_languages
from codeward.daemon.lsp.diagnostics import (
    Diagnostics,
    FileDiagnostics,
    FolderDiagnostics,
    Found,
    ServerDiagnostics,
)
from codeward.daemon.lsp.editors import Editors
from codeward.daemon.lsp.file_events import FileEvents
from codeward.daemon.lsp.folder_diagnostics import Folders
from codeward.daemon.lsp.held_requests import HeldRequests
from codeward.daemon.lsp.pool import ServerPool
from codeward.daemon.lsp.preview import Previewer
from codeward.daemon.lsp.project_listing import Listing, ProjectListing
from codeward.daemon.lsp.questions import Question
from codeward.daemon.lsp.relay import Relay
from codeward.daemon.lsp.request_failures import timed_out, unawaited, worth_retrying
from codeward.daemon.lsp.request_routing import RequestRouting
from codeward.daemon.lsp.routing import Languages, unsupported
from codeward.daemon.lsp.served_texts import ServedTexts
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.service_diagnostics import ServiceDiagnostics
from codeward.daemon.lsp.session_hooks import SessionHooks
from codeward.daemon.lsp.shared import Repository, SharedServers, repository_of
from codeward.daemon.lsp.texts import Texts
from codeward.daemon.lsp.workspace_requests import WorkspaceRequests
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
    "Question",
    "Relay",
    "ServerDiagnostics",
    "SharedServers",
    "Versions",
    "repository_of",
]


class LanguageService(
    HeldRequests,
    SessionHooks,
    ProjectListing,
    ServedTexts,
    ServiceDiagnostics,
    RequestRouting,
    WorkspaceRequests,
):
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

    # -- requests -------------------------------------------------------------------------

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
            return [answers[i] if i in answers else unawaited(asks[i][0]) for i in range(len(asks))]

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
                answers[i] = joined(first, found[1:]) if more else first
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
        raised; all are asked again, once, when one failed in a way worth it (`worth_retrying`)
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
                    partial = not await server.wait_ready(doc, self.config.lsp.ready_timeout)
                    ready = trio.current_time() - asked
                ctx = DocumentContext(
                    server.name, path, doc.uri, doc.text, doc.version, server.encoding, doc.index
                )
                calls = [(method, params(ctx), result_type) for method, params, result_type in asks]
                versions = self.snapshot(server.name) if snapshot else None
                results = await server.requests(calls, timeout=timeout, enough=enough)
                if attempt == 1 and any(map(worth_retrying, results)):
                    continue
                failed = results[0]
                if isinstance(failed, ToolError):
                    if failed.kind is ErrorKind.TIMEOUT:
                        waited = trio.current_time() - started
                        raise timed_out(server.name, asks[0][0], waited, ready) from None
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

    # -- follow-ups, snapshots and commands ---------------------------------------------

    def snapshot(self, server: str) -> Versions:
        """The documents `server` has open now, by canonical path: (version, content hash),
        the content an edit it computes from now on is computed from."""
        actor = self.pool.servers.get(server)
        return {} if actor is None else versions_of(actor.open_documents())

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
