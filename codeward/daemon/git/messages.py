"""Messages for git failures: one sentence, never an absolute path outside the project."""

from __future__ import annotations

import re
from pathlib import Path

from codeward.daemon.paths import is_inside

# A quoted absolute path (git quotes paths with '...'; spaces allowed inside), or a bare one.
_ABSOLUTE = re.compile(r"(?<=')/[^'\n]*(?=')|(?<=\")/[^\"\n]*(?=\")|(?<![\w.~])/[^\s'\"`,;()]+")


def scrub(text: str, root: Path) -> str:
    """`text` with absolute paths outside the project replaced (messages never show them;
    nor do a `git_failed` error's stderr and output)."""

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        trimmed = found.rstrip(".:")
        path = Path(trimmed)
        if is_inside(path, root):
            shown = path.relative_to(root).as_posix() if path != root else "."
        else:
            shown = "<outside the project>"
        return shown + found[len(trimmed) :]

    return _ABSOLUTE.sub(replace, text)


def failure_message(subcommand: str, code: int, stderr: str, root: Path) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    detail = (fatal or lines or ["no message"])[0]
    return (
        f"git {subcommand} failed with exit code {code} ({scrub(detail, root)}); "
        "see data.stderr and fix the arguments or the repository state."
    )
