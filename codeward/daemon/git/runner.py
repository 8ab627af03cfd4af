"""Run one git process: hardened argv and environment, no shell, its own process group,
a timeout, an output cap, and the whole group killed on timeout or cancellation.

The process is started on the event loop itself, not from a worker thread as
`trio.lowlevel.open_process` does: CPython's `subprocess.Popen` forks with vfork(), so the
loop is held only until the child has called exec (tens of microseconds, not a copy of the
daemon), and the hop to a thread and back, which cost more than the start itself, is gone.

One task runs the process: its stdout and stdin pipes and a pidfd (readable once it has
exited) go into an epoll set of their own, and trio's loop waits on that one descriptor. Its
stderr goes to a file in memory, sealed at the stderr cap, read once it has exited. No
nursery, no task per pipe, one registration with the loop per wait.
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.process_groups import group_gone, signal_group, stop_group
from codeward.daemon.reads import read_available
from codeward.daemon.reaper import Started
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
PIPE_CHUNK = 65536  # bytes written to the child's stdin at a time


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


class Child:
    """A process started by `spawn`: our ends of its stdin and stdout pipes (non-blocking
    descriptors, -1 for none), the file its stderr goes to, its exit awaited on a pidfd, and
    the clock ticks its start lies between.

    It has what `process_groups.stop_group` needs of a `trio.Process`: `pid`, `returncode`
    and `wait()`."""

    def __init__(
        self, popen: subprocess.Popen[bytes], fds: tuple[int, int, int], started: Started
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin, self.stdout, self.stderr = fds
        self.started = started
        self.pidfd = os.pidfd_open(popen.pid)  # before any wait, so never a reused pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """The exit status, once the process has exited (it is reaped then)."""
        if self._popen.returncode is None:
            await trio.lowlevel.wait_readable(self.pidfd)  # readable once it has exited
        return self.reap()

    def poll(self) -> int | None:
        """The exit status if the process has exited (it is reaped then), else None."""
        return self._popen.poll()

    def reap(self) -> int:
        """The exit status of the process, which has exited (its pidfd is readable)."""
        return self._popen.wait()  # at once: it has exited

    def stderr_bytes(self) -> bytes:
        """What it wrote to stderr so far, up to `STDERR_BYTES`."""
        written = os.lseek(self.stderr, 0, os.SEEK_CUR)
        return os.pread(self.stderr, written, 0) if written else b""

    def close_stdin(self) -> None:
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1

    def close(self) -> None:
        """Close the pipes, the stderr file and the pidfd (the process must have been
        reaped); no checkpoint."""
        self.close_stdin()
        for fd in (self.stdout, self.stderr, self.pidfd):
            if fd >= 0:
                os.close(fd)
        self.stdout = self.stderr = self.pidfd = -1


def _stderr_file() -> int:
    """A file in memory for a child's stderr: `STDERR_BYTES` long and sealed at that size,
    so what the child writes past it fails (as on a full disk) and never takes memory; the
    descriptor's offset, shared with the child's, is how much it wrote. Read once the child
    has exited: no reader runs while it does."""
    fd = os.memfd_create("stderr", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, STDERR_BYTES)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def spawn(argv: Sequence[str], *, cwd: Path, env: dict[str, str], stdin: bool) -> Child:
    """Start `argv` as the leader of a new session (so of its own process group), with a
    pipe for stdout, a file in memory for stderr, and a pipe for stdin when `stdin` (else
    /dev/null); all other descriptors closed in the child."""
    ours: list[int] = []
    theirs: list[int] = []
    try:
        out_r, out_w = os.pipe()
        ours.append(out_r)
        theirs.append(out_w)
        in_r, in_w = subprocess.DEVNULL, -1
        if stdin:
            in_r, in_w = os.pipe()
            ours.append(in_w)
            theirs.append(in_r)
        err = _stderr_file()
        ours.append(err)
        for fd in (out_r, in_w):
            if fd >= 0:
                os.set_blocking(fd, False)
        first = guardian.ticks()
        popen = subprocess.Popen(
            list(argv), cwd=str(cwd), env=env, stdin=in_r, stdout=out_w, stderr=err,
            start_new_session=True,
        )  # fmt: skip
        started = (first, guardian.ticks())
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    try:
        return Child(popen, (in_w, out_r, err), started)
    except BaseException:  # no pidfd (out of descriptors): nothing of it may stay behind
        signal_group(popen.pid, signal.SIGKILL)
        popen.wait()
        for fd in ours:
            os.close(fd)
        raise


async def _communicate(child: Child, out: _Capped, data: bytes) -> None:
    """Give `data` to the child's stdin (if it has one), read its stdout into `out` until it
    ends, and reap the child. Should stdout stay open `EOF_GRACE` seconds after the child
    exited (a straggler of its group holds it), the group is killed, and stdout read to its
    end."""
    reading = True
    written = 0
    with select.epoll() as ready:
        ready.register(child.stdout, select.EPOLLIN)
        ready.register(child.pidfd, select.EPOLLIN)
        if child.stdin >= 0:
            ready.register(child.stdin, select.EPOLLOUT)
        with trio.CancelScope() as grace:  # its deadline is set once the child has exited
            while reading or child.returncode is None:
                await trio.lowlevel.wait_readable(ready.fileno())
                for fd, _ in ready.poll(0):
                    if fd == child.pidfd:
                        ready.unregister(fd)
                        child.reap()
                        grace.deadline = trio.current_time() + EOF_GRACE
                    elif fd == child.stdin:
                        try:
                            written += os.write(fd, data[written : written + PIPE_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:  # it exits without reading it all: its business
                            written = len(data)
                        if written >= len(data):
                            ready.unregister(fd)
                            child.close_stdin()
                    elif not _read(fd, out):
                        ready.unregister(fd)
                        reading = False
                if not reading and child.returncode is None:
                    child.poll()  # it closed stdout as it exited: reaped now, no other wait
        if grace.cancelled_caught:
            signal_group(child.pid, signal.SIGKILL)  # a straggler holds stdout
            ready.unregister(child.stdout)
            while _read(child.stdout, out):
                await trio.lowlevel.wait_readable(child.stdout)


def _read(fd: int, sink: _Capped) -> bool:
    """Read what `fd` has into `sink`; False at its end."""
    try:
        chunk = read_available(fd)
    except BlockingIOError:
        return True
    sink.add(chunk)
    return bool(chunk)


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
    guardian.register(child.pid, child.started)  # killed with the daemon, however it dies
    out = _Capped(output_bytes)
    err = b""
    try:
        with trio.move_on_after(timeout) as deadline:
            await _communicate(child, out, stdin or b"")
    finally:
        try:
            # Also after a clean exit: what the leader left running in its group goes
            # (no shielded scope to open when it exited alone, the common case).
            if not group_gone(child):
                with trio.CancelScope(shield=True):
                    await stop_group(child, KILL_GRACE, name="git")
            err = child.stderr_bytes()
        finally:
            child.close()
    timed_out = deadline.cancelled_caught
    code = child.returncode if child.returncode is not None else -1
    return Completed(code, out.value(), err, out.truncated, timed_out)
