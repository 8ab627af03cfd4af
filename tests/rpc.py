"""A small async JSON-RPC client for tests: NDJSON or Content-Length over the daemon's socket."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from codeward.protocol.framing import Framing, encode_frame, make_decoder

ServerRequestHandler = Callable[[str, Any], Awaitable[Any]]


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")

    @property
    def kind(self) -> str | None:
        return self.data.get("kind") if isinstance(self.data, dict) else None


class RpcClient:
    def __init__(
        self,
        stream: trio.SocketStream,
        framing: Framing = Framing.NDJSON,
        on_request: ServerRequestHandler | None = None,
    ) -> None:
        self.stream = stream
        self.framing = framing
        self.on_request = on_request
        self.notifications: list[dict[str, Any]] = []
        self.notified = trio.Event()
        self._ids = itertools.count(1)
        self._waiting: dict[Any, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._decoder = make_decoder(framing)
        self._nursery: trio.Nursery | None = None
        self.closed = trio.Event()
        self._send_lock = trio.Lock()

    async def send_raw(self, data: bytes) -> None:
        async with self._send_lock:
            await self.stream.send_all(data)

    async def send(self, message: Any) -> None:
        await self.send_raw(encode_frame(self.framing, json.dumps(message).encode()))

    async def request(self, method: str, params: Any = None, *, id: Any = None) -> dict[str, Any]:
        """Send a request and return the whole response message."""
        msg_id = next(self._ids) if id is None else id
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[msg_id] = send
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        async with receive:
            return await receive.receive()

    async def call(self, method: str, params: Any = None) -> Any:
        """Send a request; its result, or RpcFailure."""
        response = await self.request(method, params)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    async def tool(self, name: str, **arguments: Any) -> Any:
        return await self.call("tools/call", {"name": name, "arguments": arguments})

    async def read_loop(self) -> None:
        try:
            while True:
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                if not data:
                    return
                for frame in self._decoder.feed(data):
                    await self._dispatch(json.loads(frame))
        finally:
            self.closed.set()
            for channel in self._waiting.values():
                channel.close()

    async def _dispatch(self, message: Any) -> None:
        if isinstance(message, list):
            for item in message:
                await self._dispatch(item)
            return
        if "method" in message and "id" in message:
            assert self._nursery is not None
            self._nursery.start_soon(self._answer, message)
        elif "method" in message:
            self.notifications.append(message)
            self.notified.set()
            self.notified = trio.Event()
        else:
            channel = self._waiting.pop(message.get("id"), None)
            if channel is not None:
                channel.send_nowait(message)
            else:
                self.notifications.append(message)  # e.g. an id-less error reply
                self.notified.set()
                self.notified = trio.Event()

    async def _answer(self, message: dict[str, Any]) -> None:
        if self.on_request is None:
            return
        result = await self.on_request(message["method"], message.get("params"))
        await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def aclose(self) -> None:
        await self.stream.aclose()


async def connect(
    nursery: trio.Nursery,
    socket: Path,
    framing: Framing = Framing.NDJSON,
    on_request: ServerRequestHandler | None = None,
) -> RpcClient:
    stream = await trio.open_unix_socket(str(socket))
    client = RpcClient(stream, framing, on_request)
    client._nursery = nursery
    nursery.start_soon(client.read_loop)
    return client
