"""What folders' diagnostics have covered, per server, while the root's files stay as they
are: a second call answers the files already checked from here and checks the rest, so a
project too large for one call is complete within a bounded number of calls."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol.types import Diagnostic


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


@dataclass
class Covered:
    """One server's checked files (uri -> their diagnostics), in one content state."""

    state: int
    checked: dict[str, Sequence[Diagnostic]] = field(default_factory=dict)


@dataclass
class ServerCoverage:
    """What one server checked for a folder's answer."""

    name: str
    files_checked: int
    files_total: int
    complete: bool
    stopped: str | None = None  # why files were left: "time" or "memory" (near its cap)


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
