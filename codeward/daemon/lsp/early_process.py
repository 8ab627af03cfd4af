"""The processes `lsp.early` started, in the daemon's trio run: offered to the sessions'
servers (`take`, which `ServerProcess.spawn` asks first) and stopped when nobody takes them
within `KEEP` seconds.

Each was sent its `initialize` when it started (id `early_initialize.INITIALIZE_ID`); once
offered, its `early_conversation.Conversation` sends `initialized` and its settings when it
answers, and answers its `workspace/configuration` requests; every other frame (the answer
too) waits for the session. `take` hands a process over only when the params the session
would send are those it was sent (normalised), its settings too once they went out, and
when it is still alive; otherwise it stops the process (saying why in the log) and the
session starts its own."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from codeward.daemon import guardian
from codeward.daemon.config import Config
from codeward.daemon.lsp.early import Key, Spawned, key, spawn
from codeward.daemon.lsp.early_conversation import Conversation
from codeward.daemon.lsp.early_initialize import INITIALIZE_ID, differences, normalised
from codeward.daemon.process_groups import stop_group

log = logging.getLogger(__name__)

KEEP = 30.0  # seconds a process started early waits to be taken before it is stopped
STOP_GRACE = 2.0

# processes started early, offered and not taken yet
_waiting: dict[Key, EarlyProcess] = {}


class EarlyProcess:
    """A process `early.spawn` started, as `ServerProcess` and `process_groups.stop_group`
    use a `trio.Process`: trio streams on its pipes, `pid`, `returncode`, `wait()` (on a
    pidfd; its Popen is told the exit status, so it never reaps a reused pid)."""

    def __init__(self, spawned: Spawned) -> None:
        self.name = spawned.name
        self.initialize: Any = spawned.initialize  # the params of the initialize it was sent
        self.pid = spawned.popen.pid
        self._popen = spawned.popen
        self._pidfd = os.pidfd_open(self.pid)
        self._status: int | None = None
        self._waiter = trio.Lock()
        stdin, stdout, stderr = spawned.fds
        self.stdin: trio.abc.SendStream | None = trio.lowlevel.FdStream(stdin)
        self.stdout: trio.abc.ReceiveStream | None = trio.lowlevel.FdStream(stdout)
        self.stderr: trio.abc.ReceiveStream | None = trio.lowlevel.FdStream(stderr)
        self.conversation = Conversation(self.name, self.stdin, self.stdout, spawned.settings)

    async def wait(self) -> int:
        """The exit status, once the process has exited (it is reaped then); any number of
        tasks may wait (one at a time on the pidfd)."""
        async with self._waiter:
            if self._pidfd >= 0:
                if self.returncode is None:
                    await trio.lowlevel.wait_readable(self._pidfd)  # readable once it exited
                os.close(self._pidfd)  # (only here: no other task waits on it now)
                self._pidfd = -1
        status = self.returncode
        assert status is not None  # (it has exited: the property reaps it)
        return status

    @property
    def returncode(self) -> int | None:
        """The exit status if the process has exited (it is reaped then), else None."""
        if self._status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status = self._popen.returncode = os.waitstatus_to_exitcode(status)
        return self._status

    async def stop(self) -> None:
        """Stop its whole group and close our ends of its pipes. Call it shielded."""
        await stop_group(self, STOP_GRACE, name=f"{self.name} (started early)")
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                await stream.aclose()


@dataclass
class Handover:
    """A process started early, taken: what the session's connection reads first, and
    whether `initialized` went out (its answer to `initialize` is then in `unread`)."""

    process: EarlyProcess
    initialize_id: int  # the id of the initialize it was sent
    initialized: bool
    unread: bytes


async def take(
    command: list[str], cwd: Path, env: dict[str, str], initialize: dict[str, Any], settings: Any
) -> Handover | None:
    """The process started early with exactly this command, directory and environment,
    and sent an `initialize` with these params (and these settings, if they went out),
    now the caller's; or None. A process started that way but sent other params or
    settings, or gone already, is stopped."""
    process = _waiting.pop(key(command, cwd, env), None)
    if process is None:
        return None
    unread = b""
    with trio.CancelScope(shield=True):  # (it is the caller's now: it must get it)
        unread = await process.conversation.stop()
    initialized = process.conversation.initialized
    why = ""
    if process.returncode is not None:
        why = f"it exited with code {process.returncode} before it was taken"
    elif process.conversation.failed:
        why = "reading what it wrote failed (see above)"
    else:
        differ = differences(process.initialize, normalised(initialize))
        if differ:
            why = f"it was sent other initialize params ({', '.join(differ)} differ)"
        elif initialized and process.conversation.settings != normalised(settings):
            why = "it was sent other settings"
    if not why:
        return Handover(process, INITIALIZE_ID, initialized, unread)
    log.info("%s (pid %d) started early is not used: %s", process.name, process.pid, why)
    with trio.CancelScope(shield=True):
        await process.stop()
    return None


async def keep(spawned: list[Spawned], keep_for: float = KEEP) -> None:
    """Offer the processes `early.spawn` started (`take`); stop those not taken after
    `keep_for` seconds, or when cancelled. Call it once the guardian runs."""
    offered: list[tuple[Key, EarlyProcess]] = []
    extra: list[EarlyProcess] = []  # the same start asked for twice: the first one serves
    for one in spawned:
        guardian.register(one.popen.pid)
        process = EarlyProcess(one)
        if one.key in _waiting:
            extra.append(process)
        else:
            _waiting[one.key] = process
            offered.append((one.key, process))
            log.debug("%s offered (pid %d)", one.name, process.pid)
    try:
        with trio.CancelScope(shield=True):
            for process in extra:
                await process.stop()
        async with trio.open_nursery() as nursery:
            for _, process in offered:
                nursery.start_soon(process.conversation.run)
            await trio.sleep(keep_for)
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            for one_key, process in offered:
                if _waiting.get(one_key) is process:  # nobody took it
                    del _waiting[one_key]
                    await process.stop()


async def start_servers(root: Path, config: Config, keep_for: float = KEEP) -> None:
    """`early.spawn` (in a thread) and `keep`: what the daemon runs when a root is named
    while its sessions still load."""
    try:
        spawned = await trio.to_thread.run_sync(spawn, root, config)
    except Exception:  # only a head start: the session starts its servers anyway
        log.exception("starting %s's servers early failed", root)
        return
    await keep(spawned, keep_for)
