"""Run one git process: hardened argv and environment, no shell, its own process group,
a timeout, an output cap, and the whole group killed on timeout or cancellation."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.process_groups import signal_group, stop_group
from codeward.protocol.errors import ErrorKind, ToolError

# Later `-c` wins over the repository's config, and reaches child git processes too.
HARDENED_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "maintenance.auto=false",
    "gc.auto=0",
    "core.pager=cat",
    "protocol.ext.allow=never",
    "protocol.fd.allow=never",
)
# Subcommands that take `--no-ext-diff --no-textconv`.
DIFF_COMMANDS = frozenset({"diff", "log", "show"})
PASSED_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "XDG_CONFIG_HOME", "SSH_AUTH_SOCK", "GNUPGHOME",
    "TMPDIR", "TZ",
)  # fmt: skip
FIXED_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ASKPASS": "",
    "LC_ALL": "C.UTF-8",
    "LANG": "C.UTF-8",
}
STDERR_BYTES = 64 * 1024
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
EOF_GRACE = 1.0  # seconds a straggler may hold git's pipes after git exits


@dataclass(frozen=True)
class Completed:
    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool


def git_env(*, read_only: bool, base: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: no inherited GIT_* variables, prompts and pagers off."""
    source = os.environ if base is None else base
    env = {name: source[name] for name in PASSED_ENV if name in source}
    env.setdefault("PATH", os.defpath)
    env.update(FIXED_ENV)
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def git_argv(git: str, subcommand: str, args: Sequence[str]) -> list[str]:
    """`git -c ... subcommand [--no-ext-diff --no-textconv] args`."""
    argv = [git]
    for setting in HARDENED_CONFIG:
        argv += ["-c", setting]
    argv.append(subcommand)
    if subcommand in DIFF_COMMANDS:
        argv += ["--no-ext-diff", "--no-textconv"]
    argv += args
    return argv


def find_git(env: dict[str, str]) -> str:
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        raise ToolError(ErrorKind.GIT_FAILED, "git is not installed; install git and retry.")
    return git


class _Capped:
    """Bytes up to a cap; the rest is read and dropped, so git never blocks on a full pipe."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, chunk: bytes | bytearray) -> None:
        room = self.cap - self.size
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        if chunk:
            self.chunks.append(bytes(chunk))
            self.size += len(chunk)

    def value(self) -> bytes:
        return b"".join(self.chunks)


async def _drain(stream: trio.abc.ReceiveStream | None, sink: _Capped) -> None:
    if stream is None:
        return
    while chunk := await stream.receive_some(65536):
        sink.add(chunk)


async def _feed(stream: trio.abc.SendStream | None, data: bytes) -> None:
    """Write `data` and close; a process that exits without reading it all is its business."""
    if stream is None:
        return
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with stream:
            await stream.send_all(data)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    output_bytes: int,
    stdin: bytes | None = None,
) -> Completed:
    """Run `argv` to completion (or its timeout), given `stdin` (else nothing) on its
    standard input; cancellation kills its process group."""
    proc = await trio.lowlevel.open_process(
        list(argv),
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    guardian.register(proc.pid)  # killed with the daemon, however it dies
    out, err = _Capped(output_bytes), _Capped(STDERR_BYTES)
    try:
        with trio.move_on_after(timeout) as deadline:
            async with trio.open_nursery() as nursery:
                readers_done = trio.Event()

                async def read_all() -> None:
                    async with trio.open_nursery() as readers:
                        readers.start_soon(_drain, proc.stdout, out)
                        readers.start_soon(_drain, proc.stderr, err)
                    readers_done.set()

                nursery.start_soon(read_all)
                if stdin is not None:
                    nursery.start_soon(_feed, proc.stdin, stdin)
                await proc.wait()
                with trio.move_on_after(EOF_GRACE):
                    await readers_done.wait()
                if not readers_done.is_set():
                    signal_group(proc.pid, signal.SIGKILL)  # a straggler holds the pipes
    finally:
        with trio.CancelScope(shield=True):
            # Also after a clean exit: what the leader left running in its group goes.
            await stop_group(proc, KILL_GRACE, name="git")
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    await stream.aclose()
    timed_out = deadline.cancelled_caught
    code = proc.returncode if proc.returncode is not None else -1
    return Completed(code, out.value(), err.value(), out.truncated, timed_out)
