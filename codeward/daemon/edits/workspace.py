"""The shapes of an LSP WorkspaceEdit, decoded into a list of operations (sans IO).

`documentChanges` (text edits with versions, and create/rename/delete file operations)
is preferred over `changes`, as the LSP says; the operations keep their order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from codeward.daemon.lsp.types import Range
from codeward.protocol.errors import ErrorKind, ToolError


class TextEdit(msgspec.Struct, rename="camel"):
    range: Range
    new_text: str


class _Document(msgspec.Struct):
    uri: str
    version: int | None = None


class _TextDocumentEdit(msgspec.Struct, rename="camel"):
    text_document: _Document
    edits: list[TextEdit]


class _FileOptions(msgspec.Struct, rename="camel"):
    overwrite: bool = False
    ignore_if_exists: bool = False
    recursive: bool = False
    ignore_if_not_exists: bool = False


class _CreateFile(msgspec.Struct):
    uri: str
    options: _FileOptions | None = None


class _RenameFile(msgspec.Struct, rename="camel"):
    old_uri: str
    new_uri: str
    options: _FileOptions | None = None


class _DeleteFile(msgspec.Struct):
    uri: str
    options: _FileOptions | None = None


@dataclass(frozen=True)
class EditText:
    """Text edits to one document; `version` is the document version they were computed for."""

    uri: str
    version: int | None
    edits: list[TextEdit]


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


def operations(edit: Any) -> list[Operation]:
    """The operations of a WorkspaceEdit (a dict as decoded from JSON), in order."""
    if edit is None:
        return []
    if not isinstance(edit, dict):
        raise _malformed("it is not an object")
    try:
        document_changes = edit.get("documentChanges")
        if document_changes is not None:
            if not isinstance(document_changes, list):
                raise _malformed("documentChanges is not a list")
            return [_operation(item) for item in document_changes]
        changes = msgspec.convert(edit.get("changes") or {}, type=dict[str, list[TextEdit]])
    except msgspec.ValidationError as exc:
        raise _malformed(str(exc)) from None
    return [EditText(uri, None, edits) for uri, edits in changes.items()]


def _operation(item: Any) -> Operation:
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind is None:
        text = msgspec.convert(item, type=_TextDocumentEdit)
        return EditText(text.text_document.uri, text.text_document.version, text.edits)
    if kind == "create":
        create = msgspec.convert(item, type=_CreateFile)
        options = create.options or _FileOptions()
        return CreateFile(create.uri, options.overwrite, options.ignore_if_exists)
    if kind == "rename":
        rename = msgspec.convert(item, type=_RenameFile)
        options = rename.options or _FileOptions()
        return RenameFile(
            rename.old_uri, rename.new_uri, options.overwrite, options.ignore_if_exists
        )
    if kind == "delete":
        delete = msgspec.convert(item, type=_DeleteFile)
        options = delete.options or _FileOptions()
        return DeleteFile(delete.uri, options.recursive, options.ignore_if_not_exists)
    raise _malformed(f"unknown file operation {kind!r}")
