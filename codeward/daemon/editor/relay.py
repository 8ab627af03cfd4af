"""The editor's common requests relayed with no task of their own: the lean way of a
request about a buffer its server has open, whose params and result pass as raw JSON.

The connection's reading task sends such a request to the server at once
(`LanguageService.relay_held`: `request_held`'s fast way, the same conditions) and the
server connection's reading task, on the answer, writes the reply to the editor with the
editor's id (`Relays._ended`): no task started, none woken. It applies to a document
request answered by one server (no merge), whose position encoding and URI spelling are
the editor's, with no progress token and no markup to convert, once the editor's document
changes before it were handed over. Anything else, and an answer the waiting way would
ask again (the document changed meanwhile, a restart), goes the waiting way (`fallback`).
A relayed request counts as one of the connection's requests in flight (its backpressure);
`$/cancelRequest`, the editor leaving or the daemon stopping give it up (`$/cancelRequest`
to the server, `RequestCancelled` to the editor); a server that stops answers it with the
error the waiting way answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import trio

from codeward.daemon.editor.forward import DOCUMENT, MERGED, Forwarder, uri_of
from codeward.daemon.editor.markup import Markup
from codeward.daemon.editor.workspace import Root
from codeward.protocol import lsp
from codeward.protocol.errors import ErrorCode, ToolError
from codeward.protocol.framing import Parts
from codeward.protocol.messages import Id

if TYPE_CHECKING:
    from codeward.daemon.lsp.service import Relay
    from codeward.daemon.session import Asking

log = logging.getLogger(__name__)

RELAYED = DOCUMENT - MERGED  # a document's request one server answers


class Link(Protocol):
    """The connection's side the relayed requests use (the dialect's `Link`, in part)."""

    def send_body(self, body: bytes | Parts) -> None: ...

    def request_started(self) -> None: ...

    def request_finished(self) -> None: ...


@dataclass(slots=True)
class _Call:
    event: lsp.Call
    root: Root
    relay: Relay
    asking: Asking


class Relays:
    """One editor's relayed requests (see the module docstring)."""

    def __init__(
        self,
        conn: Link,
        machine: lsp.LspMachine,
        error: Callable[[Id, ToolError], bytes],
        cancelled: Callable[[Id], bytes],
        fallback: Callable[[lsp.Call], None],
    ) -> None:
        self.conn = conn
        self.machine = machine
        self.error = error  # a ToolError's answer to the editor
        self.cancelled = cancelled  # RequestCancelled's
        self.fallback = fallback  # the waiting way, for a request the lean one cannot do
        self.calls: dict[Id, _Call] = {}
        self.forwarder: Forwarder | None = None
        self.markup = Markup({})
        self._idle: trio.Event | None = None

    def start(self, event: lsp.Call) -> bool:
        """Relay `event` when the lean way applies (counted as a request in flight); False,
        nothing sent, when it goes the waiting way."""
        forwarder, method, params = self.forwarder, event.method, event.params
        if forwarder is None or method not in RELAYED or method in self.markup.methods:
            return False
        if b'Token"' in bytes(params):  # (a progress token: the waiting way rewrites it)
            return False
        workspace = forwarder.workspace
        try:
            uri = uri_of(params)
            located = workspace.locate(uri)
        except Exception:  # (bad params, a URI of no path: the waiting way answers them)
            return False
        if located is None or located[0].session.stopped.is_set():
            return False
        root, path = located
        session = root.session

        def ended(relay: Relay) -> None:
            self._ended(event.id, relay)

        relay = session.lsp.relay_held(path, method, params, uri, forwarder.encoding, ended)
        if relay is None:
            return False
        asking = session.asking(workspace.client_id)
        asking.add(relay.server)  # its messages meanwhile are this editor's
        self.calls[event.id] = _Call(event, root, relay, asking)
        self.conn.request_started()
        return True

    def cancel(self, msg_id: Id) -> bool:
        """Give up the relayed request `msg_id` (`$/cancelRequest` to its server; the editor
        gets RequestCancelled); False when none is in flight under that id."""
        call = self.calls.pop(msg_id, None)
        if call is None:
            return False
        call.relay.cancel()
        self._finish(call, self.cancelled(msg_id))
        return True

    def cancel_all(self) -> None:
        for msg_id in list(self.calls):
            self.cancel(msg_id)

    async def drained(self) -> None:
        """Until no relayed request is in flight."""
        while self.calls:
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()

    def _ended(self, msg_id: Id, relay: Relay) -> None:
        """The server answered, failed or timed out (in the task that saw it): the reply
        to the editor now, or the waiting way when that would ask again."""
        call = self.calls.pop(msg_id, None)
        if call is None:
            return
        body: bytes | Parts = b""
        try:
            outcome = relay.outcome
            if isinstance(outcome, ToolError):
                body = self.error(msg_id, outcome)
            elif outcome is None:
                self.fallback(call.event)
            else:
                assert self.forwarder is not None
                result = self.forwarder.relayed(call.event.method, call.root, relay, outcome)
                body = self.machine.answer(msg_id, result)
        except Exception:  # (a bug: answered, the server's reader goes on)
            log.exception("internal error in a relayed %s", call.event.method)
            body = self.machine.error_message(
                msg_id, ErrorCode.INTERNAL_ERROR, "Internal error; the daemon log has details."
            )
        self._finish(call, body)

    def _finish(self, call: _Call, body: bytes | Parts) -> None:
        if body:
            self.conn.send_body(body)  # (first: nothing below is on the reply's way)
        call.asking.__exit__(None, None, None)
        self.conn.request_finished()
        if not self.calls and self._idle is not None:
            self._idle.set()
            self._idle = None
