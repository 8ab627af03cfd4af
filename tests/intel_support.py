"""Helpers for the code-intelligence tests: writing projects and finding positions in them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def pos(root: Path, name: str, needle: str, nth: int = 1, offset: int = 0) -> tuple[int, int]:
    """1-based (line, character) of the `nth` occurrence of `needle` in file `name`, + offset."""
    text = (root / name).read_text()
    at = -1
    for _ in range(nth):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def where(loc: dict[str, Any]) -> tuple[str, int]:
    return loc["path"], loc["line"]


def leaks(result: Any, *secrets: Path) -> list[str]:
    """The secret paths that appear anywhere in `result`."""
    text = json.dumps(result)
    return [str(s) for s in secrets if str(s) in text]
