"""Safe git: tiers and argument rules, the repository's config scan, a hardened runner,
parsers of git's machine formats, and the files a write changed.

The names below are loaded on first use (PEP 562): the daemon's start imports the runner
(`git.runner`) without the commands and their parsers."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeward.daemon.git.command import run_git
    from codeward.daemon.git.policy import Decision, Tier, classify

__all__ = ["Decision", "Tier", "classify", "run_git"]
_HOMES = {"run_git": "command", "Decision": "policy", "Tier": "policy", "classify": "policy"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"codeward.daemon.git.{home}"), name)
