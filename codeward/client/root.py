"""The project root a command works on: `--root`, else the git top level, else the cwd."""

from __future__ import annotations

import os
from pathlib import Path


def git_toplevel(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds a `.git` (a directory, or the
    file of a worktree or submodule), found without running git."""
    current = Path(os.path.abspath(start))
    while True:
        if (current / ".git").exists():
            return current
        if current.parent == current:
            return None
        current = current.parent


def project_root(explicit: str | None = None, cwd: Path | None = None) -> Path:
    """The absolute root to open a session on (symlinks are left for the daemon to resolve)."""
    base = Path.cwd() if cwd is None else cwd
    if explicit:
        return Path(os.path.abspath(base / Path(explicit).expanduser()))
    return git_toplevel(base) or Path(os.path.abspath(base))
