"""A scripted language server for fault injection: `python fake_lsp_server.py MODE [LOG]`.

It speaks just enough LSP for the daemon (initialize, sync, hover, push diagnostics) and
misbehaves as MODE says. Every message it receives is appended to LOG (one JSON a line).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOG = sys.argv[2] if len(sys.argv) > 2 else ""
stdin = sys.stdin.buffer
stdout = sys.stdout.buffer
_next_id = 1000


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdout.flush()


def receive() -> dict[str, Any] | None:
    length = None
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    assert length is not None
    message = json.loads(stdin.read(length))
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(message) + "\n")
    return message


def publish(uri: str, version: int, text: str) -> None:
    diagnostics = [
        {
            "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 3}},
            "severity": 1,
            "message": f"bad line {n + 1}",
            "code": "E1",
            "source": "fake",
        }
        for n, line in enumerate(text.split("\n"))
        if line.startswith("bad")
    ]
    send(
        {
            "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "version": version, "diagnostics": diagnostics},
        }
    )


def ask(method: str, params: Any) -> None:
    global _next_id
    _next_id += 1
    send({"id": _next_id, "method": method, "params": params})


def main() -> None:
    if MODE == "crash-at-start":
        sys.stderr.write("fake: cannot start\n")
        sys.exit(3)
    if MODE == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # A child in the same process group: it must not outlive the server.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    texts: dict[str, str] = {}
    while True:
        message = receive()
        if message is None:
            return
        method = message.get("method")
        msg_id = message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            if MODE == "no-initialize":
                continue
            send(
                {
                    "id": msg_id,
                    "result": {
                        "capabilities": {
                            "textDocumentSync": 1,
                            "hoverProvider": True,
                            "positionEncoding": "utf-16",
                        }
                    },
                }
            )
        elif method == "initialized":
            if MODE == "server-requests":
                ask("custom/unknownThing", {})
                ask("workspace/configuration", {"items": [{"section": "fake.answer"}, {}]})
                ask("workspace/applyEdit", {"edit": {"changes": {}}})
                ask("window/workDoneProgress/create", {"token": "t1"})
                send(
                    {
                        "method": "$/progress",
                        "params": {"token": "t1", "value": {"kind": "begin", "title": "Indexing"}},
                    }
                )
                send({"method": "$/progress", "params": {"token": "t1", "value": {"kind": "end"}}})
                ask(
                    "client/registerCapability",
                    {"registrations": [{"id": "r1", "method": "textDocument/formatting"}]},
                )
                ask("window/showMessageRequest", {"type": 1, "message": "hello"})
                ask("workspace/workspaceFolders", None)
        elif method == "textDocument/didOpen":
            doc = params["textDocument"]
            texts[doc["uri"]] = doc["text"]
            publish(doc["uri"], doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            doc = params["textDocument"]
            texts[doc["uri"]] = params["contentChanges"][-1]["text"]
            publish(doc["uri"], doc["version"], texts[doc["uri"]])
        elif method == "textDocument/hover":
            if MODE == "crash-on-hover":
                os._exit(1)
            if MODE == "garbage":
                stdout.write(b"this is not LSP at all\r\n\r\n")
                stdout.flush()
                continue
            if MODE == "huge":
                send({"id": msg_id, "result": {"contents": "x" * (2 * 1024 * 1024)}})
                continue
            if MODE == "close-stdout":
                stdout.close()
                os.close(1)
                time.sleep(600)
            if MODE == "silent-hover":
                continue
            position = params["position"]
            send(
                {
                    "id": msg_id,
                    "result": {
                        "contents": {"kind": "plaintext", "value": "hover"},
                        "range": {"start": position, "end": position},
                    },
                }
            )
        elif method == "shutdown":
            send({"id": msg_id, "result": None})
        elif method == "exit":
            if MODE == "ignore-term":
                time.sleep(600)  # ignores exit too: only SIGKILL stops it
            return
        elif msg_id is not None and method is not None:
            send({"id": msg_id, "error": {"code": -32601, "message": f"unknown {method}"}})


if __name__ == "__main__":
    main()
