"""The editor's roots changing. Its `workspace/didChangeWorkspaceFolders`: an added folder
becomes a root (its session opened or joined, trusted as any), a removed one is left (its
session lets go of the editor). Each open buffer whose root changed is handed over: the
root it left gives its file back to the disk (`editor_close`), the root it now belongs to
gets its text (`editor_open`). Run in its turn among the editor's document changes
(`Documents.put_work`), so a request after it is answered with the folders as changed.
A root's session closed while the editor is connected and opened again gets the editor's
buffers there (`resend`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Raw, Struct

from codeward.daemon.editor.buffers import Buffers
from codeward.daemon.editor.workspace import Root, Workspace, folder_path
from codeward.protocol.errors import ToolError
from codeward.protocol.lsp import WorkspaceFolder

if TYPE_CHECKING:
    from codeward.daemon.lsp.overlay import EditorHolder

Log = Callable[[int, str], None]  # window/logMessage to the editor


class _Event(Struct, forbid_unknown_fields=False):
    added: list[WorkspaceFolder] = []
    removed: list[WorkspaceFolder] = []


class _Params(Struct, forbid_unknown_fields=False):
    event: _Event


def capability(client: object) -> dict[str, Any]:
    """The `workspace` capability: folder changes are taken from an editor that declared
    `workspace.workspaceFolders`."""
    declared = client.get("workspace") if isinstance(client, dict) else None
    notified = isinstance(declared, dict) and declared.get("workspaceFolders") is True
    return {"workspaceFolders": {"supported": True, "changeNotifications": notified}}


def event_of(params: Raw) -> _Event:
    """The folders added and removed (raises `msgspec.DecodeError` off the spec)."""
    return msgspec.json.decode(params, type=_Params).event


async def change(
    event: _Event, workspace: Workspace, buffers: Buffers, holder: EditorHolder, log: Log
) -> None:
    """Apply the change (see the module docstring); a folder that cannot be opened is told
    to the editor and left out."""
    before = {uri: workspace.locate(uri) for uri in buffers.open}
    for folder in event.removed:
        workspace.remove(folder.uri)
    for folder in event.added:
        path = folder_path(folder.uri)
        if path is None:
            log(1, f"codeward: the folder {folder.uri} is no file:// folder; not added.")
            continue
        try:
            await workspace.add(str(path))
        except ToolError as exc:
            log(1, f"codeward: the folder {folder.name or path.name} was not added: {exc.message}")
    for uri, was in before.items():
        buffer = buffers.get(uri)
        now = workspace.locate(uri)
        if buffer is None or _root(was) is _root(now):
            continue
        if was is not None:
            await was[0].session.lsp.editor_close(holder, was[1])
        if now is not None:
            buffer.path = now[1]
            service = (await workspace.session(now[0])).lsp
            await service.editor_open(holder, now[1], buffer.text, buffer.version)


def _root(located: tuple[Root, object] | None) -> Root | None:
    return None if located is None else located[0]


async def resend(workspace: Workspace, buffers: Buffers, holder: EditorHolder, root: Root) -> None:
    """The root's session was opened again: the editor's buffers there, handed to it."""
    for uri, buffer in list(buffers.open.items()):
        located = workspace.locate(uri)
        if located is not None and located[0] is root:
            await root.session.lsp.editor_open(holder, located[1], buffer.text, buffer.version)
