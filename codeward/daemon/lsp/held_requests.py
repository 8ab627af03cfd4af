"""The editor dialect's requests about a file an editor holds: `request_held` (a request
with no readiness wait, sent at once when its server has the held buffer open) and
`relay_held` (that fast way with no task waiting for the answer, `lsp.relay`).

`HeldRequests` is the part of `service.LanguageService` (one of its bases) that sends
those: its methods are the service's own, the state they share declared below."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from msgspec import Raw

from codeward.daemon.lsp.answers import Answer, DocumentContext
from codeward.daemon.lsp.relay import Relay
from codeward.daemon.lsp.request_failures import timed_out, worth_retrying
from codeward.daemon.lsp.uris import path_to_uri
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.documents import Document
    from codeward.daemon.lsp.file_events import FileEvents
    from codeward.daemon.lsp.pool import ServerPool
    from codeward.daemon.lsp.positions import Encoding
    from codeward.daemon.lsp.preview import Gate
    from codeward.daemon.lsp.routing import Languages
    from codeward.daemon.lsp.server import LanguageServer
    from codeward.daemon.lsp.texts import Texts
    from codeward.daemon.lsp.types import PositionLike


class HeldRequests:
    """The requests about held buffers of a service (a base of `LanguageService`, which
    gives the state below)."""

    if TYPE_CHECKING:
        gate: Gate
        languages: Languages
        events: FileEvents
        previews: dict[Path, bytes]  # files shown a text that is not on disk
        texts: Texts
        pool: ServerPool
        last_used: float
        _in_flight: int

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
        ) -> Answer: ...
        def to_client(
            self, uri: str, position: PositionLike | dict[str, int], encoding: Encoding
        ) -> tuple[int, int]: ...
        async def ask(
            self, server: str, method: str, params: Any, *, result_type: Any = Any
        ) -> Answer: ...

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

    def relay_held(
        self,
        path: Path,
        method: str,
        params: Raw,
        uri: str,
        encoding: Encoding,
        done: Callable[[Relay], None],
    ) -> Relay | None:
        """`request_held`'s fast way with no task waiting for the answer (`lsp.relay`), for
        `params` about `uri` in `encoding` that pass as they are: None, and nothing sent,
        unless the fast way applies and `uri` and `encoding` are the server's."""
        server, doc = self._held_document(path, method)
        if server is None or doc is None or doc.uri != uri or server.encoding != encoding:
            return None
        relay = Relay(self.gate, server, doc, encoding, done)
        return relay if relay.send(method, params) else None

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
                    raise timed_out(server.name, method, waited, 0.0) from None
                if worth_retrying(exc):
                    return None
                raise
            if server.document(doc.uri) is not doc:
                return None
            return Answer(server.name, result, False, server.encoding, self)
        finally:
            self._in_flight -= 1
            self.last_used = trio.current_time()
