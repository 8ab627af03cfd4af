"""Messages for git failures: one sentence, never an absolute path outside the project."""

from __future__ import annotations

from pathlib import Path

from codeward.daemon.paths import scrub


def failure_message(subcommand: str, code: int, stderr: str, root: Path) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    detail = (fatal or lines or ["no message"])[0]
    return (
        f"git {subcommand} failed with exit code {code} ({scrub(detail, root)}); "
        "see data.stderr and fix the arguments or the repository state."
    )
