"""What folders' diagnostics have covered, per server, while the root's files stay as they
are: a second call answers the files already checked from here and checks the rest, so a
project too large for one call is complete within a bounded number of calls."""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from msgspec import Struct

from codeward.daemon.lsp.pyright_scope import Scope, Split
from codeward.daemon.lsp.types import DiagnosticLike, Position, Range


def content_state(paths: Sequence[Path]) -> int:
    """A fingerprint of the files' content as their stats show it (a file added, removed or
    written changes it): checked diagnostics stand only while it does not change, since a
    change to one module can change another's type errors. Blocking: run in a thread."""
    stats: list[tuple[str, int, int, int, int]] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stats.append((str(path), -1, -1, -1, -1))
        else:
            stats.append((str(path), st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size))
    return hash(tuple(stats))


class Kept(Struct, gc=False):
    """A checked diagnostic, kept for later calls as their answers show it: its range, its
    severity, message, code and source, one object (no `data`, related information or
    tags: a server's own, such as ruff's fixes, are many small objects a diagnostic)."""

    start_line: int
    start_character: int
    end_line: int
    end_character: int
    severity: int | None
    message: str
    code: int | str | None
    source: str | None

    @property
    def range(self) -> Range:
        return Range(
            Position(self.start_line, self.start_character),
            Position(self.end_line, self.end_character),
        )


class Checked(MutableMapping[str, Sequence[DiagnosticLike]]):
    """uri -> the diagnostics of a checked file, each a `Kept`, codes and sources shared: a
    session holds them from call to call, and the servers' diagnostics as they came (ruff's
    fixes in `data`: a dozen small objects each) left the memory they took, once the
    session closed, in pieces among the objects the daemon keeps, too small to go back."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[Kept, ...]] = {}
        self._codes: dict[int | str, int | str] = {}  # each code, once
        self._sources: dict[str, str] = {}  # each source, once

    def __getitem__(self, uri: str) -> Sequence[DiagnosticLike]:
        return self._files[uri]

    def __setitem__(self, uri: str, items: Sequence[DiagnosticLike]) -> None:
        self._files[uri] = tuple(self._kept(d) for d in items)

    def __delitem__(self, uri: str) -> None:
        del self._files[uri]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def _kept(self, d: DiagnosticLike) -> Kept:
        if isinstance(d, Kept):
            return d
        start, end = d.range.start, d.range.end
        code = d.code if d.code is None else self._codes.setdefault(d.code, d.code)
        source = d.source if d.source is None else self._sources.setdefault(d.source, d.source)
        severity = None if d.severity is None else int(d.severity)
        return Kept(start.line, start.character, end.line, end.character, severity,
                    d.message, code, source)  # fmt: skip


@dataclass
class Covered:
    """One server's checked files (uri -> their diagnostics), in one content state."""

    state: int
    checked: Checked = field(default_factory=Checked)


@dataclass
class ServerCoverage:
    """What one server checked for a folder's answer."""

    name: str
    files_checked: int
    files_total: int
    complete: bool
    stopped: str | None = None  # why files were left: "time" or "memory" (near its cap)
    # files its configuration leaves out (`pyright_scope`): not asked about, not counted
    files_excluded: int | None = None  # outside its `include`, or excluded
    files_ignored: int | None = None  # in its `ignore`: their diagnostics suppressed
    config: str | None = None  # the configuration that says so (when files were left out)
    config_error: str | None = None  # why it could not be read (the whole root taken)

    def leaving_out(self, scope: Scope, split: Split) -> None:
        """Says what `split` left out, and a configuration that could not be read."""
        if split.excluded:
            self.files_excluded = len(split.excluded)
        if split.ignored:
            self.files_ignored = len(split.ignored)
        if split.excluded or split.ignored or scope.problem:
            self.config = scope.config
            self.config_error = scope.problem


class Coverage:
    """Per server: the files it checked while the root's files stay as they are."""

    def __init__(self) -> None:
        self._covered: dict[str, Covered] = {}

    def of(self, server: str, state: int) -> Covered:
        """The files `server` checked in `state` (none when the content changed since)."""
        covered = self._covered.get(server)
        if covered is None or covered.state != state:
            covered = self._covered[server] = Covered(state)
        return covered
