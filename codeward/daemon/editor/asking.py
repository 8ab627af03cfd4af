"""The dialect's own requests to the editor (`workspace/applyEdit`, registrations, progress
tokens) and their replies, and who the editor is (`holder_name`)."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
from msgspec import Struct

from codeward.protocol import lsp
from codeward.protocol.messages import Id

APPLY_TIMEOUT = 60.0  # seconds the editor gets to answer a request (workspace/applyEdit)


class _ApplyResult(Struct, forbid_unknown_fields=False):
    applied: bool = False


class Asking:
    """The requests to one editor awaiting their replies."""

    def __init__(self, machine: lsp.LspMachine, send: Any, closed: Any) -> None:
        self.machine = machine
        self.send = send  # a body to the editor
        self.closed = closed  # whether the connection is closed
        self._asked: dict[Id, trio.MemorySendChannel[lsp.Reply]] = {}
        self._stopped = False  # the editor sends nothing more: no reply will come

    def replied(self, reply: lsp.Reply) -> None:
        """The editor's reply to one of these requests."""
        waiting = self._asked.pop(reply.id, None)
        if waiting is not None:
            waiting.send_nowait(reply)  # (a buffer of one: never blocks)

    def close(self) -> None:
        """The editor stopped sending: the requests awaiting its replies get None."""
        self._stopped = True
        for waiting in self._asked.values():
            waiting.close()

    async def ask(self, method: str, params: Any) -> lsp.Reply | None:
        """A request to the editor; its reply, or None (no answer in time, or gone)."""
        if self._stopped or self.closed():
            return None
        msg_id, body = self.machine.request_message(method, params)
        send, receive = trio.open_memory_channel[lsp.Reply](1)
        self._asked[msg_id] = send
        try:
            self.send(body)
            with trio.move_on_after(APPLY_TIMEOUT):
                try:
                    return await receive.receive()
                except trio.EndOfChannel:  # (`close`)
                    return None
            return None
        finally:
            self._asked.pop(msg_id, None)
            self.machine.forget(msg_id)

    async def apply_edit(self, edit: dict[str, Any], label: str) -> bool:
        """`workspace/applyEdit` to the editor: whether it applied the edit."""
        reply = await self.ask("workspace/applyEdit", {"label": label, "edit": edit})
        if reply is None or reply.result is None:
            return False
        try:
            return msgspec.json.decode(reply.result, type=_ApplyResult).applied
        except msgspec.DecodeError:
            return False


def holder_name(params: lsp.InitializeParams) -> str:
    """`Neovim 0.7.2 (pid 1234)`: who holds the buffers, as agents are told."""
    info = params.client_info
    name = " ".join(p for p in (info.name, info.version) if p) if info else ""
    pid = f"pid {params.process_id}" if params.process_id is not None else ""
    if name and pid:
        return f"{name} ({pid})"
    return name or (f"editor ({pid})" if pid else "editor")
