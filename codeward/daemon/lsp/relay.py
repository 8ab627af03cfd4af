"""A request relayed to a server with no task waiting for its answer: an editor's request
about a buffer the server has open, whose params pass as the editor sent them.

`LanguageService.relay_held` sends it at once when `request_held`'s fast way applies (the
same conditions); its holds (the session's gate, shared, so no preview starts meanwhile)
last until it ends. The answer, failure or timeout comes to `done(relay)` in the task that
read it (the server connection's reader, its timer, or whoever closed it), synchronously:
`relay.outcome` is then the raw result, the `ToolError` the waiting way raises, or None
when that way would ask again (the document changed meanwhile, a retried error code, a
restart): the caller asks again the usual way. `cancel` gives it up (`$/cancelRequest`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
from msgspec import Raw

from codeward.daemon.lsp.connection import LspConnection, Relayed
from codeward.daemon.lsp.documents import Document
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.request_failures import request_failure, timed_out, worth_retrying
from codeward.daemon.lsp.server import LanguageServer
from codeward.protocol.errors import ToolError


class Relay:
    """One relayed request (see the module docstring)."""

    __slots__ = ("_conn", "_doc", "_done", "_gate", "_held", "_relayed", "_server",
                 "encoding", "outcome", "server")  # fmt: skip

    def __init__(
        self,
        gate: Gate,
        server: LanguageServer,
        doc: Document,
        encoding: Encoding,
        done: Callable[[Relay], None],
    ) -> None:
        self._gate = gate
        self._server = server
        self._doc = doc
        self._done = done
        self._held = False
        self._conn: LspConnection | None = None
        self._relayed: Relayed | None = None
        self.server = server.name  # who answers, in which position encoding
        self.encoding: Encoding = encoding  # (the server's)
        self.outcome: Raw | ToolError | None = None

    def send(self, method: str, params: Any) -> bool:
        """Send it now, the gate held until it ends; False, nothing held, unless both the
        gate (no preview has or waits for the servers) and the server take it (a server
        whose pipe closed as it was written fails it at once: False too)."""
        if not self._gate.try_share():
            return False
        self._held = True
        sent = self._server.relay(method, params, self._ended)
        if sent is None or sent[1].finished:  # (refused, or its write closed the pipe)
            self._release()
            return False
        self._conn, self._relayed = sent
        self._server.touch(self._doc.uri)
        return True

    def cancel(self) -> None:
        """The caller gave up on it: `$/cancelRequest`; `done` is not called."""
        if self._conn is not None and self._relayed is not None:
            self._conn.give_up(self._relayed)
        self._release()

    def _ended(self, relayed: Relayed) -> None:
        if self._conn is None:
            return  # (failed as it was sent: `send` says so, the caller goes the waiting way)
        self.outcome = self._outcome(relayed)
        try:
            self._done(self)  # (the reply on its way first: no other task runs meanwhile)
        finally:
            self._release()

    def _outcome(self, relayed: Relayed) -> Raw | ToolError | None:
        server, method = self._server, relayed.method
        if relayed.timed_out:
            assert self._conn is not None
            self._conn.give_up(relayed)
            waited = trio.current_time() - relayed.sent
            return timed_out(server.name, method, waited, 0.0)
        if relayed.error is not None:
            failure = request_failure(server, method, relayed.error, server.timeout_for(method))
            return None if worth_retrying(failure) else failure
        if server.document(self._doc.uri) is not self._doc:
            return None  # (changed meanwhile: asked again on the new text)
        return relayed.result

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._gate.unshare()
