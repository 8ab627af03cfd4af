"""A small LSP client for the tests: `codeward lsp` (or any stdio language server) as a child,
Content-Length frames over its pipes, a reader thread so every wait is bounded."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

READ_TIMEOUT = 60.0


def frame(message: dict[str, Any] | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class LspProcess:
    """One editor: requests and notifications out, every message in kept in order."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []  # what came and was not asked for yet
        self._ids = iter(range(1, 100_000))
        self.applied_edits: list[dict[str, Any]] = []  # workspace/applyEdit requests
        self.asked: list[str] = []  # the methods of the server's requests
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            while True:
                length = None
                while (line := stream.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if not line or length is None:
                    break
                self.inbox.put(json.loads(stream.read(length)))
        finally:
            self.inbox.put(None)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(frame({"jsonrpc": "2.0", **message}))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def start(self, method: str, params: Any = None) -> int:
        msg_id = next(self._ids)
        extra = {} if params is None else {"params": params}
        self.send({"id": msg_id, "method": method, **extra})
        return msg_id

    def request(self, method: str, params: Any = None, timeout: float = READ_TIMEOUT) -> Any:
        """The whole reply (`result` or `error`) to a new request."""
        return self.reply(self.start(method, params), timeout)

    def result(self, method: str, params: Any = None) -> Any:
        reply = self.request(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    def reply(self, msg_id: int | None, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        found = self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout)
        return found

    def wait_for(
        self, match: Callable[[dict[str, Any]], bool], timeout: float = READ_TIMEOUT
    ) -> dict[str, Any]:
        """The first message (kept or new) that `match`es; server requests are answered."""
        for i, message in enumerate(self.seen):
            if match(message):
                return self.seen.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"nothing matched within {timeout} s; seen: {self.seen[-5:]}"
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            assert message is not None, f"the server exited: {self.stderr()}"
            self._answer(message)
            if match(message):
                return message
            self.seen.append(message)

    def _answer(self, message: dict[str, Any]) -> None:
        """Answer the server's own requests as an editor would."""
        if "method" not in message or "id" not in message:
            return
        method = message["method"]
        self.asked.append(method)
        if method == "workspace/applyEdit":
            self.applied_edits.append(message["params"])
            self.send({"id": message["id"], "result": {"applied": True}})
        elif method in ("client/registerCapability", "window/workDoneProgress/create"):
            self.send({"id": message["id"], "result": None})
        else:
            self.send({"id": message["id"], "result": None})

    def initialize(self, root: Path, **capabilities: Any) -> dict[str, Any]:
        result = self.result("initialize", {
            "processId": None, "rootUri": root.as_uri(),
            "clientInfo": {"name": "test-editor", "version": "1"},
            "capabilities": capabilities,
        })  # fmt: skip
        self.notify("initialized", {})
        return result

    def open(self, path: Path, language: str = "python", version: int = 1) -> str:
        uri = path.as_uri()
        document = {"uri": uri, "languageId": language, "version": version}
        document["text"] = path.read_text()
        self.notify("textDocument/didOpen", {"textDocument": document})
        return uri

    def diagnostics(
        self, uri: str, match: Callable[[list[dict[str, Any]]], bool] = lambda d: True
    ) -> dict[str, Any]:
        """The next publishDiagnostics of `uri` whose items `match`."""
        return self.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and match(m["params"]["diagnostics"])
            )
        )["params"]

    def stderr(self) -> str:
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            return ""
        return self.proc.stderr.read().decode() if self.proc.stderr else ""

    def shutdown(self) -> int:
        """shutdown, exit: the exit code."""
        reply = self.request("shutdown")
        assert "error" not in reply and reply["result"] is None, reply
        self.notify("exit")
        return self.close()

    def close(self, timeout: float = 30.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
