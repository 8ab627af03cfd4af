"""systemd integration without libsystemd: socket activation, sd_notify and the watchdog."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import MutableMapping

import trio

log = logging.getLogger(__name__)

SD_LISTEN_FDS_START = 3


def listen_fds(env: MutableMapping[str, str] | None = None) -> list[int]:
    """The fds systemd passed to this process (LISTEN_FDS/LISTEN_PID), unsetting the variables."""
    env = os.environ if env is None else env
    pid, count = env.get("LISTEN_PID", ""), env.get("LISTEN_FDS", "")
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    if not pid.isdigit() or int(pid) != os.getpid() or not count.isdigit():
        return []
    fds = list(range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)))
    for fd in fds:
        os.set_inheritable(fd, False)
    return fds


def notify(state: str, env: MutableMapping[str, str] | None = None) -> bool:
    """Send `state` (e.g. "READY=1") to $NOTIFY_SOCKET; False when there is none."""
    env = os.environ if env is None else env
    address = env.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto(state.encode(), address)
        except OSError as exc:
            log.warning("sd_notify %s failed: %s", state, exc)
            return False
    return True


def watchdog_interval(env: MutableMapping[str, str] | None = None) -> float | None:
    """Half of WATCHDOG_USEC in seconds, when the watchdog is meant for this process."""
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid and (not pid.isdigit() or int(pid) != os.getpid()):
        return None
    return int(usec) / 2 / 1_000_000


async def run_watchdog(interval: float) -> None:
    """Ping WATCHDOG=1 every `interval` seconds, forever."""
    while True:
        notify("WATCHDOG=1")
        await trio.sleep(interval)
