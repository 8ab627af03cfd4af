"""The one task that writes a root's files: edits are prepared and committed there one at a
time, in the order they arrive, so two edits of one file never interleave (the second is
`stale_edit`: its file is no longer the content it was computed from)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.edits.atomic import commit
from codeward.daemon.edits.plan import Basis, EditPlan, prepare
from codeward.daemon.lsp.positions import Encoding
from codeward.protocol.errors import ErrorKind, ToolError

FilesChanged = Callable[[Sequence[Path]], None]


class _Write:
    """One edit handed to the writer; the caller waits on `done`."""

    def __init__(self, edit: Any, encoding: Encoding, basis: Basis) -> None:
        self.edit = edit
        self.encoding: Encoding = encoding
        self.basis = basis
        self.done = trio.Event()
        self.plan: EditPlan | None = None
        self.error: BaseException | None = None


def _prepare_and_commit(root: Path, write: _Write) -> EditPlan:
    plan = prepare(root, write.edit, write.encoding, write.basis)
    if plan.changes:
        commit(plan)
    return plan


class RootWriter:
    """Owns the writing of one root's files. Start it with `await nursery.start(w.run)`."""

    def __init__(self, root: Path, on_changed: FilesChanged) -> None:
        self.root = root
        self.on_changed = on_changed
        self._send, self._receive = trio.open_memory_channel[_Write](0)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write the edits handed over, one at a time, until cancelled."""
        async with self._receive:
            task_status.started()
            async for write in self._receive:
                try:
                    # A file edit, once begun, finishes (the thread cannot be stopped anyway).
                    with trio.CancelScope(shield=True):
                        await self._write(write)
                finally:
                    if not write.done.is_set():
                        write.error = _stopped()
                        write.done.set()

    async def _write(self, write: _Write) -> None:
        try:
            write.plan = await trio.to_thread.run_sync(_prepare_and_commit, self.root, write)
        except Exception as exc:  # a ToolError (stale_edit...), or a bug to report as one
            write.error = exc
        else:
            if write.plan.changes:
                self.on_changed([c.path for c in write.plan.changes])
        write.done.set()

    async def write(self, edit: Any, encoding: Encoding, basis: Basis) -> EditPlan:
        """Prepare `edit` against the files as they are now and write it; the plan written.

        Shielded: once asked, the edit is written (or refused) even if the caller goes away.
        """
        job = _Write(edit, encoding, basis)
        with trio.CancelScope(shield=True):
            try:
                await self._send.send(job)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _stopped() from None
            await job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.plan is not None
        return job.plan


def _stopped() -> ToolError:
    return ToolError(
        ErrorKind.CANCELLED,
        "The session stopped before the edit was written, so nothing was written; open the "
        "session again and retry.",
    )
