"""The one task that writes a root's files: edits and git writes run there one at a time, in
the order they arrive, so two edits of one file never interleave (the second is
`stale_edit`: its file is no longer the content it was computed from) and two git writes
never meet on `.git/index.lock`."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import trio

from codeward.daemon.edits.atomic import commit, make_folders
from codeward.daemon.edits.follow import Buffers, Settled, follow
from codeward.daemon.edits.plan import Basis, EditPlan, prepare
from codeward.daemon.files import DEFAULT_LIMIT
from codeward.daemon.lsp.positions import Encoding
from codeward.protocol.errors import ErrorKind, ToolError

FilesChanged = Callable[[Sequence[Path], Sequence[Path]], None]  # (changed, of them created)


def _none() -> Buffers:
    return {}


T = TypeVar("T")


class _Job(Generic[T]):
    """One piece of writing handed to the writer; the caller waits on `done`."""

    def __init__(self, work: Callable[[], Awaitable[T]]) -> None:
        self.work = work
        self.done = trio.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


class RootWriter:
    """Owns the writing of one root's files. Start it with `await nursery.start(w.run)`."""

    def __init__(
        self,
        root: Path,
        on_changed: FilesChanged,
        limit: int = DEFAULT_LIMIT,
        buffers: Callable[[], Buffers] = _none,
        settled: Settled | None = None,
    ) -> None:
        self.root = root
        self.limit = limit  # the largest file an edit may read
        self.on_changed = on_changed
        self.buffers = buffers  # editors' buffers now (`service.editor_buffers`)
        self.settled = settled  # waits until editors' buffers followed an edit
        self._send, self._receive = trio.open_memory_channel[_Job[Any]](0)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Do the writing handed over, one piece at a time, until cancelled."""
        async with self._receive:
            task_status.started()
            async for job in self._receive:
                # Writing, once begun, finishes: a file is never left half-done.
                with trio.CancelScope(shield=True):
                    try:
                        job.value = await job.work()
                    except Exception as exc:  # a ToolError (stale_edit, git_failed...)
                        job.error = exc
                    finally:
                        job.done.set()

    async def exclusive(self, work: Callable[[], Awaitable[T]]) -> T:
        """`await work()` in the writer's task, when no other writing of the root runs.

        Shielded: once asked, the work is done even if the caller goes away.
        """
        job = _Job(work)
        with trio.CancelScope(shield=True):
            try:
                await self._send.send(job)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _stopped() from None
            await job.done.wait()
        if job.error is not None:
            raise job.error
        return cast(T, job.value)

    async def write(
        self, edit: Any, encoding: Encoding, basis: Basis, *, folder: Path | None = None
    ) -> EditPlan:
        """Prepare `edit` against the files as they are now and write it; the plan written.
        `folder` (inside the root) is made first with its missing parents, and removed
        again when the edit is not written. A file an editor holds with unsaved changes
        refuses the edit (`stale_edit`); the editors holding the files written get the
        same edit afterwards, in the caller's task (`follow.follow`)."""
        held: Buffers = {}

        async def work() -> EditPlan:
            nonlocal held
            root = self.root
            held = self.buffers()  # in the writer's task: the buffers as the write sees them
            plan = await trio.to_thread.run_sync(
                _prepare_and_commit, root, edit, encoding, basis, self.limit, folder, held
            )
            if plan.changes:
                created = [c.path for c in plan.changes if c.before is None]
                self.on_changed([c.path for c in plan.changes], created)
            return plan

        plan = await self.exclusive(work)
        if held and plan.changes:
            await follow(plan.changes, held, self.settled)
        return plan


def _prepare_and_commit(
    root: Path,
    edit: Any,
    encoding: Encoding,
    basis: Basis,
    limit: int,
    folder: Path | None,
    held: Buffers,
) -> EditPlan:
    made = make_folders(root, folder) if folder is not None else []
    try:
        plan = prepare(root, edit, encoding, basis, limit, held)
        if plan.changes:
            commit(plan)
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return plan


def _stopped() -> ToolError:
    return ToolError(
        ErrorKind.CANCELLED,
        "The session stopped before the change was made, so nothing was written; open the "
        "session again and retry.",
    )
