"""A scripted language server for fault injection: `python fake_lsp_server.py MODE [LOG]`.

It speaks just enough LSP for the daemon (initialize, sync, hover, push diagnostics) and
misbehaves as MODE says. Every message it receives is appended to LOG (one JSON a line).

The `workspace-*` modes stream workspace diagnostics as basedpyright does: partial results
on a request they never answer (a new pull answers the last one with no items). The first
pull takes two rounds: it creates a progress token, reports the first file and every other
one as clean (not checked yet), and once the token is acknowledged begins the progress,
reports the rest and ends it. Later pulls report every file in one round, without progress.
Files named `skip*` are never reported; `workspace-stale-token` also creates a progress
token at start that it never begins; `workspace-busy` begins the first pull's progress and
then neither reports the rest nor ends it, nor answers a file's pull (still analysing);
`workspace-hold` (`... workspace-hold LOG FIFO`) writes the start of its first pull in one
piece, then reads nothing more until a byte comes through FIFO. `env` behaves as `ok` once
it has logged how it was started:
`{"started": {"env": ..., "argv": ..., "cwd": ...}}`.

Readiness modes load for a moment after the first didOpen (a timer thread), answering
hovers with null, pulls with empty reports and workspace symbols with nothing until then:
`quiescent` (rust-analyzer: `experimental/serverStatus`, a progress gap before it loads;
`quiescent-never` never becomes quiescent), `indexing` (intelephense: publishes `[]` with no
version at didOpen, then an indexing progress around the real diagnostics), `project`
(tsserver: workspace symbols fail with "No Project" while no file is open, diagnostics
published once the project loaded), `service-ready` (jdtls: `language/status`).

`off-spec` sends shapes off the LSP spec: a capability without a required field, a
registration with no list of registrations, one whose options are not what its method takes,
hovers, symbols, code actions, formatting and rename edits, call hierarchy items (below
the first line) and calls, pushed and pulled diagnostics with fields missing or of the
wrong type; `by-spec` answers symbols, code actions, formatting and the call hierarchy as
the spec says.

`symbols-later` answers its first two workspace-symbol requests with nothing, then with
the symbols (a workspace that loads while its files' analysis has not ended).

`diagnosing` (gopls with `verboseWorkDoneProgress`) diagnoses each didOpen and didChange
inside a work-done progress titled "diagnosing changed files", all of it written before it
reads the next message, and publishes a file again only when its diagnostics changed.

Every mode runs the commands of `command` (edits asked for around the answer, a crash, a
command never answered). Fault modes for supervision: `grow` takes 64 MiB more memory at
each hover before it answers (`grow-silent` never answers); `silent-hover` never answers
hovers and ignores `$/cancelRequest`; `spin-hover` spends 2 s of CPU on each and never
answers; `unready-silent` does that and never publishes
diagnostics either. `silent-definition` offers definitions and never answers them; its
hover on the first line names a module (`(module) pkg.sub`). In every mode that publishes,
a text that begins with "mute" is never published (its analysis never ends).

`slow-pull` offers pull diagnostics and never pushes; it checks one pull at a time, in the
order they came, `SLOW_PULL` seconds each (a type checker with one analysis thread: a pull
waits for those before it). A pull cancelled before its turn is answered at once as
cancelled, unchecked; the one under way runs to its end (as basedpyright's do). Each
answer is logged as `{"answered": ID, "checked": BOOL}`. `slow-pull-busy` also begins a
work-done progress at `initialized` that it never ends (an analysis that seems endless).

`refuse-initialize` answers initialize with an error; `talk-first` writes a
`window/logMessage` and a `window/showMessageRequest` (id "talk-first") before its answer,
and at `initialized` asks `workspace/configuration` (sections `fake.answer` and none), then
registers `textDocument/definition`.

`follow-ups` registers completion, inlay hints and call hierarchies, answers the first request
of each (unregistering it just before: the next goes to the language's next server) with
items carrying FOLLOW_UP_DATA, and answers their follow-ups on the item it receives.

`chatty` speaks to the people: a `window/showMessage` at each didOpen ("opened NAME"); at each
hover a `window/showMessage`, a `window/logMessage` and a `window/showMessageRequest` ("hover
in NAME", actions "OK" and "Later", the second with properties of its own), then a markdown
hover (a code block, a link, emphasis); the answer to its question comes back as a
`window/showMessage` ("chose " and the result's JSON as it came).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOG = sys.argv[2] if len(sys.argv) > 2 else ""
HOLD = sys.argv[3] if len(sys.argv) > 3 else ""
stdin = sys.stdin.buffer
stdout = sys.stdout.buffer
_next_id = 1000
SLOW_PULL = 1.5  # seconds `slow-pull` takes to answer each pull
SLOW_PULLS = ("slow-pull", "slow-pull-busy")
_batch: list[bytes] | None = None  # frames kept to be written in one piece


_writing = threading.Lock()  # the loading timer writes too


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
    if _batch is not None:
        _batch.append(frame)
        return
    with _writing:
        stdout.write(frame)
        stdout.flush()


def write_frame(body: bytes) -> None:
    with _writing:
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdout.flush()


def write_compact(message: dict[str, Any]) -> None:
    """`message` as vscode-jsonrpc writes one (no spaces, keys in this order)."""
    write_frame(json.dumps(message, separators=(",", ":")).encode())


def write_batch() -> None:
    global _batch
    frames, _batch = _batch or [], None
    os.write(stdout.fileno(), b"".join(frames))  # one write: it arrives in one piece


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


def log(entry: dict[str, Any]) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


class SlowPulls:
    """`slow-pull`'s analysis thread: the pulls in the order they came, `SLOW_PULL` seconds
    each; one cancelled before its turn is answered at once, unchecked."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.queue: list[tuple[Any, str]] = []  # (id, uri)
        self.cancelled: set[Any] = set()
        self.ready = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def pull(self, msg_id: Any, uri: str) -> None:
        with self.ready:
            self.queue.append((msg_id, uri))
            self.ready.notify()

    def cancel(self, msg_id: Any) -> None:
        with self.ready:
            self.cancelled.add(msg_id)

    def _run(self) -> None:
        while True:
            with self.ready:
                self.ready.wait_for(lambda: bool(self.queue))
                msg_id, uri = self.queue.pop(0)
                cancelled = msg_id in self.cancelled
            if cancelled:
                log({"answered": msg_id, "checked": False})
                send({"id": msg_id, "error": {"code": -32800, "message": "Request cancelled"}})
                continue
            time.sleep(SLOW_PULL)  # checking the file: not interrupted
            items = diagnostics_of(self.texts.get(uri, ""))
            log({"answered": msg_id, "checked": True})
            send({"id": msg_id, "result": {"kind": "full", "items": items}})


def diagnostics_of(text: str) -> list[dict[str, Any]]:
    return [
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


def publish(uri: str, version: int, text: str) -> None:
    if text.startswith("mute"):  # a document whose analysis never ends
        return
    diagnostics = diagnostics_of(text)
    if MODE == "off-spec":
        diagnostics = [{**d, "severity": "high"} for d in diagnostics]  # a number 1..4
    send(
        {
            "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "version": version, "diagnostics": diagnostics},
        }
    )


_shown: dict[str, list[dict[str, Any]]] = {}  # `diagnosing`: what each file last showed


def diagnose(uri: str, version: int, text: str) -> None:
    """`diagnosing`: one change's diagnosis, inside its progress."""
    token = f"diagnosis-{_next_id}"
    ask("window/workDoneProgress/create", {"token": token})
    progress(token, "begin", "diagnosing changed files")
    found = diagnostics_of(text)
    if _shown.get(uri) != found:
        _shown[uri] = found
        publish(uri, version, text)
    progress(token, "end")


def ask(method: str, params: Any) -> int:
    global _next_id
    _next_id += 1
    send({"id": _next_id, "method": method, "params": params})
    return _next_id


class Workspace:
    """The streamed workspace pulls of the `workspace-*` modes."""

    def __init__(self) -> None:
        self.root = ""
        self.pull: Any = None  # the id of the pull in flight
        self.pulls = 0
        self.token = ""
        self.rest: list[str] = []  # files of the second round

    def files(self) -> list[str]:
        found = []
        for dirpath, _, filenames in os.walk(self.root):
            found += [os.path.join(dirpath, f) for f in filenames if f.endswith(".fake")]
        return sorted(f for f in found if not os.path.basename(f).startswith("skip"))

    def report(self, token: str, paths: list[str], checked: bool) -> None:
        for path in paths:
            with open(path) as f:
                items = diagnostics_of(f.read()) if checked else []
            uri = "file://" + path
            item = {"uri": uri, "kind": "full", "version": None, "items": items}
            send({"method": "$/progress", "params": {"token": token, "value": {"items": [item]}}})

    def start(self, msg_id: Any, params: dict[str, Any]) -> None:
        if self.pull is not None:
            send({"id": self.pull, "result": {"items": []}})
        self.pull, self.pulls = msg_id, self.pulls + 1
        self.token = params["partialResultToken"]
        files = self.files()
        if self.pulls > 1:
            self.report(self.token, files, True)
            return
        global _batch
        _batch = []
        ask("window/workDoneProgress/create", {"token": "pass"})
        self.report(self.token, files[:1], True)
        self.report(self.token, files[1:], False)
        self.rest = files[1:]
        write_batch()
        if HOLD:
            with open(HOLD, "rb") as fifo:
                fifo.read(1)

    def acknowledged(self) -> None:
        """The progress token of the first pull was acknowledged: its second round."""
        progress = "$/progress"
        send({"method": progress, "params": {"token": "pass", "value": {"kind": "begin"}}})
        if MODE == "workspace-busy":  # an analysis that goes on: no more reports, no end
            return
        self.report(self.token, self.rest, True)
        send({"method": progress, "params": {"token": "pass", "value": {"kind": "end"}}})


LOADING_MODES = ("quiescent", "quiescent-never", "indexing", "project", "service-ready")
LOAD_DELAY = 0.3  # seconds from the first didOpen until it has loaded


def progress(token: str, kind: str, title: str = "") -> None:
    value = {"kind": kind, "title": title} if title else {"kind": kind}
    send({"method": "$/progress", "params": {"token": token, "value": value}})


class Loading:
    """A server that loads after its first didOpen and answers wrongly until then."""

    def __init__(self) -> None:
        self.loaded = False
        self.started = False
        self.texts: dict[str, tuple[int, str]] = {}

    def initialized(self) -> None:
        if MODE.startswith("quiescent"):
            send({"method": "experimental/serverStatus", "params": {"quiescent": False}})
            progress("fetch", "begin", "Fetching")
            progress("fetch", "end")  # a gap: nothing active, still not loaded
        if MODE == "service-ready":
            send({"method": "language/status", "params": {"type": "Started", "message": "Ready"}})

    def opened(self, uri: str, version: int, text: str) -> None:
        self.texts[uri] = (version, text)
        if MODE == "indexing":  # a placeholder, before its indexing begins
            placeholder = {"uri": uri, "diagnostics": []}
            send({"method": "textDocument/publishDiagnostics", "params": placeholder})
        if not self.started:
            self.started = True
            timer = threading.Timer(LOAD_DELAY, self.load)
            timer.daemon = True
            timer.start()
        else:
            self.changed(uri, version, text)

    def changed(self, uri: str, version: int, text: str) -> None:
        self.texts[uri] = (version, text)
        if self.loaded and MODE in ("indexing", "project", "service-ready"):
            publish(uri, version, text)

    def load(self) -> None:
        if MODE == "quiescent-never":
            return
        title = "Indexing" if MODE != "project" else "Initializing JS/TS language features"
        progress("load", "begin", title)
        self.loaded = True
        if MODE in ("indexing", "project", "service-ready"):
            for uri, (version, text) in list(self.texts.items()):
                publish(uri, version, text)
        progress("load", "end")
        if MODE == "quiescent":
            send({"method": "experimental/serverStatus", "params": {"quiescent": True}})
        if MODE == "service-ready":
            send({"method": "language/status", "params": {"type": "ServiceReady"}})


# `follow-ups`: the requests it registers, answers once (unregistering each first) with
# items whose `data` is FOLLOW_UP_DATA, and their follow-ups, answered on the item received
FOLLOW_UP_DATA = {"z": [1, 2.5, "é😀", None, True], "a": {"codewardServer": "lookalike"}}
FOLLOW_UP_REGISTRATIONS = [
    {"id": "c", "method": "textDocument/completion", "registerOptions": {"resolveProvider": True}},
    {"id": "h", "method": "textDocument/inlayHint", "registerOptions": {"resolveProvider": True}},
    {"id": "k", "method": "textDocument/prepareCallHierarchy"},
]
FOLLOW_UPS = {r["method"]: r["id"] for r in FOLLOW_UP_REGISTRATIONS} | {
    "completionItem/resolve": "",
    "inlayHint/resolve": "",
    "callHierarchy/incomingCalls": "",
}


def follow_up(method: str, msg_id: Any, params: dict[str, Any]) -> None:
    """`follow-ups`' answers (see FOLLOW_UP_DATA)."""
    start = {"line": 0, "character": 0}
    where = {"start": start, "end": {"line": 0, "character": 4}}
    if FOLLOW_UPS[method]:  # asked once: the next goes to the language's next server
        gone = {"id": FOLLOW_UPS[method], "method": method}
        ask("client/unregisterCapability", {"unregisterations": [gone]})
    result: Any
    if method == "textDocument/completion":
        result = {"isIncomplete": False, "items": [
            {"label": "fake_item", "data": FOLLOW_UP_DATA}, {"label": "fake_bare"}
        ]}  # fmt: skip
    elif method == "textDocument/inlayHint":
        result = [{"position": start, "label": "fake hint", "data": FOLLOW_UP_DATA}]
    elif method == "textDocument/prepareCallHierarchy":
        uri = params["textDocument"]["uri"]
        item = {"name": "fake_fn", "kind": 12, "uri": uri, "range": where}
        result = [{**item, "selectionRange": where, "data": FOLLOW_UP_DATA}]
    elif method == "callHierarchy/incomingCalls":  # its caller carries the data received
        caller = {**params["item"], "name": "fake_caller"}
        result = [{"from": caller, "fromRanges": [where]}]
    else:  # the resolves: the item received, resolved
        result = {**params, "detail": "resolved by fake", "tooltip": "resolved by fake"}
    send({"id": msg_id, "result": result})


def command(msg_id: Any, params: dict[str, Any], texts: dict[str, str]) -> None:
    """workspace/executeCommand: `edit` asks for `arguments[0]` as an edit, then answers;
    `answer-then-edit` answers first; `edit-then-crash` asks, then exits before answering;
    `hang` never answers (nor heeds `$/cancelRequest`)."""
    name = params.get("command")
    edit = (params.get("arguments") or [None])[0]
    if name == "hang":
        return
    if name == "answer-then-edit":
        send({"id": msg_id, "result": None})
    if name in ("edit", "answer-then-edit", "edit-then-crash"):
        ask("workspace/applyEdit", {"label": name, "edit": edit})
    if name == "edit-then-crash":
        os._exit(7)
    if name != "answer-then-edit":
        send({"id": msg_id, "result": {"texts": len(texts)}})


def main() -> None:
    if MODE == "env" and LOG:  # otherwise as "ok": how it was started goes to LOG first
        with open(LOG, "a") as f:
            started = {"env": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd()}
            f.write(json.dumps({"started": started}) + "\n")
    if MODE == "crash-at-start":
        sys.stderr.write("fake: cannot start: /etc/fake/settings.toml is missing\n")
        sys.exit(3)
    if MODE == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # A child in the same process group: it must not outlive the server.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    texts: dict[str, str] = {}
    hoard: list[bytearray] = []  # what the `grow` modes hold on to
    workspace = Workspace()
    loading = Loading() if MODE in LOADING_MODES else None
    empty_symbols = 2  # `symbols-later`: workspace symbols answered empty this many times
    slow = SlowPulls(texts) if MODE in SLOW_PULLS else None
    questions: set[int] = set()  # `chatty`: its showMessageRequests awaiting their answer
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
            if MODE == "refuse-initialize":
                send({"id": msg_id, "error": {"code": -32603, "message": "fake: no project"}})
                continue
            if MODE == "talk-first":  # it speaks before its answer, as the spec allows
                send({"method": "window/logMessage", "params": {"type": 3, "message": "starting"}})
                send({"id": "talk-first", "method": "window/showMessageRequest",
                      "params": {"type": 3, "message": "starting"}})  # fmt: skip
            capabilities: dict[str, Any] = {
                "textDocumentSync": 1,
                "hoverProvider": True,
                "positionEncoding": "utf-16",
                "executeCommandProvider": {"commands": ["edit", "answer-then-edit"]},
            }
            if MODE == "empty-rename":  # renames answered with an edit that changes nothing
                capabilities["renameProvider"] = True
            if MODE == "silent-definition":  # offers definitions, never answers them
                capabilities["definitionProvider"] = True
            if loading is not None:
                capabilities["workspaceSymbolProvider"] = True
                workspace.root = params["rootPath"]
                if MODE.startswith("quiescent"):
                    capabilities["diagnosticProvider"] = {
                        "interFileDependencies": False,
                        "workspaceDiagnostics": False,
                    }
            if MODE == "off-spec":  # capabilities and answers off the LSP spec
                capabilities["semanticTokensProvider"] = {"full": True}  # no legend
                capabilities["diagnosticProvider"] = {
                    "interFileDependencies": False,
                    "workspaceDiagnostics": False,
                }
            if MODE in ("off-spec", "by-spec"):
                capabilities["documentSymbolProvider"] = True
                capabilities["workspaceSymbolProvider"] = True
                capabilities["codeActionProvider"] = True
                capabilities["renameProvider"] = True
                capabilities["documentFormattingProvider"] = True
                capabilities["callHierarchyProvider"] = True
                workspace.root = params["rootPath"]
            if MODE in ("busy-symbols", "symbols-later"):
                capabilities["workspaceSymbolProvider"] = True
                workspace.root = params["rootPath"]
            if MODE in ("failing-pull", *SLOW_PULLS):  # offers pull diagnostics, never pushes
                capabilities["diagnosticProvider"] = {
                    "interFileDependencies": False,
                    "workspaceDiagnostics": False,
                }
            if MODE.startswith("workspace-"):
                workspace.root = params["rootPath"]
                capabilities["diagnosticProvider"] = {
                    "interFileDependencies": True,
                    "workspaceDiagnostics": True,
                }
            send({"id": msg_id, "result": {"capabilities": capabilities}})
        elif MODE == "follow-ups" and method in FOLLOW_UPS:
            follow_up(method, msg_id, params)
        elif method is None and msg_id in questions:  # `chatty`: says what was chosen
            questions.discard(msg_id)
            chose = json.dumps(message.get("result"), separators=(",", ":"))
            send(
                {"method": "window/showMessage", "params": {"type": 3, "message": f"chose {chose}"}}
            )
        elif method is None and msg_id is not None:  # an answer to one of our requests
            if msg_id == _next_id and workspace.rest:
                workspace.acknowledged()
                workspace.rest = []
        elif method == "workspace/diagnostic":
            workspace.start(msg_id, params)
        elif method == "initialized":
            if MODE == "follow-ups":
                ask("client/registerCapability", {"registrations": FOLLOW_UP_REGISTRATIONS})
            if loading is not None:
                loading.initialized()
            if MODE in ("busy-symbols", "slow-pull-busy"):
                ask("window/workDoneProgress/create", {"token": "index"})
                begin = {"kind": "begin", "title": "Indexing"}
                send({"method": "$/progress", "params": {"token": "index", "value": begin}})
            if MODE == "workspace-stale-token":
                ask("window/workDoneProgress/create", {"token": "stale"})
            if MODE == "talk-first":  # asks for its settings, registers definitions
                ask("workspace/configuration", {"items": [{"section": "fake.answer"}, {}]})
                registration = {"id": "def", "method": "textDocument/definition"}
                ask("client/registerCapability", {"registrations": [registration]})
            if MODE == "off-spec":
                ask("client/registerCapability", {"registrations": "formatting"})
                watchers = {"watchers": "**/*.fake"}  # not a list
                registrations = [
                    {
                        "id": "w",
                        "method": "workspace/didChangeWatchedFiles",
                        "registerOptions": watchers,
                    },
                    {"id": "f", "method": "textDocument/formatting"},
                ]
                ask("client/registerCapability", {"registrations": registrations})
                ask("workspace/configuration", {"items": {"section": "fake"}})  # not a list
                send({"method": "$/progress", "params": {"value": {"kind": "begin"}}})  # no token
                send({"method": "window/logMessage", "params": {"type": "loud", "message": "m"}})
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
                ask("window/showDocument", {"uri": "file:///elsewhere"})
                ask("window/showMessageRequest", {"type": 1})  # no message: off the spec
        elif method == "textDocument/didOpen":
            doc = params["textDocument"]
            texts[doc["uri"]] = doc["text"]
            if loading is not None:
                loading.opened(doc["uri"], doc["version"], doc["text"])
            elif MODE == "diagnosing":
                diagnose(doc["uri"], doc["version"], doc["text"])
            elif MODE not in ("unready-silent", "failing-pull", *SLOW_PULLS):
                publish(doc["uri"], doc["version"], doc["text"])
            if MODE == "chatty":
                name = doc["uri"].rsplit("/", 1)[-1]
                send({"method": "window/showMessage",
                      "params": {"type": 3, "message": f"opened {name}"}})  # fmt: skip
        elif method == "textDocument/didChange":
            doc = params["textDocument"]
            texts[doc["uri"]] = params["contentChanges"][-1]["text"]
            if loading is not None:
                loading.changed(doc["uri"], doc["version"], texts[doc["uri"]])
            elif MODE == "diagnosing":
                diagnose(doc["uri"], doc["version"], texts[doc["uri"]])
            elif MODE not in ("unready-silent", "failing-pull", *SLOW_PULLS):
                publish(doc["uri"], doc["version"], texts[doc["uri"]])
        elif method == "textDocument/diagnostic" and MODE == "off-spec":
            uri = params["textDocument"]["uri"]
            items = [{"message": "no range"}, *diagnostics_of(texts[uri])]  # the first is odd
            send({"id": msg_id, "result": {"kind": "full", "items": items}})
        elif method == "textDocument/diagnostic" and MODE == "workspace-busy":
            pass  # queued behind its analysis, which never ends: never answered
        elif method == "textDocument/diagnostic" and slow is not None:
            slow.pull(msg_id, params["textDocument"]["uri"])
        elif method == "$/cancelRequest" and slow is not None:
            slow.cancel(params.get("id"))
        elif method == "textDocument/diagnostic" and MODE == "failing-pull":
            failure = {"code": -32603, "message": "analysis crashed"}
            send({"id": msg_id, "error": failure})
        elif method == "textDocument/diagnostic":  # the quiescent modes pull
            assert loading is not None
            text = texts[params["textDocument"]["uri"]] if loading.loaded else ""
            send({"id": msg_id, "result": {"kind": "full", "items": diagnostics_of(text)}})
        elif method == "workspace/symbol" and loading is not None and not loading.loaded:
            if MODE == "project" and not loading.texts:
                send({"id": msg_id, "error": {"code": -32603, "message": "No Project."}})
            else:
                send({"id": msg_id, "result": []})
        elif method == "workspace/symbol" and MODE == "symbols-later" and empty_symbols:
            empty_symbols -= 1
            send({"id": msg_id, "result": []})
        elif method == "workspace/symbol":
            where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
            uri = f"file://{workspace.root}/a.fake"
            kind = "function" if MODE == "off-spec" else 12  # a SymbolKind is a number
            found = {"name": "good", "kind": kind, "location": {"uri": uri, "range": where}}
            send({"id": msg_id, "result": [found]})
        elif method == "textDocument/documentSymbol" and MODE in ("off-spec", "by-spec"):
            where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
            found = {"name": "good", "kind": 12, "range": where, "selectionRange": where}
            if MODE == "off-spec":
                del found["range"]  # required
            send({"id": msg_id, "result": [found]})
        elif method == "textDocument/prepareCallHierarchy":
            where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
            item = {
                "name": "good",
                "kind": 12,
                "uri": params["textDocument"]["uri"],
                "range": where,
                "selectionRange": where,
                "data": {"asked": [params["position"], None]},  # handed back as it was
            }
            if MODE == "off-spec" and params["position"]["line"] > 0:
                del item["selectionRange"]  # required
            send({"id": msg_id, "result": [item]})
        elif method in ("callHierarchy/incomingCalls", "callHierarchy/outgoingCalls"):
            item = params["item"]
            party = "from" if method == "callHierarchy/incomingCalls" else "to"
            call = {party: item, "fromRanges": [item["range"]]}
            if MODE == "off-spec":
                call["fromRanges"] = None  # required: a list
            send({"id": msg_id, "result": [call]})
        elif method == "textDocument/rename" and MODE == "off-spec":
            send({"id": msg_id, "result": {"documentChanges": [{"kind": "move"}]}})
        elif method == "textDocument/rename":
            send({"id": msg_id, "result": {"changes": {}}})
        elif method in ("textDocument/codeAction", "textDocument/formatting") and MODE in (
            "off-spec",
            "by-spec",
        ):
            uri = params["textDocument"]["uri"]
            where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
            edit = {"range": where, "newText": "fine"}
            if MODE == "off-spec":
                del edit["range"]  # required
            if method == "textDocument/formatting":
                send({"id": msg_id, "result": [edit]})
                continue
            action = {
                "title": f"Fix ({MODE})",
                "kind": "quickfix",
                "edit": {"changes": {uri: [edit]}},
            }
            send({"id": msg_id, "result": [action]})
        elif method == "textDocument/hover":
            if MODE == "late-register":  # registers pull diagnostics only when asked this
                ask(
                    "client/registerCapability",
                    {
                        "registrations": [
                            {
                                "id": "pull",
                                "method": "textDocument/diagnostic",
                                "registerOptions": {
                                    "interFileDependencies": True,
                                    "workspaceDiagnostics": True,
                                },
                            }
                        ]
                    },
                )
            if MODE.startswith("grow"):
                hoard.append(bytearray(b"x" * (64 << 20)))  # touched: resident
                if MODE == "grow-silent":
                    continue
            if MODE == "unready-silent":
                continue
            if loading is not None and not loading.loaded:
                send({"id": msg_id, "result": None})
                continue
            if MODE == "crash-on-hover":
                os._exit(1)
            if MODE == "garbage":
                stdout.write(b"this is not LSP at all\r\n\r\n")
                stdout.flush()
                continue
            if MODE == "huge":  # written as vscode-jsonrpc writes: compact, the id first
                result = {"contents": "x" * (2 * 1024 * 1024)}
                write_compact({"jsonrpc": "2.0", "id": msg_id, "result": result})
                continue
            if MODE == "huge-broken":  # a large answer that is not JSON (a trailing comma)
                body = b'{"jsonrpc":"2.0","id":%d,"result":{"contents":"%s",}}' % (
                    msg_id,
                    b"x" * (64 * 1024),
                )
                write_frame(body)
                continue
            if MODE == "close-stdout":
                stdout.close()
                os.close(1)
                time.sleep(600)
            if MODE == "silent-hover":
                continue
            if MODE == "spin-hover":  # works on it for 2 s of CPU, never answers
                spun = time.process_time()
                while time.process_time() - spun < 2.0:
                    pass
                continue
            if MODE == "off-spec":  # a range without its end, a position without character
                odd = {"contents": "odd", "range": {"start": {"line": 0}}}
                send({"id": msg_id, "result": odd})
                continue
            position = params["position"]
            if MODE == "chatty":
                said = f"hover in {params['textDocument']['uri'].rsplit('/', 1)[-1]}"
                send({"method": "window/showMessage", "params": {"type": 2, "message": said}})
                send({"method": "window/logMessage", "params": {"type": 4, "message": said}})
                actions = [{"title": "OK"}, {"title": "Later", "id": 7, "at": {"in": [1, "2"]}}]
                question = {"type": 1, "message": said, "actions": actions}
                questions.add(ask("window/showMessageRequest", question))
                shown = "```python\ndef f(x: int) -> str\n```\n---\n"
                shown += "See [the **docs**](http://x.org) `f`."
                send({"id": msg_id, "result": {"contents": {"kind": "markdown", "value": shown}}})
                continue
            if MODE == "silent-definition" and position["line"] == 0:  # names its module
                named = {"kind": "markdown", "value": "```python\n(module) pkg.sub\n```"}
                send({"id": msg_id, "result": {"contents": named}})
                continue
            send(
                {
                    "id": msg_id,
                    "result": {
                        "contents": {"kind": "plaintext", "value": "hover"},
                        "range": {"start": position, "end": position},
                    },
                }
            )
        elif method == "textDocument/definition" and MODE == "silent-definition":
            continue
        elif method == "workspace/executeCommand":
            command(msg_id, params, texts)
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
