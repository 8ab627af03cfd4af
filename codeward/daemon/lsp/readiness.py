"""When a language server's answers can be trusted: one policy per kind of server.

A server answers from the moment it is initialized, but many answer wrongly while they
load: rust-analyzer pulls an empty diagnostic report and finds no definition while it
fetches its crate graph, with gaps in its progress where nothing looks active;
intelephense publishes `[]` for a file it just opened, before its indexing starts;
tsserver has no project (and refuses `workspace/symbol`) until a file is open and loaded.
Each `Readiness` watches the notifications its kind of server sends and says whether it is
`ready`; the server actor waits for that (within `lsp.ready_timeout`) before answering,
and an answer it could not wait for is `partial`. `ServerConfig.ready_when` picks one:

- `idle` (the default): no work-done progress is active.
- `quiescent` (rust-analyzer): its last `experimental/serverStatus` said `quiescent`
  (the client declares `experimental.serverStatusNotification`).
- `project` (typescript-language-server): a file is open and the server published its
  first diagnostics (its project loaded), with no progress active.
- `indexed` (intelephense): an indexing progress has begun and ended since the start;
  what it published before its indexing began is no answer.
- `service_ready` (jdtls): its `language/status` said `ServiceReady`, no progress active.
- `open_files` (clangd without a background index): a file is open; a request naming no
  file covers only the open files (and what they include), so its answer is `partial`.

A policy is a small state machine fed by the actor: `observe(method, params)` for each
notification it `listens` to, and `ready(progress, documents)` with the actor's active
progress and its number of open documents. A new policy is made for each process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

Progress = Mapping[int | str, str]  # active work-done progress: token -> title


class Readiness:
    """`idle`: ready while no work-done progress is active."""

    kind: ClassVar[str] = "idle"
    # Notifications `observe` wants to see now (the actor decodes only those for it).
    listens: frozenset[str] = frozenset()
    # Whether the server loads nothing until a file is open: a request naming no file
    # (workspace/symbol) first opens one of the project's files.
    needs_document: ClassVar[bool] = False
    # Whether a file's diagnostics and requests naming no file wait for `ready` too (the
    # default trusts what the server reports for a file's version, and answers workspace
    # requests at once, whatever else it is doing).
    strict: ClassVar[bool] = False
    # Whether a request naming no file (workspace/symbol) covers the whole project once it
    # is ready; False: only what the server has open, so such answers are partial.
    complete: ClassVar[bool] = True

    def observe(self, method: str, params: Any) -> bool:
        """Take in a notification; whether that may change `ready`."""
        return False

    def ready(self, progress: Progress, documents: int) -> bool:
        return not progress

    def counts(self) -> bool:
        """Whether diagnostics published now describe the file (not a stand-in sent
        before the server began to load)."""
        return True


class Quiescent(Readiness):
    """rust-analyzer: `experimental/serverStatus` with `quiescent: true`."""

    kind = "quiescent"
    strict = True

    def __init__(self) -> None:
        self.listens = frozenset({"experimental/serverStatus"})
        self.quiescent = False

    def observe(self, method: str, params: Any) -> bool:
        if isinstance(params, dict):
            self.quiescent = params.get("quiescent") is True
        return True

    def ready(self, progress: Progress, documents: int) -> bool:
        # Its progress has gaps while it loads; quiescence covers them all.
        return self.quiescent


class Project(Readiness):
    """tsserver: a file open and its project loaded (the first diagnostics published)."""

    kind = "project"
    needs_document = True
    strict = True

    def __init__(self) -> None:
        self.listens = frozenset({"textDocument/publishDiagnostics"})
        self.loaded = False

    def observe(self, method: str, params: Any) -> bool:
        self.loaded = True
        self.listens = frozenset()  # nothing more to learn from its diagnostics
        return True

    def ready(self, progress: Progress, documents: int) -> bool:
        return self.loaded and documents > 0 and not progress


class Indexed(Readiness):
    """intelephense: an indexing progress begun and ended; nothing published before it
    began counts."""

    kind = "indexed"
    strict = True

    def __init__(self) -> None:
        self.listens = frozenset({"$/progress"})
        self.indexing: set[int | str] = set()
        self.began = False
        self.ended = False

    def observe(self, method: str, params: Any) -> bool:
        if not isinstance(params, dict) or not isinstance(params.get("value"), dict):
            return False
        token, value = params.get("token"), params["value"]
        if not isinstance(token, int | str):
            return False
        kind = value.get("kind")
        if kind == "begin" and "index" in str(value.get("title", "")).lower():
            self.indexing.add(token)
            self.began = True
            return True
        if kind == "end" and token in self.indexing:
            self.indexing.discard(token)
            self.ended = not self.indexing
            return True
        return False

    def ready(self, progress: Progress, documents: int) -> bool:
        return self.ended and not progress

    def counts(self) -> bool:
        return self.began


class ServiceReady(Readiness):
    """jdtls: `language/status` of type `ServiceReady`."""

    kind = "service_ready"
    strict = True

    def __init__(self) -> None:
        self.listens = frozenset({"language/status"})
        self.serving = False

    def observe(self, method: str, params: Any) -> bool:
        if isinstance(params, dict) and params.get("type") == "ServiceReady":
            self.serving = True
            self.listens = frozenset()
            return True
        return False

    def ready(self, progress: Progress, documents: int) -> bool:
        return self.serving and not progress


class OpenFiles(Readiness):
    """clangd without a background index: it knows the files open in it (and what they
    include), so a request naming no file gets one opened first and is partial."""

    kind = "open_files"
    needs_document = True
    strict = True
    complete = False

    def ready(self, progress: Progress, documents: int) -> bool:
        return documents > 0 and not progress


POLICIES: dict[str, type[Readiness]] = {
    policy.kind: policy
    for policy in (Readiness, Quiescent, Project, Indexed, ServiceReady, OpenFiles)
}


def readiness_for(ready_when: str) -> Readiness:
    """A fresh policy of the kind `ready_when` names (`idle` for an unknown one)."""
    return POLICIES.get(ready_when, Readiness)()
