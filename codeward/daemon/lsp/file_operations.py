"""File operations told to servers (`workspace/willRenameFiles`, `didRenameFiles`): which
files a server's filters take, and the params of a rename."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.lsp.uris import path_to_uri
from codeward.daemon.lsp.watcher import glob_matches


def takes(filters: Sequence[lsp.FileOperationFilter], path: Path) -> bool:
    """Whether one of a server's file operation `filters` takes the file `path`."""
    for item in filters:
        if item.scheme not in (None, "file"):
            continue
        pattern = item.pattern
        if pattern.matches == lsp.FileOperationPatternKind.Folder:
            continue
        glob, target = pattern.glob, path
        if pattern.options is not None and pattern.options.ignore_case:
            glob, target = glob.lower(), Path(str(path).lower())
        if glob_matches(glob, target):
            return True
    return False


def rename_params(old: Path, new: Path) -> Any:
    """The params of `workspace/willRenameFiles` and `didRenameFiles`, as JSON data."""
    return {"files": [{"oldUri": path_to_uri(old), "newUri": path_to_uri(new)}]}
