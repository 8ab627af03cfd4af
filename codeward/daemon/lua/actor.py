"""The Lua sandbox actor: owns the session's runtime and runs evals one at a time.

A host call yields from the script's coroutine; the actor awaits the host's async work in its
own task and resumes the coroutine with the answer: no threads. A caller that is cancelled
cancels its eval (the coroutine is dropped; the runtime stays usable).
"""

from __future__ import annotations

from typing import Any

import trio

from codeward.daemon.config import LuaConfig
from codeward.daemon.lua.convert import call_arguments, git_arguments
from codeward.daemon.lua.host import LuaHost
from codeward.daemon.lua.runtime import HostRequest, Sandbox
from codeward.protocol.errors import ErrorKind, ToolError


class _Job:
    """One `eval` handed to the actor; the caller waits on `done`."""

    def __init__(self, source: str, args: Any, host: LuaHost) -> None:
        self.source = source
        self.args = args
        self.host = host
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class LuaActor:
    """One session's Lua sandbox. Start it with `await nursery.start(actor.run)`."""

    def __init__(self, limits: LuaConfig) -> None:
        self._limits = limits
        self._send, self._receive = trio.open_memory_channel[_Job](0)
        self._sandbox: Sandbox | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take evals from the channel and run them, one at a time, until cancelled."""
        self._sandbox = Sandbox(self._limits)
        task_status.started()
        async with self._receive:
            async for job in self._receive:
                try:
                    await self._serve(job)
                finally:
                    if not job.done.is_set():  # the actor itself is being cancelled
                        job.error = _stopped()
                        job.done.set()

    async def eval(self, source: str, args: Any, host: LuaHost) -> Any:
        """Run `source` with `args`; its result as JSON-able data, or raise ToolError."""
        job = _Job(source, args, host)
        try:
            await self._send.send(job)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise _stopped() from None
        try:
            await job.done.wait()
        except BaseException:
            # Our caller is going away: abort the eval and wait until the actor let go of it,
            # so nothing of this eval runs after we return.
            job.scope.cancel()
            with trio.CancelScope(shield=True):
                await job.done.wait()
            raise
        if job.error is not None:
            raise job.error
        return job.value

    async def _serve(self, job: _Job) -> None:
        if not job.scope.cancel_called:
            with job.scope:
                try:
                    job.value = await self._evaluate(job)
                except Exception as exc:  # a ToolError, or a host call's own failure
                    job.error = exc
        job.done.set()

    async def _evaluate(self, job: _Job) -> Any:
        assert self._sandbox is not None
        sandbox = self._sandbox
        try:
            with trio.move_on_after(self._limits.wall_seconds):
                return await self._drive(sandbox, job)
            sandbox.broken = True
            raise ToolError(
                ErrorKind.LUA_TIMEOUT,
                f"The script ran longer than {self._limits.wall_seconds:g} s; make it do less "
                "or raise lua.wall_seconds in the config.",
                limit="wall_seconds",
            )
        finally:
            if sandbox.broken:
                self._sandbox = Sandbox(self._limits)
            else:
                sandbox.reset()

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
