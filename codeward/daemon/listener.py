"""The listening socket: a private directory, a 0600 socket, stale-socket replacement, a
start lock, socket activation, the accept loop, and the peer-uid check."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NoReturn, TypeVar

import trio

from codeward.daemon.systemd import listen_fds
from codeward.protocol.socket_path import READY_FD_ENV

log = logging.getLogger(__name__)

# accept(2) errors that say the system is out of a resource for now (as trio.serve_listeners)
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_RETRY_SECONDS = 0.1
S = TypeVar("S", bound=trio.abc.AsyncResource)


class ListenerError(Exception):
    """The daemon cannot listen; the message says why and what to do."""


def prepare_directory(directory: Path) -> None:
    """Create the socket directory 0700, or check an existing one (never changing it).

    An existing directory must be owned by this user, and others must not be able to
    replace the socket in it (no group/other write unless the sticky bit is set).
    """
    if not directory.exists() and not directory.is_symlink():
        try:
            directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass  # made by a racing daemon or client: checked below like any other
        except OSError as exc:
            raise ListenerError(f"cannot create the socket directory {directory}: {exc}") from None
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise ListenerError(f"{directory} is not a directory; remove it or choose --socket")
    if info.st_uid != os.getuid():
        raise ListenerError(
            f"{directory} is owned by uid {info.st_uid}, not by you; choose another --socket"
        )
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise ListenerError(
            f"{directory} is writable by others, who could replace the socket; "
            "make it 0700 or choose another --socket"
        )


def acquire_start_lock(socket_path: Path) -> int:
    """Hold `<socket>.lock` for the daemon's life, so two racing daemons cannot both serve."""
    lock = socket_path.with_name(socket_path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ListenerError("another codeward daemon is starting or running here") from None
    return fd


def _socket_is_live(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            return False
        raise ListenerError(f"cannot check the existing socket {path}: {exc}") from None
    finally:
        probe.close()
    return True


def bind_socket(path: Path) -> socket.socket:
    """Bind a fresh 0600 listening socket at `path`, replacing a stale one."""
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ListenerError(f"{path} exists and is not a socket; remove it or choose --socket")
        if _socket_is_live(path):
            raise ListenerError(f"a codeward daemon is already running on {path}")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenerError(f"cannot bind {path}: {exc}") from None
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(512)
    return sock


def open_listener(path: Path) -> tuple[trio.SocketListener, bool]:
    """The daemon's listener, and whether this process bound it (else systemd passed it)."""
    fds = listen_fds()
    if fds:
        sock = socket.socket(fileno=fds[0])
        return trio.SocketListener(trio.socket.from_stdlib_socket(sock)), False
    sock = bind_socket(path)
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock)), True


def take_ready_fd() -> int:
    """The pipe an autostarting client waits on ($CODEWARD_READY_FD), or -1; the variable
    leaves the environment, so that no child sees the number."""
    value = os.environ.pop(READY_FD_ENV, "")
    return int(value) if value.isdigit() else -1


def tell_listening(fd: int) -> None:
    """Wake the autostarting client: the daemon listens (one byte, then the pipe closes)."""
    if fd < 0:
        return
    with contextlib.suppress(OSError):  # the client is gone: nobody to tell
        os.write(fd, b"1")
    with contextlib.suppress(OSError):
        os.close(fd)


async def accept_loop(
    listener: trio.abc.Listener[S], handler: Callable[[S], Awaitable[object]], nursery: trio.Nursery
) -> NoReturn:
    """Start `handler(stream)` in `nursery` for each connection, as `trio.serve_listeners`
    does: an accept that fails for want of capacity (EMFILE, ENFILE, ENOMEM, ENOBUFS) is
    tried again after a pause; any other error is raised."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                raise
            log.error(
                "accept failed: %s (%s); trying again in %g s",
                errno.errorcode[exc.errno],
                os.strerror(exc.errno),
                ACCEPT_RETRY_SECONDS,
            )
            await trio.sleep(ACCEPT_RETRY_SECONDS)
        else:
            nursery.start_soon(handler, stream)


_UCRED = struct.Struct("3i")


def peer_uid(stream: trio.SocketStream) -> int:
    """The uid of the process at the other end (SO_PEERCRED)."""
    raw = stream.socket.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    _pid, uid, _gid = _UCRED.unpack(raw)
    return uid
