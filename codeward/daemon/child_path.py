"""The PATH of every program codeward starts (git, formatters, language servers, `go env`).

The daemon's own PATH may hold relative entries (`node_modules/.bin`, `.`, an empty entry:
common in users' shells, and autostart keeps the client's environment) or entries inside a
project. A program found through them would be the project's own: git running
`<root>/node_modules/.bin/ssh` for a fetch, or `gpg` for `log.showSignature`. So children
get the PATH without empty or relative entries and without entries inside the root of any
live session (resolved, so a symlink into a root counts as inside), trusted or not. The
daemon's own installation is the one exception (a root may hold the daemon's virtualenv:
codeward's own repository).
"""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from codeward.daemon.paths import is_inside

_roots: collections.Counter[Path] = collections.Counter()  # live sessions' roots
_cleaned: dict[tuple[str, Path | None], str] = {}  # (PATH, extra root) -> cleaned, per roots


def enter_root(root: Path) -> None:
    """A session of `root` (canonical) is live: no child's PATH reaches into it."""
    _roots[root] += 1
    _cleaned.clear()


def leave_root(root: Path) -> None:
    """A session of `root` has stopped."""
    _roots[root] -= 1
    if _roots[root] <= 0:
        del _roots[root]
    _cleaned.clear()


def live_roots() -> list[Path]:
    return list(_roots)


def from_root(path: str, roots: Iterable[Path]) -> bool:
    """Whether `path` (resolved) lies inside one of `roots` and not inside the daemon's own
    installation."""
    real = Path(os.path.realpath(path))
    if is_inside(real, Path(os.path.realpath(sys.prefix))):
        return False
    return any(is_inside(real, root) for root in roots)


def clean_path(path: str | None = None, *, root: Path | None = None) -> str:
    """`path` (default: the daemon's PATH, else the system's default) without empty or
    relative entries and without entries inside a live session's root or `root`."""
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    key = (path, root)
    cleaned = _cleaned.get(key)
    if cleaned is None:
        roots = [*_roots, *([root] if root is not None else [])]
        kept = [
            entry
            for entry in path.split(os.pathsep)
            if os.path.isabs(entry) and not from_root(entry, roots)
        ]
        cleaned = os.pathsep.join(dict.fromkeys(kept))
        if len(_cleaned) > 64:
            _cleaned.clear()
        _cleaned[key] = cleaned
    return cleaned


def with_clean_path(env: dict[str, str], *, root: Path | None = None) -> dict[str, str]:
    """`env` with its PATH cleaned (the daemon's PATH when it has none)."""
    return {**env, "PATH": clean_path(env.get("PATH"), root=root)}
