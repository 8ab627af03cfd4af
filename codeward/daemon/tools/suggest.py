"""A path that does not exist, answered with the nearest one that does: the project file
that ends with it (`click/formatting.py` -> `src/click/formatting.py`), else one of the
same name, else one spelled alike."""

from __future__ import annotations

import difflib
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import trio

from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.service import LanguageService

SUGGESTED = 3


def nearest(given: str, files: list[str]) -> list[str]:
    """The root-relative `files` nearest the missing root-relative path `given`."""
    wanted = PurePosixPath(given.lstrip("./"))
    text = wanted.as_posix()
    ending = [f for f in files if f.endswith("/" + text)]
    if ending:
        return sorted(ending, key=len)[:SUGGESTED]
    named = [f for f in files if PurePosixPath(f).name == wanted.name]
    if named:
        return difflib.get_close_matches(text, named, n=SUGGESTED, cutoff=0) or named[:SUGGESTED]
    return difflib.get_close_matches(text, files, n=SUGGESTED, cutoff=0.85)


async def suggested(manager: LanguageService, arguments: Any, error: ToolError) -> ToolError:
    """`error` (a missing file) with the nearest existing paths named, when there are any."""
    path = getattr(arguments, "path", None)
    if error.kind is not ErrorKind.FILE_NOT_FOUND or not isinstance(path, str):
        return error
    if "does not exist" not in error.message or path.startswith("/"):
        return error
    listing, _ = await trio.to_thread.run_sync(manager.project_files)
    root = manager.root
    files = sorted(p.relative_to(root).as_posix() for paths in listing.values() for p in paths)
    found = nearest(path, files)
    if not found:
        return error
    named = " or ".join(repr(f) for f in found)
    message = error.message.rstrip(".") + f"; the nearest existing: {named}."
    return ToolError(error.kind, message, **{**error.details, "suggestions": found})
