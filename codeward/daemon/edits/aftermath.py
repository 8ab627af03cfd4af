"""`diagnostics_after`: what an edit did to the diagnostics of the files it changed and of
the files it broke (the other files the same servers have open).

    before = await Aftermath.before(session, paths)   # now, for the files about to change
    ...write, or preview...
    report = await before.after(changed, fetch)       # the delta of each file, as JSON

"Before" is asked for now (what was reported earlier for the same content may predate
changes of other files). The new content of each changed file is kept in the session's
`DiagnosticsHistory` (its `content_hash` may be given to `get_diagnostics since`), except a
preview's (not the disk's content).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.edits.delta import PositionMap, delta, entry, severity_counts
from codeward.daemon.edits.history import DiagnosticsHistory, Snapshot
from codeward.daemon.lsp.service import FileDiagnostics, LanguageService
from codeward.daemon.lsp.types import SEVERITY_RANKS
from codeward.daemon.paths import relative
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

OTHER_FILES = 8  # open files of the same languages checked for breaks, most recent first
Fetch = Callable[[Path], Awaitable[FileDiagnostics]]


@dataclass
class FileReport:
    """The delta of one file, as `diagnostics_after` shows it."""

    file: str
    changed: bool
    introduced: list[Any]
    resolved: list[Any]
    remaining: list[Any]
    partial: list[str] = field(default_factory=list)  # servers without an answer in time
    errors: list[str] = field(default_factory=list)  # why a side of the delta is missing

    def public(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "file": self.file,
            "changed": self.changed,
            "introduced": [entry(d) for d in self.introduced],
            "resolved": {
                "count": len(self.resolved),
                "diagnostics": [entry(d) for d in self.resolved],
            },
            "remaining": severity_counts(self.remaining),
        }
        if self.partial:
            shown["partial"] = True
            shown["partial_servers"] = self.partial
        if self.errors:
            shown["errors"] = self.errors
        return shown


@dataclass
class Report:
    files: list[FileReport]

    def public(self) -> list[dict[str, Any]]:
        return [f.public() for f in self.files]

    def introduced(self, severity: str = "error") -> list[Any]:
        """The introduced diagnostics of `severity` or worse, in every file."""
        rank = SEVERITY_RANKS[severity]
        return [d for f in self.files for d in f.introduced if d.severity <= rank]


def partial_servers(answer: FileDiagnostics) -> list[str]:
    failed = [str(e.details.get("server")) for e in answer.errors if e.details.get("server")]
    return list(dict.fromkeys(answer.silent + failed))


def _server_of(error: ToolError) -> list[str]:
    server = error.details.get("server")
    servers = error.details.get("servers")
    if isinstance(servers, list):
        return [str(s) for s in servers]
    return [str(server)] if server else []


def snapshot_of(answer: FileDiagnostics) -> Snapshot:
    return Snapshot(
        answer.content_hash,
        answer.text,
        tuple(answer.diagnostics),
        tuple(partial_servers(answer)),
    )


def remember(history: DiagnosticsHistory, file: str, answer: FileDiagnostics) -> Snapshot:
    """Keep a fresh answer about a file's disk content."""
    return history.record(
        file, answer.content_hash, answer.text, answer.diagnostics, partial_servers(answer)
    )


@dataclass
class Aftermath:
    manager: LanguageService
    history: DiagnosticsHistory
    root: Path
    before_changed: dict[Path, Snapshot]
    before_others: dict[Path, Snapshot]
    failed: dict[Path, ToolError] = field(default_factory=dict)  # no "before" for these

    @classmethod
    async def before(cls, session: Session, paths: Sequence[Path]) -> Aftermath:
        """The diagnostics now of `paths` (about to change) and of the other open files of
        their languages."""
        manager = session.lsp
        languages = sorted(
            {lang for p in paths if (lang := manager.language_or_none(p)) is not None}
        )
        wanted = set(paths)
        others = [p for p in manager.open_files(languages, OTHER_FILES + len(paths))]
        others = [p for p in others if p not in wanted][:OTHER_FILES]
        self = cls(manager, session.diagnostics_history, session.root, {}, {})

        async def one(path: Path, into: dict[Path, Snapshot]) -> None:
            try:
                snapshot = await self._now(path)
            except ToolError as exc:  # the edit goes on; its delta says what is missing
                if exc.kind is ErrorKind.CANCELLED:
                    raise
                self.failed[path] = exc
                return
            if snapshot is not None:
                into[path] = snapshot

        async with trio.open_nursery() as nursery:
            for path in paths:
                if manager.language_or_none(path) is not None:
                    nursery.start_soon(one, path, self.before_changed)
            for path in others:
                nursery.start_soon(one, path, self.before_others)
        return self

    async def _now(self, path: Path) -> Snapshot | None:
        """The diagnostics of the file's content now (asked now: what was reported earlier
        for the same content may predate changes of other files); None for a file that is
        not there or that no server answers for."""
        try:
            answer = await self.manager.diagnostics(path)
        except ToolError as exc:
            if exc.kind in (ErrorKind.FILE_NOT_FOUND, ErrorKind.UNSUPPORTED_FILE_TYPE):
                return None
            raise
        return snapshot_of(answer)

    async def after(
        self,
        changed: Sequence[Path],
        deleted: Collection[Path] = (),
        fetch: Fetch | None = None,
    ) -> Report:
        """The delta of every changed file (those `deleted` included) and of every other
        file whose diagnostics changed. `fetch` asks for a file's diagnostics (a preview's
        answer); by default the disk's, which are then kept in the history."""
        reports: dict[Path, FileReport] = {}
        fetcher = fetch or self.manager.diagnostics

        async def one(path: Path, is_changed: bool) -> None:
            file = relative(path, self.root)
            old = self.before_changed.get(path) or self.before_others.get(path)
            failed = self.failed.get(path)
            if path in deleted:  # whatever it had is gone with it
                if old is not None and old.diagnostics:
                    reports[path] = FileReport(file, True, [], list(old.diagnostics), [])
                return
            if self.manager.language_or_none(path) is None:
                return
            try:
                answer = await fetcher(path)
            except ToolError as exc:
                if exc.kind is ErrorKind.FILE_NOT_FOUND:
                    return
                if fetch is not None or exc.kind is ErrorKind.CANCELLED:
                    raise  # a preview without an answer has nothing to show
                if is_changed:  # written all the same: say why there is no delta
                    reports[path] = FileReport(
                        file, True, [], [], [], _server_of(exc), [exc.message]
                    )
                return
            if failed is not None:  # no "before": nothing can be called introduced
                reports[path] = FileReport(
                    file,
                    is_changed,
                    [],
                    [],
                    list(answer.diagnostics),
                    list(dict.fromkeys(partial_servers(answer) + _server_of(failed))),
                    [f"before the edit: {failed.message}"],
                )
                return
            if is_changed and fetch is None:  # its new content_hash may be given as `since`
                remember(self.history, file, answer)
            previous = list(old.diagnostics) if old is not None else []
            mapping = PositionMap.between(old.text, answer.text) if old is not None else None
            found = delta(previous, answer.diagnostics, mapping)
            partial = partial_servers(answer) + [s for s in (old.partial if old else ()) if s]
            report = FileReport(
                file,
                is_changed,
                found.introduced,
                found.resolved,
                found.remaining,
                list(dict.fromkeys(partial)),
            )
            if is_changed or report.introduced or report.resolved:
                reports[path] = report

        async with trio.open_nursery() as nursery:
            for path in changed:
                nursery.start_soon(one, path, True)
            for path in self.before_others:
                if path not in changed:
                    nursery.start_soon(one, path, False)
        order = list(changed) + sorted(self.before_others)
        return Report([reports[p] for p in order if p in reports])
