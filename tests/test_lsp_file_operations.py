"""Which servers take a file operation: `workspace.fileOperations` filters, static and
registered, matched against the file."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.file_operations import rename_params, takes

WILL, DID = "workspace/willRenameFiles", "workspace/didRenameFiles"


def options(glob: str, matches: lsp.FileOperationPatternKind | None = None, *,
            ignore_case: bool = False) -> lsp.FileOperationRegistrationOptions:  # fmt: skip
    pattern = lsp.FileOperationPattern(
        glob, matches, lsp.FileOperationPatternOptions(ignore_case) if ignore_case else None
    )
    return lsp.FileOperationRegistrationOptions([lsp.FileOperationFilter(pattern, "file")])


def test_static_filters() -> None:
    workspace = lsp.WorkspaceOptions(
        file_operations=lsp.FileOperationOptions(will_rename=options("**/*.{ts,js}"))
    )
    caps = Capabilities(lsp.ServerCapabilities(workspace=workspace))
    assert caps.supports(WILL) and not caps.supports(DID)
    assert Capabilities.provider(WILL) == "workspace.fileOperations.willRename"
    filters = caps.file_filters(WILL)
    assert takes(filters, Path("/p/src/a.ts")) and not takes(filters, Path("/p/a.py"))
    assert not Capabilities().supports(WILL)


def test_registered_filters_folders_and_case() -> None:
    caps = Capabilities(lsp.ServerCapabilities())
    caps.register("1", DID, {"filters": [{"pattern": {"glob": "**/*.py", "matches": "folder"}}]})
    assert caps.supports(DID)  # offered, but only for folders: no file is taken
    assert not takes(caps.file_filters(DID), Path("/p/a.py"))
    upper = {"glob": "**/*.PY", "options": {"ignoreCase": True}}
    caps.register("2", DID, {"filters": [{"pattern": upper}]})
    assert takes(caps.file_filters(DID), Path("/p/a.py"))
    caps.unregister("1")
    caps.unregister("2")
    assert not caps.supports(DID)


def test_rename_params() -> None:
    assert rename_params(Path("/p/a b.ts"), Path("/p/c.ts")) == {
        "files": [{"oldUri": "file:///p/a%20b.ts", "newUri": "file:///p/c.ts"}]
    }
