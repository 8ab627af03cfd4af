"""The folders codeward does not look into: version control, virtual environments, dependency
and build output, caches. The watcher, the project walk and the untrusted-root checks all
take this one set."""

from __future__ import annotations

from pathlib import Path

IGNORED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "node_modules", "__pycache__",
        ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox", ".cache", ".idea",
        ".vscode", "build", "dist", "target", "_build", "deps", ".elixir_ls", ".lexical",
        ".gradle", ".next", ".direnv", ".eggs",
    }
)  # fmt: skip


def ignored_name(name: str) -> bool:
    """Whether a folder called `name` is one codeward does not look into."""
    return name in IGNORED_DIRS or name.endswith(".egg-info")


def is_ignored(path: Path, root: Path) -> bool:
    """Whether `path` is or lies in an ignored folder below `root` (or outside it)."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return True
    return any(ignored_name(part) for part in parts)
