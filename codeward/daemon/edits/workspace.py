"""An LSP WorkspaceEdit (lsprotocol types) as a list of operations (sans IO).

`documentChanges` (text edits with versions, and create/rename/delete file operations)
is preferred over `changes`, as the LSP says; the operations keep their order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.lsp.shapes import OffSpec, structure
from codeward.protocol.errors import ErrorKind, ToolError

TextEdit = lsp.TextEdit | lsp.AnnotatedTextEdit


@dataclass(frozen=True)
class EditText:
    """Text edits to one document; `version` is the document version they were computed for."""

    uri: str
    version: int | None
    edits: Sequence[TextEdit]


@dataclass(frozen=True)
class CreateFile:
    uri: str
    overwrite: bool
    ignore_if_exists: bool


@dataclass(frozen=True)
class RenameFile:
    old_uri: str
    new_uri: str
    overwrite: bool
    ignore_if_exists: bool


@dataclass(frozen=True)
class DeleteFile:
    uri: str
    recursive: bool
    ignore_if_not_exists: bool


Operation = EditText | CreateFile | RenameFile | DeleteFile


def _malformed(detail: str) -> ToolError:
    return ToolError(
        ErrorKind.LSP_ERROR,
        f"The language server sent an edit codeward cannot read ({detail}); nothing was "
        "written: report it, or retry.",
    )


def operations(edit: lsp.WorkspaceEdit | Any) -> list[Operation]:
    """The operations of a WorkspaceEdit, in order: an lsprotocol `WorkspaceEdit`, or the
    JSON data of one (a server's `workspace/applyEdit`), structured here."""
    if edit is None:
        return []
    if not isinstance(edit, lsp.WorkspaceEdit):
        try:
            edit = structure(edit, lsp.WorkspaceEdit)
        except OffSpec as exc:
            raise _malformed(exc.detail) from None
    if edit.document_changes is not None:
        return [_operation(item) for item in edit.document_changes]
    return [EditText(uri, None, edits) for uri, edits in (edit.changes or {}).items()]


def _operation(
    item: lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile,
) -> Operation:
    if isinstance(item, lsp.TextDocumentEdit):
        edits = [e for e in item.edits if not isinstance(e, lsp.SnippetTextEdit)]
        if len(edits) < len(item.edits):
            raise _malformed("a snippet edit, which codeward never declared it takes")
        return EditText(item.text_document.uri, item.text_document.version, edits)
    if isinstance(item, lsp.CreateFile):
        create = item.options or lsp.CreateFileOptions()
        return CreateFile(item.uri, bool(create.overwrite), bool(create.ignore_if_exists))
    if isinstance(item, lsp.RenameFile):
        rename = item.options or lsp.RenameFileOptions()
        return RenameFile(
            item.old_uri, item.new_uri, bool(rename.overwrite), bool(rename.ignore_if_exists)
        )
    delete = item.options or lsp.DeleteFileOptions()
    return DeleteFile(item.uri, bool(delete.recursive), bool(delete.ignore_if_not_exists))
