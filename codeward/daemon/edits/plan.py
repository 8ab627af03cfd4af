"""Preparing an edit: the files it touches, checked, their new content and the diff."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeward.daemon.edits.diff import unified_diff
from codeward.daemon.edits.folders import check_links, git_dir_holding, in_git_dir
from codeward.daemon.edits.text import apply_text_edits
from codeward.daemon.edits.workspace import (
    CreateFile,
    DeleteFile,
    EditText,
    Operation,
    RenameFile,
    operations,
)
from codeward.daemon.files import DEFAULT_LIMIT, Missing, content_hash, read_file
from codeward.daemon.lsp.overlay import Buffer
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.uris import uri_to_path
from codeward.daemon.paths import is_inside, real_path
from codeward.protocol.errors import ErrorKind, ToolError

Buffers = Mapping[Path, Sequence[Buffer]]  # every editor's buffer of each file editors hold


@dataclass
class Basis:
    """The content a server computed an edit from: the documents it had open, by path,
    with their version and content hash. Files it had not opened it read from disk."""

    documents: dict[Path, tuple[int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class FileChange:
    path: Path  # canonical, inside the root
    shown: str  # root-relative
    before: bytes | None  # None: the file did not exist
    after: bytes | None  # None: the file is deleted
    mode: int | None  # permission bits to give the written file (None: the default)


@dataclass(frozen=True)
class EditPlan:
    root: Path
    changes: list[FileChange]
    edits: int  # text edits and file operations that took effect
    diff: str

    @property
    def files(self) -> list[str]:
        return [c.shown for c in self.changes]


@dataclass
class _File:
    path: Path
    shown: str
    before: bytes | None
    mode: int | None
    text: str | None  # the content as the operations so far leave it


class _Planner:
    def __init__(
        self, root: Path, encoding: Encoding, basis: Basis, limit: int, held: Buffers
    ) -> None:
        self.root = root
        self.held = held  # editors' buffers: a file one holds unsaved is never written
        self.limit = limit
        self.encoding: Encoding = encoding
        self.basis = basis
        self.files: dict[Path, _File] = {}
        self.edits = 0

    def path(self, uri: str) -> Path:
        """The canonical path of `uri`, refused unless it lies inside the root."""
        path = uri_to_path(uri)
        if path is not None:
            path = Path(real_path(path))
        if path is None or path == self.root or not is_inside(path, self.root):
            raise ToolError(
                ErrorKind.PATH_OUTSIDE_PROJECT,
                "The edit touches a file outside the project, so nothing was written; "
                "check the symbol or the server's configuration.",
            )
        if git_dir_holding(self.root, path) is not None:
            raise in_git_dir(path.relative_to(self.root).as_posix())
        return path

    def load(self, uri: str) -> _File:
        path = self.path(uri)
        file = self.files.get(path)
        if file is not None:
            return file
        shown = path.relative_to(self.root).as_posix()
        data, mode = _read(self.root, path, shown, self.limit)
        unsaved(path, shown, data, self.held)
        text: str | None = None
        if data is not None:
            expected = self.basis.documents.get(path)
            if expected is not None and content_hash(data) != expected[1]:
                raise stale(shown)
            try:
                if b"\x00" in data:
                    raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), 1, "NUL byte")
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(
                    ErrorKind.UNSUPPORTED_FILE_TYPE,
                    f"The edit touches {shown!r}, which is not a UTF-8 text file; nothing "
                    "was written.",
                    path=shown,
                ) from None
        file = self.files[path] = _File(path, shown, data, mode, text)
        return file

    def run(self, op: Operation) -> None:
        if isinstance(op, EditText):
            self.edit_text(op)
        elif isinstance(op, CreateFile):
            self.create(op)
        elif isinstance(op, RenameFile):
            self.rename(op)
        else:
            self.delete(op)

    def edit_text(self, op: EditText) -> None:
        file = self.load(op.uri)
        if file.text is None:
            raise stale(file.shown)
        expected = self.basis.documents.get(file.path)
        if op.version is not None and expected is not None and op.version != expected[0]:
            raise stale(file.shown)
        if op.edits:
            file.text = apply_text_edits(file.text, op.edits, self.encoding)
            self.edits += len(op.edits)

    def create(self, op: CreateFile) -> None:
        file = self.load(op.uri)
        if file.text is not None:
            if op.ignore_if_exists and not op.overwrite:
                return
            if not op.overwrite:
                raise _refused(f"it creates {file.shown!r}, which exists")
        if not file.path.parent.is_dir():
            raise _refused(f"it creates {file.shown!r} in a folder that does not exist")
        file.text = ""
        self.edits += 1

    def rename(self, op: RenameFile) -> None:
        old, new = self.load(op.old_uri), self.load(op.new_uri)
        if old.text is None:
            raise stale(old.shown)
        if new.text is not None and old is not new:
            if op.ignore_if_exists and not op.overwrite:
                return
            if not op.overwrite:
                raise _refused(f"it renames a file onto {new.shown!r}, which exists")
        if not new.path.parent.is_dir():
            raise _refused(f"it moves a file into a folder that does not exist ({new.shown!r})")
        if old is not new:
            new.text, new.mode, old.text = old.text, old.mode, None
        self.edits += 1

    def delete(self, op: DeleteFile) -> None:
        file = self.load(op.uri)
        if file.text is None:
            if op.ignore_if_not_exists:
                return
            raise stale(file.shown)
        file.text = None
        self.edits += 1

    def plan(self) -> EditPlan:
        changes: list[FileChange] = []
        diffs: list[str] = []
        for file in sorted(self.files.values(), key=lambda f: f.shown):
            after = None if file.text is None else file.text.encode("utf-8")
            if after == file.before:
                continue
            changes.append(FileChange(file.path, file.shown, file.before, after, file.mode))
            before_text = None if file.before is None else file.before.decode("utf-8")
            diffs.append(unified_diff(file.shown, before_text, file.text))
        return EditPlan(self.root, changes, self.edits, "".join(diffs))


def prepare(
    root: Path,
    edit: object,
    encoding: Encoding,
    basis: Basis,
    limit: int = DEFAULT_LIMIT,
    held: Buffers | None = None,
) -> EditPlan:
    """Check and compute a WorkspaceEdit on the files' current content; writes nothing.

    Raises `path_outside_project`, `stale_edit` (a file is no longer the content in
    `basis`, a document version differs, or an editor holds it with unsaved changes:
    `held`, naming the editor), `unsupported_file_type` (a binary file) or
    `lsp_error` (a malformed or impossible edit); files are read by `read_file`, at most
    `limit` bytes each.
    """
    planner = _Planner(root, encoding, basis, limit, held or {})
    ops = operations(edit)
    for op in ops:  # every path is checked before any file is read
        for uri in _uris(op):
            planner.path(uri)
    for op in ops:
        planner.run(op)
    return planner.plan()


def _uris(op: Operation) -> tuple[str, ...]:
    if isinstance(op, RenameFile):
        return (op.old_uri, op.new_uri)
    return (op.uri,)


def _read(root: Path, path: Path, shown: str, limit: int) -> tuple[bytes | None, int | None]:
    """The bytes and permission bits of a regular file, or (None, None) when it is absent."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        raise ToolError(
            ErrorKind.FILE_NOT_FOUND,
            f"The edit touches {shown!r}, which cannot be read ({exc.strerror}); nothing "
            "was written.",
            path=shown,
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise _refused(f"it treats the folder {shown!r} as a file")
    if not stat.S_ISREG(st.st_mode):
        raise _refused(f"it touches {shown!r}, which is not a regular file")
    try:
        data, opened = read_file(path, root, limit)
    except Missing:
        return None, None
    check_links(opened, shown)
    return data, stat.S_IMODE(opened.st_mode)


def stale(shown: str) -> ToolError:
    return ToolError(
        ErrorKind.STALE_EDIT,
        f"{shown!r} changed after the language server computed the edit, so nothing was "
        "written; run the tool again.",
        path=shown,
    )


def _refused(reason: str) -> ToolError:
    return ToolError(
        ErrorKind.LSP_ERROR,
        f"The language server's edit cannot be applied: {reason}; nothing was written.",
    )


def unsaved(path: Path, shown: str, data: bytes | None, buffers: Buffers) -> None:
    """`stale_edit` naming the editor when a buffer of `path` is not `data` (the disk's)."""
    for buffer in buffers.get(path, ()):
        if data is None or buffer.text.encode("utf-8", "replace") != data:
            name = buffer.holder.name
            raise ToolError(
                ErrorKind.STALE_EDIT,
                f"{shown!r} has unsaved changes in an editor ({name}), so nothing was "
                "written; ask for them to be saved or reverted, then run the tool again.",
                path=shown,
                holder=name,
            )
