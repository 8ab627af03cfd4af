"""Editor buffers as an overlay over the disk (sans IO): what an editor holds open is the
text the servers see for that file, until the editor closes it or disconnects.

`EditorHolder` is one editor connection (the editor dialect implements it) and `Buffer` one
buffer it holds. `Overlay` keeps every holder's buffers by canonical path, one per
repository like the previews (the roots of a repository share server processes, and a
nested root's files are the same documents): the last buffer opened or changed is the text
the servers see (`held`); closing it hands the file to another holder's buffer, else the
disk. The service's `editor_*` methods change it and tell the servers (`lsp/editors.py`).

A tool call collects the buffers its answer was read from (`collect`, a context variable
the tool context sets, shared with the tasks the call starts); the layer calls `record`
wherever it hands out a buffer's text instead of the disk's.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lsprotocol import types as lsp

from codeward.daemon.files import content_hash
from codeward.daemon.lsp.positions import LineIndex

__all__ = ["Buffer", "EditorHolder", "Held", "Overlay", "collect", "record"]

_READ: ContextVar[dict[Path, Buffer] | None] = ContextVar("editor_buffers_read", default=None)


def collect(read: dict[Path, Buffer]) -> None:
    """Record into `read` the buffers the current task (and the tasks it starts from now
    on) is answered from, by path."""
    _READ.set(read)


def record(held: Held) -> None:
    """A buffer's text was handed out instead of the disk's."""
    read = _READ.get()
    if read is not None:
        read[held.buffer.path] = held.buffer


class EditorHolder(Protocol):
    """An editor connection holding buffers (the editor dialect implements it)."""

    @property
    def name(self) -> str:
        """Who it is, for people: e.g. "Neovim 0.7.2 (pid 1234)"."""
        ...

    async def apply_edit(self, edit: lsp.WorkspaceEdit, label: str) -> bool:
        """`workspace/applyEdit` of `edit` to that editor: True when it applied it."""
        ...


@dataclass(frozen=True)
class Buffer:
    """One editor's buffer of one file: its whole text under the editor's version."""

    path: Path  # absolute (canonical when the file exists)
    text: str
    version: int  # the editor's version
    holder: EditorHolder


@dataclass(frozen=True)
class Held:
    """The buffer the servers see for a file, with its bytes and their content hash."""

    buffer: Buffer
    data: bytes
    hash: str

    @functools.cached_property
    def index(self) -> LineIndex:
        """Position conversion for the buffer's text (built once)."""
        return LineIndex(self.buffer.text)


class Overlay:
    """Every holder's buffers by path; the last one opened or changed is the one held."""

    def __init__(self) -> None:
        self._buffers: dict[Path, list[Buffer]] = {}  # oldest first: the last one is held
        self._held: dict[Path, Held] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._held

    def __len__(self) -> int:
        return len(self._held)

    def held(self, path: Path) -> Held | None:
        """The buffer the servers see for `path`, or None: they see the disk."""
        return self._held.get(path)

    def buffer(self, path: Path) -> Buffer | None:
        held = self._held.get(path)
        return held.buffer if held is not None else None

    def paths(self) -> list[Path]:
        return list(self._held)

    def every(self) -> dict[Path, list[Buffer]]:
        """Every holder's buffer of each held file (a copy), the one held last."""
        return {path: list(buffers) for path, buffers in self._buffers.items()}

    def holds(self, holder: EditorHolder, path: Path) -> bool:
        """Whether `holder` has a buffer of `path` (held or not)."""
        return any(b.holder is holder for b in self._buffers.get(path, ()))

    def put(self, buffer: Buffer) -> None:
        """`buffer` opened or changed: the text the servers see for its file from now on."""
        mine = [b for b in self._buffers.get(buffer.path, ()) if b.holder is not buffer.holder]
        self._buffers[buffer.path] = [*mine, buffer]
        self._hold(buffer.path)

    def close(self, holder: EditorHolder, path: Path) -> bool:
        """`holder` closed its buffer of `path`: whether the text held for it changed."""
        buffers = self._buffers.get(path, [])
        left = [b for b in buffers if b.holder is not holder]
        if len(left) == len(buffers):
            return False
        before = self._held.get(path)
        if left:
            self._buffers[path] = left
        else:
            self._buffers.pop(path, None)
        self._hold(path)
        after = self._held.get(path)
        return before is None or after is None or after.hash != before.hash

    def release(self, holder: EditorHolder) -> list[Path]:
        """`holder` disconnected: its buffers are closed; the files whose text changed."""
        mine = [p for p, bs in self._buffers.items() if any(b.holder is holder for b in bs)]
        return [path for path in mine if self.close(holder, path)]

    def _hold(self, path: Path) -> None:
        buffers = self._buffers.get(path)
        if not buffers:
            self._held.pop(path, None)
            return
        last = buffers[-1]
        current = self._held.get(path)
        if current is not None and current.buffer is last:
            return
        data = last.text.encode("utf-8", "replace")
        self._held[path] = Held(last, data, content_hash(data))
