"""Requests naming no file, as the service sends them: `workspace_request(method, params, *,
languages, ...) -> list[Answer]` (`workspace/symbol`) to each running server of `languages`
offering it (a language with none: its first server that offers it, started); a server
whose readiness policy is strict is waited for first (one that loads nothing until a file
is open gets the first project file of its languages opened), else its answer is
`partial`.

`WorkspaceRequests` is the part of `service.LanguageService` (one of its bases) that sends
them: the step of their line between the tool and the server's actor, its methods the
service's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.lsp.answers import Answer, OnEdit, Versions, versions_of
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.file_operations import rename_params, takes
from codeward.daemon.lsp.routing import unsupported
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.config import Config
    from codeward.daemon.lsp.file_events import FileEvents
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.positions import Encoding
    from codeward.daemon.lsp.preview import Gate
    from codeward.daemon.lsp.project_listing import Listing
    from codeward.daemon.lsp.routing import Languages
    from codeward.daemon.lsp.server import LanguageServer
    from codeward.daemon.lsp.types import PositionLike


class WorkspaceRequests:
    """A service's requests naming no file (a base of `LanguageService`, which gives the
    state below)."""

    if TYPE_CHECKING:
        config: Config
        gate: Gate
        pool: ServerPool
        languages: Languages
        events: FileEvents

        def project_files(self, limit: int = ..., folder: Path | None = None) -> Listing: ...
        def to_client(
            self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
        ) -> tuple[int, int]: ...
        async def _open(self, server: LanguageServer, path: Path, language: str) -> Document: ...
        async def ask(
            self, server: str, method: str, params: Any, *, result_type: Any = Any
        ) -> Answer: ...
        def snapshot(self, server: str) -> Versions: ...

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
            await on_edit(edit, actor.encoding, versions_of(documents))

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
                    ready = server.ready_for(doc) or await server.wait_ready(
                        doc, self.config.lsp.ready_timeout
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
