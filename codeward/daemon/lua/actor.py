"""The Lua sandbox actor: a pool of runtimes, each owned by one worker task, one eval each.

Evals of a session run concurrently: an eval goes to an idle worker, and a new worker (with
its own runtime) starts while fewer than `lua.runtimes` exist, so a git write waiting for
the user's approval, or a slow git command, holds only its own runtime. Beyond that many,
evals wait for a worker. One worker stays warm; the others exit after `RETIRE_AFTER`
seconds without work.

A host call yields from the script's coroutine; the worker awaits the host's async work in
its own task and resumes the coroutine with the answer: no threads. A caller that is
cancelled cancels its eval (the coroutine is dropped; the runtime stays usable). A runtime
that hit a limit is thrown away and its worker makes a new one.
"""

from __future__ import annotations

from typing import Any

import trio

from codeward.daemon.config import LuaConfig
from codeward.daemon.lua.convert import call_arguments, git_arguments
from codeward.daemon.lua.host import LuaHost
from codeward.daemon.lua.runtime import HostRequest, Sandbox
from codeward.protocol.errors import ErrorKind, ToolError

RETIRE_AFTER = 60.0  # seconds an extra worker waits for work before it exits


class _Job:
    """One `eval` handed to a worker; the caller waits on `done`."""

    def __init__(self, source: str, args: Any, host: LuaHost) -> None:
        self.source = source
        self.args = args
        self.host = host
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class LuaActor:
    """One session's Lua sandboxes. Start it with `await nursery.start(actor.run)`."""

    def __init__(self, limits: LuaConfig) -> None:
        self._limits = limits
        self._send, self._receive = trio.open_memory_channel[_Job](0)
        self._nursery: trio.Nursery | None = None
        self.workers = 0  # worker tasks alive, each owning one runtime
        self.built = 0  # runtimes made so far (one per worker, plus one per limit hit)
        self._free = 0  # idle workers minus the evals handed over and not yet taken

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the workers until cancelled; then every eval still running fails."""
        try:
            async with self._receive, trio.open_nursery() as nursery:
                self._nursery = nursery
                self._spawn(warm=True)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None

    async def eval(self, source: str, args: Any, host: LuaHost) -> Any:
        """Run `source` with `args`; its result as JSON-able data, or raise ToolError."""
        job = _Job(source, args, host)
        room = self.workers < max(1, self._limits.runtimes)
        if self._free <= 0 and room and self._nursery is not None:
            self._spawn(warm=False)
        self._free -= 1
        try:
            await self._send.send(job)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._free += 1
            raise _stopped() from None
        except BaseException:
            self._free += 1  # cancelled while waiting for a worker: nothing ran
            raise
        try:
            await job.done.wait()
        except BaseException:
            # Our caller is going away: abort the eval and wait until the worker let go of
            # it, so nothing of this eval runs after we return.
            job.scope.cancel()
            with trio.CancelScope(shield=True):
                await job.done.wait()
            raise
        if job.error is not None:
            raise job.error
        return job.value

    def _spawn(self, *, warm: bool) -> None:
        assert self._nursery is not None
        self.workers += 1
        self._free += 1
        self._nursery.start_soon(self._worker, warm)

    def _new_sandbox(self) -> Sandbox:
        self.built += 1
        return Sandbox(self._limits)

    async def _worker(self, warm: bool) -> None:
        """Own one runtime; take evals one at a time until cancelled or idle too long."""
        sandbox = self._new_sandbox()
        try:
            while True:
                job: _Job | None = None
                with trio.move_on_after(float("inf") if warm else RETIRE_AFTER):
                    try:
                        job = await self._receive.receive()
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        return
                if job is None:
                    if self._free >= 1:  # no eval waits for a worker: retire
                        return
                    continue
                try:
                    sandbox = await self._serve(sandbox, job)
                finally:
                    self._free += 1
                    if not job.done.is_set():  # the actor itself is being cancelled
                        job.error = _stopped()
                        job.done.set()
        finally:
            self.workers -= 1
            self._free -= 1

    async def _serve(self, sandbox: Sandbox, job: _Job) -> Sandbox:
        """Run one job; the runtime to use next (a new one when this one hit a limit)."""
        if not job.scope.cancel_called:
            with job.scope:
                try:
                    job.value = await self._evaluate(sandbox, job)
                except Exception as exc:  # a ToolError, or a host call's own failure
                    job.error = exc
        job.done.set()
        if sandbox.broken:
            return self._new_sandbox()
        sandbox.reset()
        return sandbox

    async def _evaluate(self, sandbox: Sandbox, job: _Job) -> Any:
        with trio.move_on_after(self._limits.wall_seconds):
            return await self._drive(sandbox, job)
        sandbox.broken = True
        raise ToolError(
            ErrorKind.LUA_TIMEOUT,
            f"The script ran longer than {self._limits.wall_seconds:g} s; make it do less "
            "or raise lua.wall_seconds in the config.",
            limit="wall_seconds",
        )

    async def _drive(self, sandbox: Sandbox, job: _Job) -> Any:
        step = sandbox.start(job.source, job.args)
        calls = 0
        while isinstance(step, HostRequest):
            calls += 1
            if calls > self._limits.host_calls:
                sandbox.broken = True
                raise ToolError(
                    ErrorKind.LUA_ERROR,
                    f"The script made more than {self._limits.host_calls} host calls; make "
                    "fewer calls per eval or raise lua.host_calls in the config.",
                    limit="host_calls",
                )
            try:
                value = await _dispatch(job.host, step)
            except ToolError as exc:
                step = sandbox.throw(exc)
            else:
                step = sandbox.resume(value)
        return step.value


async def _dispatch(host: LuaHost, request: HostRequest) -> Any:
    if request.name == "git":
        subcommand, args, opts = git_arguments(request.payloads)
        return await host.git(subcommand, args, opts)
    if request.name == "call":
        tool, arguments = call_arguments(request.payloads)
        return await host.call(tool, arguments)
    host.log(request.payloads[0].decode("utf-8", "replace"))
    return None


def _stopped() -> ToolError:
    return ToolError(
        ErrorKind.CANCELLED,
        "The session's Lua sandbox has stopped; open the session again and retry.",
    )
