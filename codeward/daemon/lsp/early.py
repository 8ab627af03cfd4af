"""Server processes started for a root before its session exists.

A new daemon knows an agent's root from its first line (MCP's binding or handoff line),
hundreds of milliseconds before it has loaded its session and language-server modules;
a language server's own start (node and the server's modules) takes as long again. So
`start_servers` starts, at once, the process of the first installed server of each of
the root's main languages (`project.main_languages`: configuration files' languages
never), exactly as the session would: the user's config narrowed by the project's
`.codeward.toml`, an untrusted root's restricted configuration (a server that does not
start there is not started), the root left out of its PATH. When the session's server
starts it takes that process (`take`) if its command, directory and environment are the
same, and sends `initialize` to a server that has meanwhile loaded; a process nobody
takes within `KEEP` seconds is stopped. Import-light on purpose (no lsprotocol).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import trio

from codeward.daemon import guardian
from codeward.daemon.child_path import with_clean_path
from codeward.daemon.config import Config
from codeward.daemon.lsp.defaults import (
    command_available,
    effective_languages,
    effective_servers,
)
from codeward.daemon.lsp.project import main_languages, project_files
from codeward.daemon.lsp.restricted import NotInRestrictedMode, restricted
from codeward.daemon.process_groups import stop_group
from codeward.daemon.project_config import effective_config

log = logging.getLogger(__name__)

KEEP = 30.0  # seconds a process started early waits to be taken before it is stopped
STOP_GRACE = 2.0
WALK_LIMIT = 5000  # files looked at to tell the main languages (as session/open does)
Key = tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]
# processes started early, not yet taken: (command, directory, environment) -> process
_waiting: dict[Key, trio.Process] = {}


def _key(command: list[str], cwd: Path, env: dict[str, str]) -> Key:
    return tuple(command), str(cwd), tuple(sorted(env.items()))


def take(command: list[str], cwd: Path, env: dict[str, str]) -> trio.Process | None:
    """The process started early with exactly this command, directory and environment
    (now the caller's), or None."""
    return _waiting.pop(_key(command, cwd, env), None)


def plan(root: Path, config: Config, trusted: bool) -> list[tuple[str, list[str], dict[str, str]]]:
    """(server, command, its config's environment) of each server to start early for the
    canonical `root`: the first installed one of each main language, as its session would
    start it."""
    try:
        config, _ = effective_config(config, root)
    except Exception:  # a broken .codeward.toml: the session's open says what is wrong
        return []
    languages = effective_languages(config)
    files, _ = project_files(root, languages, limit=WALK_LIMIT)
    servers = effective_servers(config)
    planned: list[tuple[str, list[str], dict[str, str]]] = []
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
                planned.append((name, server.command, server.env))
                break
    return planned


async def start_servers(root: Path, config: Config, trusted: bool, keep: float = KEEP) -> None:
    """Start the processes `plan` names for `root`; stop those not taken after `keep`
    seconds (or when cancelled)."""
    planned = await trio.to_thread.run_sync(plan, root, config, trusted)
    started: list[tuple[Key, trio.Process]] = []
    try:
        for name, command, env in planned:
            full = with_clean_path({**os.environ, **env}, root=root)
            key = _key(command, root, full)
            if key in _waiting:
                continue
            try:
                process = await trio.lowlevel.open_process(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=root,
                    env=full,
                    start_new_session=True,
                )
            except OSError as exc:
                log.info("%s not started early: %s", name, exc)
                continue
            guardian.register(process.pid)
            _waiting[key] = process
            started.append((key, process))
            log.info("%s started early for %s (pid %d)", name, root, process.pid)
        if started:
            await trio.sleep(keep)
    finally:
        with trio.CancelScope(shield=True):
            for key, process in started:
                if _waiting.get(key) is process:  # nobody took it
                    del _waiting[key]
                    await stop_group(process, STOP_GRACE, name=f"{command_name(key)} (early)")
                    for stream in (process.stdin, process.stdout, process.stderr):
                        if stream is not None:
                            await stream.aclose()


def command_name(key: Key) -> str:
    return os.path.basename(key[0][0]) if key[0] else "server"
