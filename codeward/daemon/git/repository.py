"""The repository behind a root: where its git directory is, and its own config, scanned.

`inspect` refuses a repository whose own config would make git run a program. A safe
result is remembered per root until anything that could change it does: the discovered
`.git`, or the config files (local, worktree, submodules).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import trio

from codeward.daemon.git import config_scan
from codeward.daemon.git.messages import failure_message
from codeward.daemon.git.runner import Completed, git_argv, git_env, run_process
from codeward.protocol.errors import ErrorKind, ToolError

PROBE_TIMEOUT = 30.0  # seconds for the daemon's own probes (rev-parse, config, ls-files)
PROBE_BYTES = 64 * 1024 * 1024
CACHE_SIZE = 64

Stat = tuple[int, int, int, int] | None


@dataclass(frozen=True)
class Repository:
    git_dir: Path
    common_dir: Path
    entries: list[config_scan.ConfigEntry]


_cache: dict[Path, tuple[tuple[Stat, ...], Repository]] = {}


async def probe(git: str, root: Path, args: list[str]) -> Completed:
    """A command of the daemon's own, with the hardened argv and a read-only environment."""
    first, *rest = args
    return await run_process(
        git_argv(git, first, rest),
        cwd=root, env=git_env(read_only=True), timeout=PROBE_TIMEOUT, output_bytes=PROBE_BYTES,
    )  # fmt: skip


async def inspect(git: str, root: Path) -> Repository:
    """Locate the repository and read its own config, refusing one that would run programs."""
    cached = _cache.get(root)
    if cached is not None and cached[0] == _signature(root, cached[1]):
        return cached[1]
    repo = await _inspect(git, root)
    unsafe = config_scan.find_unsafe(repo.entries)
    if unsafe:
        raise ToolError(
            ErrorKind.UNSAFE_REPOSITORY_CONFIG,
            f"The repository's own config sets {unsafe[0]}, which makes git run a program; "
            "remove it from .git/config (or move it to your global config) and retry.",
            keys=unsafe,
        )
    if len(_cache) >= CACHE_SIZE:
        _cache.pop(next(iter(_cache)))
    _cache[root] = (_signature(root, repo), repo)
    return repo


async def _inspect(git: str, root: Path) -> Repository:
    found: dict[str, Completed] = {}

    async def run(name: str, args: list[str]) -> None:
        found[name] = await probe(git, root, args)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "dirs", ["rev-parse", "--absolute-git-dir", "--git-common-dir"])
        nursery.start_soon(run, "config", ["config", "--list", "--show-scope", "-z",
                                           "--no-includes"])  # fmt: skip
    dirs = found["dirs"]
    if dirs.exit_code != 0:
        message = dirs.stderr.decode("utf-8", "replace")
        if "not a git repository" in message:
            raise ToolError(
                ErrorKind.NOT_A_GIT_REPOSITORY,
                "The project root is not inside a git repository; run `git init` there first.",
            )
        raise ToolError(
            ErrorKind.GIT_FAILED, failure_message("rev-parse", dirs.exit_code, message, root)
        )
    lines = dirs.stdout.decode("utf-8", "surrogateescape").splitlines()
    git_dir = Path(lines[0])
    common_dir = Path(lines[1]) if len(lines) > 1 else git_dir
    if not common_dir.is_absolute():
        common_dir = Path(os.path.realpath(root / common_dir))
    entries = config_scan.parse_config_list(found["config"].stdout)
    for config_file in submodule_configs(common_dir):
        listed = await probe(git, root, ["config", "--file", str(config_file), "--list", "-z",
                                         "--no-includes"])  # fmt: skip
        entries += config_scan.parse_config_list(listed.stdout, scope="submodule")
    return Repository(git_dir, common_dir, entries)


def submodule_configs(common_dir: Path) -> list[Path]:
    """Config files of submodules (`.git/modules/**/config`): their git runs on status too."""
    modules = common_dir / "modules"
    if not modules.is_dir():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(modules):
        dirnames[:] = [d for d in dirnames if d not in ("objects", "refs", "logs", "hooks")]
        for name in ("config", "config.worktree"):
            if name in filenames:
                found.append(Path(dirpath) / name)
    return found


def _stat(path: Path) -> Stat:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _signature(root: Path, repo: Repository) -> tuple[Stat, ...]:
    """What `inspect` saw: each `.git` git would discover from root upward, and the configs."""
    found: list[Stat] = []
    for directory in (root, *root.parents):
        found.append(_stat(directory / ".git"))
        if found[-1] is not None:
            break
    files = [
        repo.git_dir / "config", repo.git_dir / "config.worktree",
        repo.common_dir / "config", repo.common_dir / "modules",
        *submodule_configs(repo.common_dir),
    ]  # fmt: skip
    return (*found, *(_stat(f) for f in files))
