"""`diagnostics_after`: what an edit did to the diagnostics of the files it changed and of
the files it broke (the other files the same servers have open).

It asks nothing itself: it says which files to ask about and reads the answers, which the
tool asks of the service (`service.files_diagnostics`, every file at once), so the tool's
line to the servers has no step here:

    check = Aftermath.plan(session, paths)              # the files about to change, others
    check.took(await service.files_diagnostics(check.asked, check.changing))  # "before"
    ...write, or preview...
    asked = check.to_ask(changed, deleted)
    report = check.report(changed, deleted, await service.files_diagnostics(asked, changed))

"Before" is asked for now (what was reported earlier for the same content may predate
changes of other files). The new content of each changed file is kept in the session's
`DiagnosticsHistory` (its `content_hash` may be given to `get_diagnostics since`), except a
preview's (not the disk's content).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.daemon.edits.delta import Diag, PositionMap, delta, entry, severity_counts
from codeward.daemon.edits.history import DiagnosticsHistory, Snapshot
from codeward.daemon.lsp.service import FileDiagnostics
from codeward.daemon.lsp.types import SEVERITY_RANKS
from codeward.daemon.paths import relative
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

OTHER_FILES = 8  # open files of the same languages checked for breaks, most recent first


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

    def unanswered(self) -> list[str]:
        """The servers without an answer (or that failed) for a changed file, on either
        side of its delta: what the report cannot vouch for."""
        return list(dict.fromkeys(s for f in self.files if f.changed for s in f.partial))


def partial_servers(answer: FileDiagnostics) -> list[str]:
    failed = [str(e.details.get("server")) for e in answer.errors if e.details.get("server")]
    return list(dict.fromkeys(answer.silent + failed))


def answered(diagnostics: Iterable[Diag], partial: Collection[str]) -> list[Diag]:
    """The `diagnostics` of the servers that answered on both sides of a delta."""
    return [d for d in diagnostics if d.server not in partial]


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


Answers = Mapping[Path, "FileDiagnostics | ToolError"]  # a file's answer, or its failure


@dataclass
class Aftermath:
    history: DiagnosticsHistory
    root: Path
    language: Callable[[Path], str | None]  # a path's language (None: no server asked)
    changing: list[Path]  # the files about to change that have a language
    others: list[Path]  # the other open files of their languages
    before_changed: dict[Path, Snapshot] = field(default_factory=dict)
    before_others: dict[Path, Snapshot] = field(default_factory=dict)
    failed: dict[Path, ToolError] = field(default_factory=dict)  # no "before" for these

    @classmethod
    def plan(cls, session: Session, paths: Sequence[Path]) -> Aftermath:
        """The check of an edit of `paths`: those files and the other open files of their
        languages are `asked` about now."""
        manager = session.lsp
        language = manager.language_or_none
        languages = sorted({lang for p in paths if (lang := language(p)) is not None})
        wanted = set(paths)
        others = [p for p in manager.open_files(languages, OTHER_FILES + len(paths))]
        others = [p for p in others if p not in wanted][:OTHER_FILES]
        changing = [p for p in paths if language(p) is not None]
        return cls(session.diagnostics_history, session.root, language, changing, others)

    @property
    def asked(self) -> list[Path]:
        """The files whose diagnostics now are the "before" (`took`)."""
        return self.changing + self.others

    def took(self, answers: Answers) -> None:
        """The diagnostics now of the `asked` files. A file whose servers failed has no
        "before" (its delta says so); the edit goes on."""
        for path, answer in answers.items():
            if isinstance(answer, ToolError):
                if answer.kind is ErrorKind.CANCELLED:
                    raise answer
                if answer.kind not in (ErrorKind.FILE_NOT_FOUND, ErrorKind.UNSUPPORTED_FILE_TYPE):
                    self.failed[path] = answer
                continue
            into = self.before_changed if path in self.changing else self.before_others
            into[path] = snapshot_of(answer)

    def to_ask(self, changed: Sequence[Path], deleted: Collection[Path] = ()) -> list[Path]:
        """The files whose diagnostics after the edit make its `report`."""
        candidates = list(changed) + [p for p in self.before_others if p not in changed]
        return [p for p in candidates if p not in deleted and self.language(p) is not None]

    def report(
        self,
        changed: Sequence[Path],
        deleted: Collection[Path],
        answers: Answers,
        *,
        preview: bool = False,
    ) -> Report:
        """The delta of every changed file (those `deleted` included) and of every other
        file whose diagnostics changed or that a server did not answer for, from the
        `answers` about the files `to_ask`. A
        preview's answers are not the disk's: an error fails it, and nothing is kept in
        the history."""
        reports: dict[Path, FileReport] = {}
        for path in list(changed) + [p for p in self.before_others if p not in changed]:
            is_changed = path in changed
            file = relative(path, self.root)
            old = self.before_changed.get(path) or self.before_others.get(path)
            failed = self.failed.get(path)
            if path in deleted:  # whatever it had is gone with it
                if old is not None and old.diagnostics:
                    reports[path] = FileReport(file, True, [], list(old.diagnostics), [])
                continue
            answer = answers.get(path)
            if answer is None:  # no language: nobody to ask
                continue
            if isinstance(answer, ToolError):
                if answer.kind is ErrorKind.FILE_NOT_FOUND:
                    continue
                if preview or answer.kind is ErrorKind.CANCELLED:
                    raise answer  # a preview without an answer has nothing to show
                if is_changed:  # written all the same: say why there is no delta
                    reports[path] = FileReport(
                        file, True, [], [], [], _server_of(answer), [answer.message]
                    )
                continue
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
                continue
            if is_changed and not preview:  # its new content_hash may be given as `since`
                remember(self.history, file, answer)
            # a server without an answer on either side has no delta: its diagnostics on
            # the other side are neither introduced nor resolved (the file is partial)
            partial = partial_servers(answer) + [s for s in (old.partial if old else ()) if s]
            previous = answered(old.diagnostics if old is not None else (), partial)
            mapping = PositionMap.between(old.text, answer.text) if old is not None else None
            found = delta(previous, answered(answer.diagnostics, partial), mapping)
            report = FileReport(
                file,
                is_changed,
                found.introduced,
                found.resolved,
                found.remaining,
                list(dict.fromkeys(partial)),
            )
            if is_changed or report.introduced or report.resolved or report.partial:
                reports[path] = report
        order = list(changed) + sorted(self.before_others)
        return Report([reports[p] for p in order if p in reports])
