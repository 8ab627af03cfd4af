"""bench/large.py's direct client: bench/lsp.py's, keeping the reports of a workspace pull,
and asking files in turn the way the daemon's batches do."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec
from lsp import DirectClient  # bench/


class Direct(DirectClient):
    """bench/lsp.py's direct client, keeping the reports of a workspace pull too."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.pull_token = ""
        self.reports: dict[str, list[Any]] = {}

    def _handle(self, frame: bytes) -> dict[str, Any] | None:
        message = msgspec.json.decode(frame)
        if message.get("method") == "$/progress" and self.pull_token:
            params = message["params"]
            if params.get("token") == self.pull_token:
                for report in (params.get("value") or {}).get("items", []):
                    self.reports[report["uri"]] = report.get("items", [])
                return None
        return super()._handle(frame)

    def open(self, path: str) -> None:
        text = (self.root / path).read_text()
        document = {"uri": self.uri(path), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": document})

    def project_diagnostics(self, expected: set[str], timeout: float) -> tuple[float, bool]:
        """A workspace pull streamed until every file of `expected` (uris) was reported and
        no progress is active for 1 s: (seconds, complete)."""
        self.pull_token = "bench-pull"
        self.reports.clear()
        pull_id = next(self.ids)
        begin = time.perf_counter()
        params = {"previousResultIds": [], "partialResultToken": self.pull_token}
        self._write({"id": pull_id, "method": "workspace/diagnostic", "params": params})
        deadline = begin + timeout
        complete = False
        while time.perf_counter() < deadline:
            frame = self._next(1.0)
            if frame is None:
                if not self.progress and expected <= set(self.reports):
                    complete = True
                    break
                continue
            message = self._handle(frame)
            if message is not None and message.get("id") == pull_id:
                complete = True  # answered: over
                break
        took = time.perf_counter() - begin - (1.0 if complete else 0.0)
        self.notify("$/cancelRequest", {"id": pull_id})
        self.pull_token = ""
        return took, complete

    def cut_pulls(self, uris: list[str], seconds: float, grace: float) -> int:
        """The daemon's batches, directly: each file opened and its diagnostics pulled in
        turn for `seconds`, the one under way then given `grace` more and cancelled, every
        file opened closed again: how many were answered."""
        end, answered, opened = time.perf_counter() + seconds, 0, []
        for uri in uris:
            if time.perf_counter() >= end:
                break
            text = Path(uri.removeprefix("file://")).read_text(errors="replace")
            document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
            self.notify("textDocument/didOpen", {"textDocument": document})
            opened.append(uri)
            pull_id = next(self.ids)
            params = {"textDocument": {"uri": uri}}
            self._write({"id": pull_id, "method": "textDocument/diagnostic", "params": params})
            if self._answer(pull_id, end) or self._answer(pull_id, end + grace):
                answered += 1
            else:
                self.notify("$/cancelRequest", {"id": pull_id})
        for uri in opened:
            self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        return answered

    def _answer(self, request_id: int, until: float) -> bool:
        """Whether the answer to `request_id` came before `until` (perf_counter)."""
        while (left := until - time.perf_counter()) > 0:
            frame = self._next(left)
            message = self._handle(frame) if frame is not None else None
            if message is not None and message.get("id") == request_id:
                return True
        return False

    def drain(self, seconds: float) -> None:
        """Read what the server says for `seconds` (a server blocked on a full pipe would
        look idle)."""
        end = time.perf_counter() + seconds
        while (left := end - time.perf_counter()) > 0:
            frame = self._next(left)
            if frame is not None:
                self._handle(frame)

    def errors(self) -> int:
        return sum(1 for items in self.reports.values() for d in items if d.get("severity") == 1)
