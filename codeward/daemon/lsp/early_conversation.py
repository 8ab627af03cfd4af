"""The wire of a process started early, until a session takes it: once the server answers
the `initialize` it was sent, `initialized` and its settings go out as the session would
send them, and its `workspace/configuration` requests are answered from those settings, so
a server that waits for its settings before it loads the workspace (basedpyright) loads it
while the daemon still loads its modules. Every other frame (the answer to `initialize`
too) is kept as the server wrote it, for the session's connection to read first (`stop`).

Frames are split here (no `LspConnection`: what is not answered must reach the session's
connection untouched, in order); trio and msgspec only, no lsprotocol."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import trio

from codeward.daemon.lsp.early_initialize import INITIALIZE_ID, setting
from codeward.daemon.reads import receive_some
from codeward.protocol.framing import Framing, encode_frame

log = logging.getLogger(__name__)

HEADER_LIMIT = 64 * 1024  # a header block past this is not LSP: the session's reader says so


class _NotLsp(Exception):
    """The server wrote a header block that is not LSP's."""


class Conversation:
    """`run` converses until `stop`; `initialized` says whether `initialized` went out."""

    def __init__(
        self,
        name: str,
        stdin: trio.abc.SendStream,
        stdout: trio.abc.ReceiveStream,
        settings: Any,
    ) -> None:
        self.name = name
        self._stdin = stdin
        self._stdout = stdout
        self.settings = settings  # its config's settings (sent, and the answers' source)
        self.initialized = False  # `initialized` (and the settings) sent
        # the server answered initialize (and `initialized` went out), or the conversation
        # ended without that (its stdout ended, it wrote what is not LSP, `stop`)
        self.answered = trio.Event()
        self.configured = trio.Event()  # a workspace/configuration request answered
        self.failed = False  # it ended on an unexpected error: what was sent is unknown
        self._held = bytearray()  # frames for the session, as the server wrote them
        self._unread = bytearray()  # bytes not split into frames yet
        self._scope = trio.CancelScope()
        self.done = trio.Event()  # the conversation ended (`stop`, or on its own)

    async def run(self) -> None:
        """Read and answer until `stop` (or the server's stdout ends, or it writes what is
        not LSP: the session's connection reads that and says so)."""
        try:
            with self._scope:
                while True:
                    chunk = await receive_some(self._stdout)
                    if not chunk:
                        return
                    self._unread += chunk
                    while (frame := self._next_frame()) is not None:
                        if not await self._handle(*frame):
                            return
        except (_NotLsp, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return
        except Exception:  # a bug here must not end the daemon: the process is not used
            log.exception("%s: the conversation before its session failed", self.name)
            self.failed = True
        finally:
            self.answered.set()
            self.done.set()

    async def stop(self) -> bytes:
        """Stop conversing: what the server wrote that its session reads first (the frames
        kept, then the bytes not split yet)."""
        self._scope.cancel()
        await self.done.wait()
        return bytes(self._held + self._unread)

    def _next_frame(self) -> tuple[bytes, bytes] | None:
        """The next whole frame and its body, taken off the unread bytes; None when none is
        whole yet. Raises `_NotLsp` on a header block this does not read."""
        unread = self._unread
        end = unread.find(b"\r\n\r\n")
        if end < 0 and len(unread) <= HEADER_LIMIT:
            return None
        if end < 0 or end > HEADER_LIMIT:
            raise _NotLsp
        length = None
        for line in bytes(unread[:end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length" and value.strip().isdigit():
                length = int(value.strip())
        if length is None:
            raise _NotLsp
        if len(unread) < end + 4 + length:
            return None
        whole = bytes(unread[: end + 4 + length])
        del unread[: end + 4 + length]
        return whole, whole[end + 4 :]

    async def _handle(self, whole: bytes, body: bytes) -> bool:
        """Act on one frame (kept for the session unless answered here); False: stop."""
        try:
            message = msgspec.json.decode(body)
        except msgspec.DecodeError:
            message = None
        if not isinstance(message, dict):
            self._held += whole
            return False
        method, msg_id = message.get("method"), message.get("id")
        if method is None and msg_id == INITIALIZE_ID and not self.initialized:
            self._held += whole
            if "error" in message or "result" not in message:
                return False  # refused: the session says so
            await self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            if self.settings:
                change = {"settings": self.settings}
                await self._send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                                  "params": change})  # fmt: skip
            self.initialized = True  # (no checkpoint outside the shielded sends before)
            self.answered.set()
            log.debug("%s: initialized before its session took it", self.name)
            return True
        if method == "workspace/configuration" and msg_id is not None and self.initialized:
            params = message.get("params")
            items = params.get("items") if isinstance(params, dict) else None
            if isinstance(items, list):
                sections = [i.get("section") if isinstance(i, dict) else None for i in items]
                answer = [setting(self.settings, s) for s in sections]
                await self._send({"jsonrpc": "2.0", "id": msg_id, "result": answer})
                self.configured.set()
                return True
        self._held += whole
        return True

    async def _send(self, message: dict[str, Any]) -> None:
        """Write one frame whole (shielded: `stop` never cuts one), in order."""
        frame = encode_frame(Framing.CONTENT_LENGTH, msgspec.json.encode(message))
        with trio.CancelScope(shield=True):
            await self._stdin.send_all(frame)
