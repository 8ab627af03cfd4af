"""Connect to the daemon, starting it in the background first when none answers.

Two clients racing to start a daemon start one: the start happens under an exclusive
`flock` on `<socket dir>/autostart.lock`, and whoever gets the lock connects again before
spawning. The daemon runs detached (its own session, stdin from /dev/null) and logs to
`$XDG_STATE_HOME/codeward/daemon.log`. It gets the write end of a pipe (its number in
`$CODEWARD_READY_FD`) and writes a byte there once it listens: the client waits on the
pipe rather than sleeping between connection attempts. A caller that names its project
root (`codeward mcp`, a CLI command on a session) passes it in `$CODEWARD_EARLY_ROOT`:
the daemon starts that root's main language servers before it loads anything else.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeward.client.reach import DaemonUnreachable, connect_socket
from codeward.protocol.socket_path import DAEMON_ALLOCATOR, EARLY_ROOT_ENV, READY_FD_ENV

TYPE_CHECKING = False  # (typing is not imported on `codeward mcp`'s path)
if TYPE_CHECKING:
    import subprocess

READY_TIMEOUT = 10.0
TERM_GRACE = 2.0  # seconds a daemon that never became ready gets between SIGTERM and SIGKILL
_FIRST_DELAY = 0.005
_MAX_DELAY = 0.1


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/codeward`, else `~/.local/state/codeward`."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "codeward"


def daemon_log_path(env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "daemon.log"


def daemon_argv(path: Path) -> list[str]:
    """The command that runs the daemon in the foreground on `path`."""
    return [sys.executable, "-m", "codeward.daemon.main", "--socket", str(path)]


def try_connect(path: Path) -> socket.socket | None:
    """A connected socket, or None when no daemon listens (no socket, or a stale one)."""
    try:
        return connect_socket(path)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as exc:
        raise DaemonUnreachable(
            f"Cannot connect to the daemon socket {path}: {exc.strerror or exc}."
        ) from None


def connect(
    path: Path,
    *,
    autostart: bool = True,
    ready_timeout: float = READY_TIMEOUT,
    argv: Sequence[str] | None = None,
    log_path: Path | None = None,
    root: Path | None = None,
) -> socket.socket:
    """A socket connected to the daemon at `path`, started first if `autostart` and none
    answers (told the project `root` the caller will ask about, whose main language
    servers it then starts first thing). Raises `DaemonUnreachable` with a sentence saying
    what to do."""
    found = begin(path, autostart=autostart, ready_timeout=ready_timeout, argv=argv,
                  log_path=log_path, root=root)  # fmt: skip
    return found if isinstance(found, socket.socket) else found.wait()


def begin(
    path: Path,
    *,
    autostart: bool = True,
    ready_timeout: float = READY_TIMEOUT,
    argv: Sequence[str] | None = None,
    log_path: Path | None = None,
    root: Path | None = None,
) -> socket.socket | Starting:
    """`connect`'s first half: a socket connected to the daemon that answers, or the daemon
    just started (`Starting`: the caller may do something else until `Starting.wait`)."""
    sock = try_connect(path)
    if sock is not None:
        return sock
    if not autostart:
        raise DaemonUnreachable(
            f"No daemon answers on {path}; start one with `codeward daemon` "
            "(or run without --no-autostart to start it in the background)."
        )
    log_path = daemon_log_path() if log_path is None else log_path
    deadline = time.monotonic() + ready_timeout
    lock_fd = _take_start_lock(path, deadline)
    try:
        sock = try_connect(path)  # someone else may have started it while we waited
        if sock is not None:
            os.close(lock_fd)
            return sock
        return _start(path, list(argv or daemon_argv(path)), log_path, deadline, root, lock_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(lock_fd)
        raise


class Starting:
    """A daemon this client started, which has not said yet that it listens. It holds the
    autostart lock until `wait` returns (or raises). `ready_fd` turns readable when the
    daemon listens (or exits); `deadline` is when `wait` gives up on it."""

    def __init__(
        self,
        path: Path,
        proc: subprocess.Popen[bytes],
        ready_fd: int,
        log_path: Path,
        deadline: float,
        lock_fd: int,
    ) -> None:
        self.path = path
        self.proc = proc
        self.ready_fd = ready_fd
        self.log_path = log_path
        self.deadline = deadline
        self._lock_fd = lock_fd

    def wait(self) -> socket.socket:
        """A socket connected to the daemon once it listens; raises `DaemonUnreachable`
        when it exits first or does not listen by the deadline (it is stopped then)."""
        try:
            return _wait_ready(self.path, self.proc, self.ready_fd, self.log_path, self.deadline)
        finally:
            with warnings.catch_warnings():  # it runs on: no "still running" ResourceWarning
                warnings.simplefilter("ignore", ResourceWarning)
                del self.proc
            os.close(self.ready_fd)
            os.close(self._lock_fd)  # closing the descriptor releases the lock


def _take_start_lock(path: Path, deadline: float) -> int:
    """The exclusive autostart lock next to the socket (waiting until `deadline`): its
    descriptor, whose closing releases it."""
    lock_path = path.parent / "autostart.lock"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise DaemonUnreachable(
            f"Cannot create the autostart lock {lock_path}: {exc.strerror or exc}; "
            "start the daemon with `codeward daemon`."
        ) from None
    delay = _FIRST_DELAY
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.close(fd)
                raise DaemonUnreachable(
                    f"Another client is still starting the daemon on {path}; "
                    "try again, or start it with `codeward daemon`."
                ) from None
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, _MAX_DELAY)


def _start(
    path: Path, argv: list[str], log_path: Path, deadline: float, root: Path | None, lock_fd: int
) -> Starting:
    import subprocess  # only when a daemon must be started: it is not cheap to import

    try:
        log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
    except OSError as exc:
        raise DaemonUnreachable(
            f"Cannot open the daemon log {log_path}: {exc.strerror or exc}; "
            "start the daemon with `codeward daemon`."
        ) from None
    ready_fd, ready_write = os.pipe()
    try:
        with log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"--- {stamp} codeward autostart: {' '.join(argv)}\n".encode())
            log.flush()
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd="/",
                    start_new_session=True,
                    pass_fds=(ready_write,),
                    env=_daemon_env(ready_write, root),
                )
            except OSError as exc:
                raise DaemonUnreachable(
                    f"Cannot start the daemon ({exc.strerror or exc}); "
                    "start it with `codeward daemon`."
                ) from None
            finally:
                os.close(ready_write)
    except BaseException:
        os.close(ready_fd)
        raise
    return Starting(path, proc, ready_fd, log_path, deadline, lock_fd)


def _daemon_env(ready_fd: int, root: Path | None) -> dict[str, str]:
    env = {**os.environ, READY_FD_ENV: str(ready_fd)}
    if "PYTHONMALLOC" not in env:  # (one the user chose stands)
        env.update(DAEMON_ALLOCATOR)
    env.pop(EARLY_ROOT_ENV, None)
    if root is not None:
        env[EARLY_ROOT_ENV] = os.fsdecode(root)
    return env


def _wait_ready(
    path: Path, proc: subprocess.Popen[bytes], ready_fd: int, log_path: Path, deadline: float
) -> socket.socket:
    """Connect once the daemon says it listens (or, should it say nothing, with a backoff)."""
    signalled = False  # the pipe said something: the daemon listens, or closed it
    delay = _FIRST_DELAY
    while True:
        sock = try_connect(path)
        if sock is not None:
            return sock
        status = proc.poll()
        if status is not None:
            raise DaemonUnreachable(
                f"The daemon exited (status {status}) before it was ready; "
                f"see {log_path}{_last_line(log_path)}"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _terminate(proc)
            raise DaemonUnreachable(
                f"The daemon did not become ready on {path} in time; see {log_path}, "
                "or start it with `codeward daemon`."
            )
        if signalled:
            time.sleep(min(delay, remaining))
        elif select.select([ready_fd], [], [], min(delay, remaining))[0]:
            os.read(ready_fd, 1)
            signalled = True  # connect at once; then (a daemon that lost a race) back off
            continue
        delay = min(delay * 2, _MAX_DELAY)


def _last_line(log_path: Path) -> str:
    """`: <the log's last line>.` or `.` when there is none to show."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - 4096))
            lines = [ln for ln in log.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "."
    return f": {lines[-1].strip()}" if lines else "."


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """Stop a daemon that never became ready: SIGTERM, then SIGKILL, to its process group."""
    import subprocess

    for sig, wait in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
