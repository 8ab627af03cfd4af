"""Language servers: one supervised actor per (server, session root), or per (server,
repository) where the roots of a repository share its process (`SharedServers`), behind
`LanguageService`, the one interface the rest of the daemon uses.

The names below are loaded on first use (PEP 562): importing a light part of the layer
(`restricted_effects`, `defaults`) does not import the service, its servers and lsprotocol,
which the daemon loads only once it listens."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeward.daemon.lsp.service import (
        Answer,
        DocumentContext,
        LanguageService,
        Question,
        SharedServers,
        repository_of,
    )

__all__ = [
    "Answer",
    "DocumentContext",
    "LanguageService",
    "Question",
    "SharedServers",
    "repository_of",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("codeward.daemon.lsp.service"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
