"""The Lua sandbox actor: a pool of runtimes, one eval at a time in each.

An eval runs in its caller's task, in a runtime it takes from the pool: an idle one, else a
new one while fewer than `lua.runtimes` exist, else it waits for one to come back. So evals
of a session run concurrently (a git write waiting for the user's approval, or a slow git
command, holds only its own runtime), and an eval costs no hop to another task. One runtime
stays warm; the others are retired after `RETIRE_AFTER` seconds without work.

A host call yields from the script's coroutine; the eval awaits the host's async work and
resumes the coroutine with the answer: no threads. A caller that is cancelled cancels its
eval (the coroutine is dropped; the runtime stays usable). A runtime that hit a limit is
thrown away and a new one takes its place. When the actor stops, the evals still running
fail (`cancelled`), and it returns once they have let go of their runtimes.
"""

from __future__ import annotations

import math
from typing import Any

import trio

from codeward.daemon.config import LuaConfig
from codeward.daemon.lua.convert import call_arguments, git_arguments
from codeward.daemon.lua.host import LuaHost
from codeward.daemon.lua.runtime import HostRequest, Sandbox
from codeward.protocol.errors import ErrorKind, ToolError

RETIRE_AFTER = 60.0  # seconds an extra runtime stays idle before it is dropped


class LuaActor:
    """One session's Lua sandboxes. Start it with `await nursery.start(actor.run)`."""

    def __init__(self, limits: LuaConfig) -> None:
        self._limits = limits
        self._idle: list[tuple[Sandbox, float]] = []  # runtimes and when they became idle
        self._queue = trio.lowlevel.ParkingLot()  # evals waiting for a runtime
        self._running: set[trio.CancelScope] = set()  # one per eval holding a runtime
        self._let_go = trio.Event()  # set when the last running eval let go (stopping)
        self._wake = trio.Event()  # an extra runtime became idle: time its retirement
        self._retire_at = math.inf  # when the retirer next looks
        self._open = False  # evals can run: `run` has started and not stopped
        self._stopped = False  # `run` has stopped: evals fail
        self.workers = 0  # runtimes alive, idle or running an eval
        self.built = 0  # runtimes made so far (one per new runtime, plus one per limit hit)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the runtimes until cancelled; then every eval still running fails."""
        self._open = True
        self.workers += 1
        self._idle.append((self._new_sandbox(), trio.current_time()))
        self._queue.unpark_all()  # evals that came before the actor started
        task_status.started()
        try:
            await self._retire_idle()
        finally:
            self._open, self._stopped = False, True
            self._queue.unpark_all()  # evals waiting for a runtime fail
            for scope in self._running:
                scope.cancel()
            if self._running:
                with trio.CancelScope(shield=True):
                    await self._let_go.wait()
            self.workers -= len(self._idle)
            self._idle.clear()

    async def _retire_idle(self) -> None:
        """Drop runtimes (beyond one) idle for `RETIRE_AFTER` seconds, oldest first."""
        while True:
            now = trio.current_time()
            while self.workers > 1 and self._idle and self._idle[0][1] + RETIRE_AFTER <= now:
                self._idle.pop(0)
                self.workers -= 1
            self._retire_at = math.inf
            if self.workers > 1 and self._idle:
                self._retire_at = self._idle[0][1] + RETIRE_AFTER
            self._wake = trio.Event()
            with trio.move_on_at(self._retire_at):
                await self._wake.wait()

    async def eval(self, source: str, args: Any, host: LuaHost, *, constant: bool = False) -> Any:
        """Run `source` with `args`; its result as JSON-able data, or raise ToolError.

        `constant`: `source` is one of the daemon's own fixed chunks (see `Sandbox.start`),
        whose only wait is its host call: that call's own limits bound it (git's timeout, the
        approval's), not `lua.wall_seconds`, which would fail a write git had made."""
        await trio.lowlevel.checkpoint_if_cancelled()
        sandbox = await self._acquire()
        # One scope: the eval's wall-time limit, and what the actor cancels when it stops.
        wall = math.inf if constant else self._limits.wall_seconds
        scope = trio.CancelScope(relative_deadline=wall)
        self._running.add(scope)
        try:
            with scope:
                try:
                    return await self._drive(sandbox, source, args, host, constant)
                finally:
                    if scope.cancel_called and not self._stopped:  # the wall-time limit
                        sandbox.broken = True
                    self._release(sandbox)
            if self._stopped:
                raise _stopped()  # the actor stopped and cancelled this eval
            raise ToolError(
                ErrorKind.LUA_TIMEOUT,
                f"The script ran longer than {self._limits.wall_seconds:g} s; make it do less "
                "or raise lua.wall_seconds in the config.",
                limit="wall_seconds",
            )
        finally:
            self._running.discard(scope)
            if self._stopped and not self._running:
                self._let_go.set()

    async def _acquire(self) -> Sandbox:
        """An idle runtime, a new one while there is room, else the next one let go."""
        while True:
            if self._stopped:
                raise _stopped()
            if not self._open:  # not started yet
                await self._queue.park()
                continue
            if self._idle:
                return self._idle.pop()[0]  # the one used last: its memory is warm
            if self.workers < max(1, self._limits.runtimes):
                self.workers += 1
                return self._new_sandbox()
            await self._queue.park()

    def _release(self, sandbox: Sandbox) -> None:
        """Back to the pool after an eval: reset, or replaced when it hit a limit."""
        if self._stopped:
            self.workers -= 1
            return
        if sandbox.broken:
            sandbox = self._new_sandbox()
        else:
            sandbox.reset()
        self._idle.append((sandbox, trio.current_time()))
        if self.workers > 1 and self._retire_at == math.inf:
            self._wake.set()  # an extra runtime is idle: the retirer times it
        self._queue.unpark()

    def _new_sandbox(self) -> Sandbox:
        self.built += 1
        return Sandbox(self._limits)

    async def _drive(
        self, sandbox: Sandbox, source: str, args: Any, host: LuaHost, constant: bool
    ) -> Any:
        step = sandbox.start(source, args, constant=constant)
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
                value = await _dispatch(host, step)
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
