"""In-memory previews: a file's servers are shown a text that is not on disk, and given the
disk's content back afterwards, without any other request seeing the preview.

Why no other client can see a preview's text: every request of the language layer (the
manager's request, request_all, workspace_request, diagnostics, workspace_diagnostics,
server_diagnostics and flush) runs inside `Gate.shared()`, and a preview inside
`Gate.exclusive()`. The preview text reaches the document store (and so the servers) only
inside `Previewer.show`, which runs only while the exclusive hold is taken; `show` puts the
disk content back in the store, and tells the servers, in a shielded `finally` before the
hold ends. A server that restarts meanwhile reopens its documents from the store, so it ends
with the disk content too. While the hold is taken no shared hold is granted (and a waiting
preview lets no new one in before it), so no request runs on the servers while they hold the
preview text. Calls made by the holder itself (its task and the tasks it starts) pass
through: the hold is marked in a context variable.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import trio

_HELD: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "codeward_gate_held", default=frozenset()
)


class Gate:
    """Requests share the servers of a session; a preview has them to itself."""

    def __init__(self) -> None:
        self.readers = 0
        self.writer = False
        self.writers_waiting = 0
        self._changed = trio.Event()

    def held(self) -> bool:
        """Whether the calling task (or the task that started it) holds this gate."""
        return id(self) in _HELD.get()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def shared(self) -> _Shared:
        """`async with gate.shared():` a request's hold (it waits while a preview has the
        servers; held already by the calling task, it passes through)."""
        return _Shared(self)

    def try_share(self) -> bool:
        """A shared hold taken now, without waiting (a relayed request's, `lsp.relay`): False
        while a preview has the servers or waits for them. `unshare` ends it."""
        if self.writer or self.writers_waiting:
            return False
        self.readers += 1
        return True

    def unshare(self) -> None:
        self.readers -= 1
        if self.writers_waiting:  # only a waiting preview waits for readers to leave
            self._notify()

    async def preview_waits(self) -> None:
        """Return once a preview waits for the servers: a long request (a folder's
        batches) that holds the gate only for a part of its work stops that part then,
        and takes up the rest after the preview."""
        while not self.writers_waiting:
            await self._changed.wait()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        if self.held():
            raise RuntimeError("a preview cannot start inside a request of the same session")
        self.writers_waiting += 1
        self._notify()  # a long request that gives way to previews (`preview_waits`) stops
        try:
            while self.writer or self.readers:
                await self._changed.wait()
        finally:
            self.writers_waiting -= 1
            self._notify()  # readers held back by a cancelled waiter may go on
        self.writer = True
        token = _HELD.set(_HELD.get() | {id(self)})
        try:
            yield
        finally:
            _HELD.reset(token)
            self.writer = False
            self._notify()


class _Shared:
    """A shared hold of a `Gate` (a class, not a generator: it is on every request's path)."""

    __slots__ = ("_gate", "_token")

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self._token: contextvars.Token[frozenset[int]] | None = None

    async def __aenter__(self) -> None:
        gate = self._gate
        held = _HELD.get()
        if id(gate) in held:
            return
        while gate.writer or gate.writers_waiting:
            await gate._changed.wait()
        gate.readers += 1
        self._token = _HELD.set(held | {id(gate)})

    async def __aexit__(self, *exc_info: object) -> None:
        token = self._token
        if token is None:
            return
        self._token = None
        _HELD.reset(token)
        self._gate.unshare()


class PreviewHost(Protocol):
    """What a preview needs of the service (the service is one: no import back up)."""

    @property
    def gate(self) -> Gate: ...

    @property
    def previews(self) -> dict[Path, bytes]: ...

    async def show(self, path: Path) -> None: ...

    def restore(self, path: Path) -> None: ...

    async def flush(self) -> None: ...


class Previewer:
    """What a preview holder may do: show its servers a text for a file (`show`), and ask
    the manager as usual meanwhile (`diagnostics` of that file then answers for the text)."""

    def __init__(self, manager: PreviewHost) -> None:
        self.manager = manager

    @asynccontextmanager
    async def show(self, path: Path, data: bytes) -> AsyncIterator[None]:
        """Within the block the file's servers have `data` as its content (sent before any
        request of the block); after it, the disk's content again."""
        manager = self.manager
        if not manager.gate.held() or not manager.gate.writer:
            raise RuntimeError("Previewer.show runs only inside manager.previewing()")
        manager.previews[path] = data
        try:
            await manager.show(path)
            yield
        finally:
            with trio.CancelScope(shield=True):
                del manager.previews[path]
                manager.restore(path)


@asynccontextmanager
async def hold_for_preview(manager: PreviewHost) -> AsyncIterator[Previewer]:
    """The session's servers to the caller alone, until the block ends (see the module doc)."""
    async with manager.gate.exclusive():
        await manager.flush()  # the disk's changes so far, before any preview text
        yield Previewer(manager)
