"""Run one git process: hardened argv and environment, no shell, its own process group,
a timeout, an output cap, and the whole group killed on timeout or cancellation.

The process is started on the event loop itself, not from a worker thread as
`trio.lowlevel.open_process` does: `posix_spawn` starts it with vfork(), so the loop is held
only until the child has called exec (tens of microseconds, not a copy of the daemon), and
the hop to a thread and back, which cost more than the start itself, is gone. git needs no
working directory of its own (`git -C`); a command that does goes through
`subprocess.Popen`, the one way in Python 3.11 to start a process elsewhere.

One task runs the process: its stdout and stdin pipes and a pidfd (readable once it has
exited) go into an epoll set of their own, and trio's loop waits on that one descriptor. Its
stderr goes to a file in memory, sealed at the stderr cap, read once it has exited. No
nursery, no task per pipe, one registration with the loop per wait. A run whose output is
of use only whole (the daemon's own runs) writes stdout to such a file too: then the one
wait is for its exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.child_path import clean_path
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
    "protocol.file.allow=never",  # local paths and file://: another repository, its hooks
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
    if base is None and _ENVIRON is not None and os.environ is _OWNER:
        values = tuple(map(_ENVIRON.get, _PASSED_BYTES))  # built once per set of values
        passed = _built.get(values)
        if passed is None:
            if len(_built) >= 8:
                _built.clear()
            passed = _built[values] = _passed(os.environ)
    else:
        passed = _passed(os.environ if base is None else base)
    env = {**passed, "PATH": clean_path(passed.get("PATH", os.defpath)), **FIXED_ENV}
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def _passed(source: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name in PASSED_ENV if (value := source.get(name)) is not None}


# os.environ's own dict of bytes (CPython's): looking the passed names up there costs a
# microsecond, where os.environ.get, raising and catching KeyError for each name it does
# not hold, costs ~10 a call
_OWNER = os.environ
_ENVIRON: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)
_PASSED_BYTES = tuple(os.fsencode(name) for name in PASSED_ENV)
_built: dict[tuple[bytes | None, ...], dict[str, str]] = {}  # their values -> passed


def git_argv(git: str, root: Path, subcommand: str, args: Sequence[str]) -> list[str]:
    """`git -C root -c ... subcommand [--no-ext-diff --no-textconv] args`."""
    argv = [git, "-C", str(root)]
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
    descriptors, -1 for none) or the file its stdout goes to, the file its stderr goes to,
    its exit awaited on a pidfd, and the clock ticks its start lies between.

    It has what `process_groups.stop_group` needs of a `trio.Process`: `pid`, `returncode`
    and `wait()`."""

    def __init__(
        self,
        pid: int,
        fds: tuple[int, int, int],
        started: Started,
        *,
        stdout_file: bool,
        popen: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.pid = pid
        self.stdin, self.stdout, self.stderr = fds
        self.stdout_file = stdout_file  # stdout is a file in memory, not a pipe
        self.started = started
        self.returncode: int | None = None
        self._popen = popen  # told the exit status, so that it never reaps a reused pid
        self.pidfd = os.pidfd_open(pid)  # before any wait, so never a reused pid

    async def wait(self) -> int:
        """The exit status, once the process has exited (it is reaped then)."""
        if self.returncode is None:
            await trio.lowlevel.wait_readable(self.pidfd)  # readable once it has exited
        return self.reap()

    def poll(self) -> int | None:
        """The exit status if the process has exited (it is reaped then), else None."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._exited(status)
        return self.returncode

    def reap(self) -> int:
        """The exit status of the process, which has exited (its pidfd is readable)."""
        if self.returncode is None:
            self._exited(os.waitpid(self.pid, 0)[1])  # at once: it has exited
        assert self.returncode is not None
        return self.returncode

    def _exited(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
        if self._popen is not None:
            self._popen.returncode = self.returncode

    def close_stdin(self) -> None:
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1

    def close(self) -> None:
        """Close the pipes, the files and the pidfd (the process must have been reaped); no
        checkpoint."""
        self.close_stdin()
        for fd in (self.stdout, self.stderr, self.pidfd):
            if fd >= 0:
                os.close(fd)
        self.stdout = self.stderr = self.pidfd = -1


def keep_descriptors_to_ourselves() -> None:
    """Make every descriptor this process inherited, but stdin, stdout and stderr,
    close-on-exec, and open those three (on /dev/null) if they are not: the processes
    `spawn` starts with posix_spawn, which closes nothing, then get only what is given them
    (every descriptor the daemon opens itself is close-on-exec already, as Python opens
    them). Called once, at the daemon's start."""
    for fd in range(3):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # takes the lowest free number: `fd`
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # listdir's own descriptor, closed by now
                os.set_inheritable(fd, False)


def _capped_file(name: str, size: int) -> int:
    """A file in memory for a child's output: `size` bytes long and sealed at that size, so
    what the child writes past it fails (as on a full disk) and never takes memory (nor do
    the pages it never writes); the descriptor's offset, shared with the child's, is how
    much it wrote. Read once the child has exited: no reader runs while it does."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _written(fd: int, cap: int) -> tuple[bytes, bool]:
    """What a child wrote to the `_capped_file` `fd` (its offset, shared with the child's,
    is how much), up to `cap` bytes, and whether it wrote more."""
    written = os.lseek(fd, 0, os.SEEK_CUR)
    return os.pread(fd, min(written, cap), 0) if written else b"", written > cap


def _file_size(cap: int) -> int:
    """The size of the stdout file for a cap of `cap` bytes: the first page boundary past
    it. A write that crosses a sealed file's end stops at a page boundary, so more than
    `cap` bytes always fit, and a file holding more says the output was cut."""
    return (cap // _PAGE + 1) * _PAGE


def _devnull() -> int:
    """/dev/null, open for reading (close-on-exec) as long as the daemon runs: every child
    without stdin gets it."""
    global _null
    if _null < 0:
        _null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _null


_null = -1
_PAGE = os.sysconf("SC_PAGE_SIZE")
# Default actions for what Python ignores, as subprocess's restore_signals does.
_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)


def _start(
    argv: Sequence[str], cwd: Path | None, env: dict[str, str], fds: tuple[int, int, int]
) -> tuple[int, subprocess.Popen[bytes] | None]:
    """Start `argv` with stdin, stdout and stderr on `fds` as the leader of a new session
    (so of its own process group), no other descriptor open (the daemon opens each one
    close-on-exec, `main` marks inherited ones so); its pid, and the Popen of a command
    started in `cwd`."""
    stdin, stdout, stderr = fds
    if cwd is None:
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
        pid = os.posix_spawn(
            argv[0], list(argv), env, file_actions=actions, setsid=True,
            setsigdef=_DEFAULT_SIGNALS, setsigmask=(),
        )  # fmt: skip
        return pid, None
    popen = subprocess.Popen(
        list(argv), cwd=str(cwd), env=env, stdin=stdin, stdout=stdout, stderr=stderr,
        start_new_session=True,
    )  # fmt: skip
    return popen.pid, popen


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: dict[str, str],
    stdin: bool,
    stdout_cap: int | None = None,
) -> Child:
    """Start `argv[0]` (a path) in `cwd` (None: it needs none) as the leader of a new
    session, with a pipe for stdin when `stdin` (else /dev/null), a file in memory for
    stderr, and for stdout a pipe, or with `stdout_cap` a file in memory that takes a page
    more than that; no other descriptor open in the child."""
    ours: list[int] = []
    theirs: list[int] = []
    try:
        if stdout_cap is None:
            out, out_w = os.pipe()
            theirs.append(out_w)
        else:
            out = out_w = _capped_file("stdout", _file_size(stdout_cap))
        ours.append(out)
        in_w = -1
        if stdin:
            in_r, in_w = os.pipe()
            ours.append(in_w)
            theirs.append(in_r)
        else:
            in_r = _devnull()
        err = _capped_file("stderr", STDERR_BYTES)
        ours.append(err)
        for fd in (out if stdout_cap is None else -1, in_w):
            if fd >= 0:
                os.set_blocking(fd, False)
        first = guardian.ticks()
        pid, popen = _start(argv, cwd, env, (in_r, out_w, err))
        started = (first, guardian.ticks())
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    try:
        return Child(pid, (in_w, out, err), started, stdout_file=stdout_cap is not None,
                     popen=popen)  # fmt: skip
    except BaseException:  # no pidfd (out of descriptors): nothing of it may stay behind
        signal_group(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if popen is not None:
            popen.returncode = -signal.SIGKILL
        for fd in ours:
            os.close(fd)
        raise


async def _communicate(child: Child, out: _Capped, data: bytes) -> None:
    """Give `data` to the child's stdin (if it has one), read its stdout into `out` until it
    ends, and reap the child. Should stdout stay open `EOF_GRACE` seconds after the child
    exited (a straggler of its group holds it), the group is killed, and stdout read to its
    end. A stdout file needs no reading while it runs: without stdin, its exit is the one
    thing to wait for."""
    if child.stdout_file and child.stdin < 0:
        await child.wait()
        return
    reading = not child.stdout_file
    written = 0
    with select.epoll() as ready:
        if reading:
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
    cwd: Path | None,
    env: dict[str, str],
    timeout: float,
    output_bytes: int,
    stdin: bytes | None = None,
    stop_at_cap: bool = False,
) -> Completed:
    """Run `argv` (`argv[0]` a path; in `cwd`, None for a command that needs no working
    directory) to completion or its timeout, given `stdin` (else nothing) on its standard
    input; cancellation kills its process group.

    Output past `output_bytes` is read and dropped while the command runs on, so its exit
    code is its own. With `stop_at_cap`, for a run whose output is of use only whole (the
    daemon's own), stdout goes to a file in memory instead, where a command writing more
    fails as on a full disk: it stops there, and its one wait is for its exit."""
    child = spawn(argv, cwd=cwd, env=env, stdin=stdin is not None,
                  stdout_cap=output_bytes if stop_at_cap else None)  # fmt: skip
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
            err = _written(child.stderr, STDERR_BYTES)[0]
            if child.stdout_file:
                stdout, out.truncated = _written(child.stdout, output_bytes)
                out.chunks.append(stdout)
        finally:
            child.close()
    timed_out = deadline.cancelled_caught
    code = child.returncode if child.returncode is not None else -1
    return Completed(code, out.value(), err, out.truncated, timed_out)
