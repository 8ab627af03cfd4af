"""Messages for git failures: one sentence, never an absolute path outside the project."""

from __future__ import annotations

import re
from pathlib import Path

from codeward.daemon.paths import is_inside

_ABSOLUTE = re.compile(r"(?<![\w.~])/[^\s'\"`,;()]+")


def _scrub(text: str, root: Path) -> str:
    """`text` with absolute paths outside the project replaced (messages never show them)."""

    def replace(match: re.Match[str]) -> str:
        path = Path(match.group(0).rstrip(".:"))
        if is_inside(path, root):
            return path.relative_to(root).as_posix() if path != root else "."
        return "<outside the project>"

    return _ABSOLUTE.sub(replace, text)


def failure_message(subcommand: str, code: int, stderr: str, root: Path) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    detail = (fatal or lines or ["no message"])[0]
    return (
        f"git {subcommand} failed with exit code {code} ({_scrub(detail, root)}); "
        "see data.stderr and fix the arguments or the repository state."
    )
