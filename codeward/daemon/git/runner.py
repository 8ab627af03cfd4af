"""Run one git process: hardened argv and environment, no shell, its own process group,
a timeout, an output cap, and the whole group killed on timeout or cancellation.

The process is started on the event loop itself, not from a worker thread as
`trio.lowlevel.open_process` does: CPython's `subprocess.Popen` forks with vfork(), so the
loop is held only until the child has called exec (tens of microseconds, not a copy of the
daemon), and the hop to a thread and back, which cost more than the start itself, is gone.
The child is awaited through a pidfd, as trio does.
"""

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
from codeward.daemon.reads import receive_some
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
    env = {name: value for name in PASSED_ENV if (value := source.get(name)) is not None}
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


_found: dict[str | None, str] = {}  # PATH -> the git it finds


def find_git(env: dict[str, str]) -> str:
    """The git on `env`'s PATH; remembered per PATH while it stays executable."""
    path = env.get("PATH")
    git = _found.get(path)
    if git is not None and os.access(git, os.X_OK):
        return git
    git = shutil.which("git", path=path)
    if git is not None:
        _found[path] = git
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
    while chunk := await receive_some(stream):
        sink.add(chunk)


async def _feed(stream: trio.abc.SendStream | None, data: bytes) -> None:
    """Write `data` and close; a process that exits without reading it all is its business."""
    if stream is None:
        return
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with stream:
            await stream.send_all(data)


class Child:
    """A process started by `spawn`: its pipes as trio streams, its exit awaited on a pidfd.

    It has what `process_groups.stop_group` needs of a `trio.Process`: `pid`, `returncode`
    and `wait()`."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream | None,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self._pidfd = os.pidfd_open(popen.pid)  # before any wait, so never a reused pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """The exit status, once the process has exited (it is reaped then)."""
        if self._popen.returncode is None:
            await trio.lowlevel.wait_readable(self._pidfd)  # readable once it has exited
            self._popen.wait()  # reaps at once
        return self._popen.wait()

    def close(self) -> None:
        """Close the pipes and the pidfd (the process must have been reaped); no checkpoint."""
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1


def spawn(argv: Sequence[str], *, cwd: Path, env: dict[str, str], stdin: bool) -> Child:
    """Start `argv` as the leader of a new session (so of its own process group), with
    pipes for stdout and stderr, and for stdin when `stdin` (else /dev/null); all other
    descriptors closed in the child."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if stdin else (subprocess.DEVNULL, -1)
    # our ends, owned by their streams from here on
    stdout, stderr = trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r)
    writer = trio.lowlevel.FdStream(in_w) if stdin else None
    ours = [stdout, stderr] if writer is None else [stdout, stderr, writer]
    try:
        popen = subprocess.Popen(
            list(argv), cwd=str(cwd), env=env, stdin=in_r, stdout=out_w, stderr=err_w,
            start_new_session=True,
        )  # fmt: skip
    except BaseException:
        for stream in ours:
            stream.close()
        raise
    finally:
        for fd in (out_w, err_w, in_r):
            if fd >= 0:
                os.close(fd)
    try:
        return Child(popen, writer, stdout, stderr)
    except BaseException:  # no pidfd (out of descriptors): nothing of it may stay behind
        signal_group(popen.pid, signal.SIGKILL)
        popen.wait()
        for stream in ours:
            stream.close()
        raise


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
    child = spawn(argv, cwd=cwd, env=env, stdin=stdin is not None)
    guardian.register(child.pid)  # killed with the daemon, however it dies
    out, err = _Capped(output_bytes), _Capped(STDERR_BYTES)
    try:
        with trio.move_on_after(timeout) as deadline:
            async with trio.open_nursery() as nursery:
                readers_done = trio.Event()
                open_pipes = [2]

                async def read(stream: trio.lowlevel.FdStream, sink: _Capped) -> None:
                    await _drain(stream, sink)
                    open_pipes[0] -= 1
                    if not open_pipes[0]:
                        readers_done.set()

                nursery.start_soon(read, child.stdout, out)
                nursery.start_soon(read, child.stderr, err)
                if stdin is not None:
                    nursery.start_soon(_feed, child.stdin, stdin)
                await child.wait()
                with trio.move_on_after(EOF_GRACE):
                    await readers_done.wait()
                if not readers_done.is_set():
                    signal_group(child.pid, signal.SIGKILL)  # a straggler holds the pipes
    finally:
        with trio.CancelScope(shield=True):
            # Also after a clean exit: what the leader left running in its group goes.
            await stop_group(child, KILL_GRACE, name="git")
            child.close()
    timed_out = deadline.cancelled_caught
    code = child.returncode if child.returncode is not None else -1
    return Completed(code, out.value(), err.value(), out.truncated, timed_out)
