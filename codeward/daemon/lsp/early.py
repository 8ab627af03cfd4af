"""Server processes started for a root before its session exists.

A new daemon knows an agent's root early: the autostarting `codeward mcp` names it in
`$CODEWARD_EARLY_ROOT`, read before the daemon imports anything else, and MCP's binding
or handoff line names it as soon as the daemon listens, hundreds of milliseconds before
the daemon has loaded its session and language-server modules; a language server's own
start (node and the server's modules) takes as long again. So `spawn` starts the process
of the first installed server of each of the root's main languages
(`project.main_languages`: configuration files' languages never) exactly as the session
would: the user's config narrowed by the project's `.codeward.toml`, an untrusted root's
restricted configuration (a server that does not start there is not started), the root
left out of its PATH. Each is sent its `initialize` at once (`early_initialize`: the
params its session would send, built without lsprotocol), so the server's start and its
answer overlap the daemon's loading of its modules. `early_process.keep` (in the daemon's
trio run) sends `initialized` and the settings once it answers (`early_conversation`) and
offers them to the sessions' servers, which take one over when they would have sent the
same.

Neither trio nor lsprotocol here: `codeward.daemon.main` calls `spawn` first thing.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.daemon.child_path import with_clean_path
from codeward.daemon.config import Config
from codeward.daemon.lsp.defaults import (
    command_available,
    effective_languages,
    effective_servers,
)
from codeward.daemon.lsp.early_initialize import initialize_params, normalised, request
from codeward.daemon.lsp.project import main_languages, project_files
from codeward.daemon.lsp.restricted import NotInRestrictedMode, restricted
from codeward.daemon.project_config import effective_config
from codeward.daemon.trust import TrustStore
from codeward.protocol.socket_path import READY_FD_ENV

log = logging.getLogger(__name__)

WALK_LIMIT = 5000  # files looked at to tell the main languages (as session/open does)
# what the daemon takes out of its environment once it runs: no later child sees it
START_ONLY = (READY_FD_ENV,)
PIPE_BYTES = 65536  # what a new pipe holds (Linux's default)
Key = tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Planned:
    """A server to start early, as its session would start it."""

    name: str
    command: list[str]
    env: dict[str, str]  # its config's environment
    init_options: Any  # its initializationOptions
    settings: Any  # its settings (sent once it answered initialize)


@dataclass(eq=False)
class Spawned:
    """A server process started early: our ends of its pipes, until `keep` wraps them."""

    name: str
    key: Key
    popen: subprocess.Popen[bytes]
    fds: tuple[int, int, int]  # its stdin's write end, its stdout's and stderr's read ends
    initialize: Any = None  # the params of the `initialize` it was sent (normalised)
    settings: Any = None  # its settings, for `early_conversation` (normalised)


def key(command: list[str], cwd: Path, env: dict[str, str]) -> Key:
    """What tells two starts apart: the command, its directory and its whole environment."""
    return tuple(command), str(cwd), tuple(sorted(env.items()))


def canonical_root(root: str) -> Path | None:
    """The directory `root` names (realpath), or None when it names none."""
    if "\x00" in root:
        return None
    path = Path(os.path.realpath(os.path.expanduser(root)))
    return path if path.is_dir() else None


def plan(root: Path, config: Config, trusted: bool) -> list[Planned]:
    """The servers to start early for the canonical `root`: the first installed one of each
    main language, as its session would start it."""
    try:
        config, _ = effective_config(config, root)
    except Exception:  # a broken .codeward.toml: the session's open says what is wrong
        return []
    languages = effective_languages(config)
    files, _ = project_files(root, languages, limit=WALK_LIMIT)
    servers = effective_servers(config)
    planned: list[Planned] = []
    for language in main_languages(files):
        for name in languages[language].servers:
            server = servers.get(name)
            if server is None:
                continue
            if not trusted:
                try:
                    server = restricted(name, server, root)
                except NotInRestrictedMode:
                    continue
            if command_available(server.command, server.env):
                planned.append(
                    Planned(name, server.command, server.env, server.init_options, server.settings)
                )
                break
    return planned


def spawn(root: Path, config: Config) -> list[Spawned]:
    """Start the processes `plan` names for the canonical `root` (its trust read from the
    trust file), each leading a session of its own, and send each its `initialize`;
    blocking (a thread's job in trio)."""
    trusted = TrustStore().is_trusted(root)
    started: list[Spawned] = []
    for planned in plan(root, config, trusted):
        name, command = planned.name, planned.command
        base = {k: v for k, v in os.environ.items() if k not in START_ONLY}
        full = with_clean_path({**base, **planned.env}, root=root)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            popen = subprocess.Popen(
                command,
                stdin=in_r,
                stdout=out_w,
                stderr=err_w,
                cwd=root,
                env=full,
                start_new_session=True,
            )
        except OSError as exc:
            log.info("%s not started early: %s", name, exc)
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            continue
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        one = Spawned(name, key(command, root, full), popen, (in_w, out_r, err_r))
        params = initialize_params([root], planned.init_options)
        try:
            write_now(in_w, request(params))
        except OSError as exc:  # it died at once (EPIPE): its session starts its own
            log.info("%s started early but could not be sent initialize: %s", name, exc)
            discard([one])
            continue
        one.initialize = normalised(params)
        one.settings = normalised(planned.settings)
        started.append(one)
        log.info("%s started early for %s (pid %d)", name, root, popen.pid)
    return started


def write_now(fd: int, data: bytes) -> None:
    """Write all of `data` into the empty pipe `fd` without waiting for its reader (the
    pipe is made to hold it), or raise OSError."""
    if len(data) > PIPE_BYTES:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, len(data))
    os.set_blocking(fd, False)
    if os.write(fd, data) < len(data):
        raise BlockingIOError("the request does not fit in the pipe")


def discard(spawned: list[Spawned]) -> None:
    """Kill and reap what `spawn` started (a daemon that never listened: nobody will take
    them), and close our ends of their pipes."""
    for one in spawned:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(one.popen.pid, signal.SIGKILL)
        one.popen.wait()
        for fd in one.fds:
            os.close(fd)
