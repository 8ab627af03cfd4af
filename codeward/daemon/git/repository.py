"""The repository behind a root: where its git directory is, and its own config, scanned.

`inspect` refuses a repository whose own config would make git run a program or read a
file outside the project: its local and worktree config, its submodules' (`.git/modules`),
and every repository nested in its work tree that git enters (a gitlink in the index whose
directory has its own `.git`, absorbed or not), recursively. A safe result is remembered
per root, in parts each redone only when what it read changes: the location and config
part (rev-parse, the repository's and its submodules' config) while the discovered `.git`
and those config files keep their stats; the nested part (the repositories behind the
index's gitlinks) while the nested `.git`s and their config files keep theirs and the
index keeps its gitlinks. An index rewritten with only fresh stats (every `git status`
that refreshes it, every `git add`) costs one read of it (`index_gitlinks`), not a rescan.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio

from codeward.daemon.files import read_file
from codeward.daemon.git import config_scan, containment, index_gitlinks
from codeward.daemon.git.messages import failure_message
from codeward.daemon.git.runner import Completed, git_argv, git_env, run_process
from codeward.protocol.errors import ErrorKind, ToolError

PROBE_TIMEOUT = 30.0  # seconds for the daemon's own probes (rev-parse, config, ls-files)
PROBE_BYTES = 64 * 1024 * 1024
CACHE_SIZE = 64
NESTED_DEPTH = 4  # levels of repositories inside repositories that are scanned
GITLINK_MODE = b"160000"
INLINE_INDEX_BYTES = 1024 * 1024  # a larger index is read in a thread, off the event loop

Stat = tuple[int, int, int, int] | None
_Entries = frozenset[tuple[str, str | None]]  # a directory's names, each with its link's target
T = TypeVar("T")


@dataclass(frozen=True)
class Repository:
    git_dir: Path
    common_dir: Path
    entries: list[config_scan.ConfigEntry]
    watched: tuple[Path, ...] = ()  # nested `.git`s and config files seen by the scan
    gitlinks: bool = False  # its index holds a submodule or a repository added inside it
    # the git directory's entries when the containment part listed it during this call
    # (`inspect`'s result only, never the cached one): status reads no second listing
    git_dir_names: frozenset[str] | None = field(default=None, compare=False, repr=False)
    _facts: dict[Callable[[list[config_scan.ConfigEntry]], Any], Any] = field(
        default_factory=dict, compare=False, repr=False
    )

    def fact(self, of_entries: Callable[[list[config_scan.ConfigEntry]], T]) -> T:
        """`of_entries(self.entries)`, worked out once per scan (as the scan, the entries
        stand until anything they come from changes)."""
        try:
            return self._facts[of_entries]
        except KeyError:
            value = self._facts[of_entries] = of_entries(self.entries)
            return value


@dataclass
class _Inspected:
    """A safe inspection of a root, and what each of its parts read."""

    repo: Repository
    places: config_scan.Places
    own: list[config_scan.ConfigEntry]  # the repository's config and its submodules'
    scanned: frozenset[Path]  # the git dirs whose config `own` holds
    config_paths: tuple[str, ...]  # what the location and config part stats (`_signature`)
    config_stats: tuple[Stat, ...]
    nested: bool  # whether the nested part ran (it needs a work tree and a safe config)
    index: index_gitlinks.Read | None  # the index when the nested part listed it
    nested_stats: tuple[Stat, ...]  # of `repo.watched`
    contained: tuple[str, ...] = ()  # what the containment check read (`_contained`)
    contained_key: tuple[Any, ...] = ()  # their `_identities` then


_cache: dict[Path, _Inspected] = {}


async def probe(git: str, root: Path, args: list[str], stdin: str | None = None) -> Completed:
    """A command of the daemon's own, with the hardened argv and a read-only environment
    (given `stdin`, if any, on its standard input)."""
    first, *rest = args
    return await run_process(
        git_argv(git, root, first, rest), cwd=None, env=git_env(read_only=True),
        timeout=PROBE_TIMEOUT, output_bytes=PROBE_BYTES,
        stdin=stdin.encode() if stdin is not None else None,
    )  # fmt: skip


async def inspect(git: str, root: Path, *, nested: bool = True) -> Repository:
    """Locate the repository and read its own config, refusing one that would run programs.

    `nested=False` is for a command that enters no repository nested in the work tree (a
    log that prints no diff): a remembered nested part is taken as it stands, unchecked (the
    index is not read for it); the next command that needs it checks it."""
    cached = _cache.pop(root, None)
    if cached is None or _signature(cached.config_paths, cached.repo) != cached.config_stats:
        found = await _inspect(git, root)
    elif not nested or await _nested_stands(cached):
        found = cached
    else:
        found = await _with_nested(git, root, cached)
    listed: dict[str, _Entries] = {}  # the directories the containment part lists now
    if found is not cached or not _contained_stands(found, listed):
        listed.clear()
        found = await _contained(root, found, listed)
    if found is not cached:  # a part ran again: its entries are checked
        unsafe = config_scan.find_unsafe(found.repo.entries, found.places)
        if unsafe:
            raise _unsafe_error(root, found.places, found.repo.entries, unsafe)
    if len(_cache) >= CACHE_SIZE:
        _cache.pop(next(iter(_cache)))
    _cache[root] = found
    names = listed.get(str(found.repo.git_dir))
    if names is None:
        return found.repo
    return dataclasses.replace(found.repo, git_dir_names=frozenset(name for name, _ in names))


async def _inspect(git: str, root: Path) -> _Inspected:
    """Every part: where the repository is and its own config, then its nested ones."""
    found: dict[str, Completed] = {}

    async def run(name: str, args: list[str]) -> None:
        found[name] = await probe(git, root, args)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "dirs", ["rev-parse", "--absolute-git-dir", "--git-common-dir"])
        nursery.start_soon(run, "top", ["rev-parse", "--show-toplevel"])
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
    top_lines = found["top"].stdout.decode("utf-8", "surrogateescape").splitlines()
    top = Path(top_lines[0]) if found["top"].exit_code == 0 and top_lines else None
    natural = _natural_top(root)
    places = config_scan.Places(
        root=root, top=top or root, git_dir=git_dir, worktree_limit=natural or root
    )
    own = config_scan.parse_config_list(found["config"].stdout)
    scanned = {Path(os.path.realpath(git_dir)), Path(os.path.realpath(common_dir))}
    for config_file in submodule_configs(common_dir):
        own += await _read_config(git, root, config_file, "submodule", None)
        scanned.add(Path(os.path.realpath(config_file.parent)))
    repo = Repository(git_dir, common_dir, own)
    paths = _signature_paths(root, repo)
    inspected = _Inspected(
        repo, places, own, frozenset(scanned), paths, _signature(paths, repo),
        nested=top is not None and not config_scan.find_unsafe(own, places),
        index=None, nested_stats=(),
    )  # fmt: skip
    return await _with_nested(git, root, inspected) if inspected.nested else inspected


async def _with_nested(git: str, root: Path, inspected: _Inspected) -> _Inspected:
    """`inspected` with its nested part done again: the index (its gitlinks read first, so
    a change after the listing shows at the next check), then the nested repositories."""
    repo, places = inspected.repo, inspected.places
    index = await _read_index(repo.git_dir / "index", _hash_bytes(inspected.own))
    watched: list[Path] = []
    nested = await _nested(
        git, root, places.top, places, set(inspected.scanned), watched, NESTED_DEPTH
    )
    gitlinks = any(path.name == ".git" for path in watched)  # what `_nested` found
    repo = Repository(
        repo.git_dir, repo.common_dir, inspected.own + nested, tuple(watched), gitlinks
    )
    nested_stats = tuple(_stat(str(path)) for path in watched)
    return dataclasses.replace(
        inspected, repo=repo, nested=True, index=index, nested_stats=nested_stats
    )


async def _contained(root: Path, inspected: _Inspected, listed: dict[str, _Entries]) -> _Inspected:
    """The containment part (`containment.check`, in a thread: it walks the git
    directories), run again when the other parts were or what it read changed; the
    directories' entries it lists go into `listed` too."""
    repo = inspected.repo
    nested = [path for path in repo.watched if path.name == ".git"]
    read = await trio.to_thread.run_sync(
        containment.check, root, repo.git_dir, repo.common_dir, repo.entries, nested
    )
    paths = tuple(str(path) for path in read)
    key = _identities(paths)
    for path, (_, names) in zip(paths, key, strict=True):
        if names is not None:
            listed[path] = names
    return dataclasses.replace(inspected, contained=paths, contained_key=key)


def _identities(paths: tuple[str, ...]) -> tuple[Any, ...]:
    """What the containment check depends on in `paths`: each one's stat and, for a
    directory, its entries' names with each symbolic link's target (`_contained_stands`)."""
    return tuple((_stat(path), _entries(path)) for path in paths)


def _entries(path: str) -> _Entries | None:
    """A directory's entries (lock files aside: git makes and removes them), each with its
    link's target if it is a symbolic link; None for anything else."""
    try:
        with os.scandir(path) as entries:
            return frozenset(
                (entry.name, os.readlink(entry.path) if entry.is_symlink() else None)
                for entry in entries
                if not entry.name.endswith(".lock")
            )
    except OSError:  # not a directory (or gone)
        return None


def _contained_stands(inspected: _Inspected, listed: dict[str, _Entries]) -> bool:
    """Whether what the containment check read is as it was: the same stats, or (a
    directory whose stat changed: every index git writes in a `.git` changes it, through
    `index.lock`) the same entries, its new stat then remembered (and its entries put in
    `listed`)."""
    key = list(inspected.contained_key)
    for i, (path, (seen, names)) in enumerate(zip(inspected.contained, key, strict=True)):
        now = _stat(path)
        if now == seen:
            continue
        if names is None or now is None or now[3] != seen[3] or _entries(path) != names:
            return False
        key[i] = (now, names)
        listed[path] = names
    inspected.contained_key = tuple(key)
    return True


async def _nested_stands(inspected: _Inspected) -> bool:
    """Whether the nested part of `inspected` holds: the nested `.git`s and config files
    kept their stats, and the index its stat or, rewritten, its gitlinks (then its new
    stat is remembered)."""
    if not inspected.nested:
        return True
    if tuple(_stat(str(path)) for path in inspected.repo.watched) != inspected.nested_stats:
        return False
    index_path = inspected.repo.git_dir / "index"
    before = inspected.index
    now = _stat(str(index_path))
    if before is None or now is None:
        return before is None and now is None
    if now == before.stat:
        return True
    if before.gitlinks is None:
        return False
    after = await _read_index(index_path, _hash_bytes(inspected.own), now[2])
    if after is None or after.gitlinks != before.gitlinks:
        return False
    inspected.index = after
    return True


async def _read_index(
    index: Path, hash_bytes: int, size: int | None = None
) -> index_gitlinks.Read | None:
    """`index_gitlinks.read`, in a thread when the index is large."""
    if size is None:
        size = (_stat(str(index)) or (0, 0, 0, 0))[2]
    if size <= INLINE_INDEX_BYTES:
        return index_gitlinks.read(index, hash_bytes)
    return await trio.to_thread.run_sync(index_gitlinks.read, index, hash_bytes)


def _hash_bytes(entries: list[config_scan.ConfigEntry]) -> int:
    """The length of the repository's object ids: 32 bytes for SHA-256, else 20."""
    for entry in entries:
        if entry.key == "extensions.objectformat" and (entry.value or "").lower() == "sha256":
            return 32
    return 20


async def _read_config(
    git: str, root: Path, config_file: Path, scope: str, workdir: Path | None
) -> list[config_scan.ConfigEntry]:
    listed = await probe(git, root, ["config", "--file", str(config_file), "--list", "-z",
                                     "--no-includes"])  # fmt: skip
    return config_scan.parse_config_list(
        listed.stdout, scope=scope, source=config_file, workdir=workdir
    )


async def _nested(
    git: str,
    root: Path,
    top: Path,
    places: config_scan.Places,
    scanned: set[Path],
    watched: list[Path],
    depth: int,
) -> list[config_scan.ConfigEntry]:
    """Config of the repositories git enters below `top` (its gitlinks), recursively.

    A nested repository is listed (`ls-files` runs in it) only once its own config was
    found safe, so no program of it runs while it is scanned."""
    listed = await probe(git, top, ["ls-files", "-z", "--stage", "--full-name"])
    entries: list[config_scan.ConfigEntry] = []
    for record in listed.stdout.split(b"\x00") if listed.exit_code == 0 else []:
        info, _, name = record.partition(b"\t")
        if not info.startswith(GITLINK_MODE):
            continue
        workdir = top / os.fsdecode(name)
        dot_git = workdir / ".git"
        watched.append(dot_git)
        nested_dir = _git_dir_of(dot_git)
        if nested_dir is None or nested_dir in scanned:
            continue
        scanned.add(nested_dir)
        found: list[config_scan.ConfigEntry] = []
        for config_file in (nested_dir / "config", nested_dir / "config.worktree"):
            watched.append(config_file)
            if config_file.is_file():
                found += await _read_config(git, root, config_file, "nested", workdir)
        entries += found
        if depth > 1 and not config_scan.find_unsafe(found, places):
            entries += await _nested(git, root, workdir, places, scanned, watched, depth - 1)
    return entries


GITFILE_BYTES = 64 * 1024


def _git_dir_of(dot_git: Path) -> Path | None:
    """The git directory behind a work tree's `.git`: the directory, or a gitfile's target."""
    try:
        if dot_git.is_dir():
            return Path(os.path.realpath(dot_git))
        # Read like every project file: a FIFO or a device named .git is never waited on.
        data, _ = read_file(dot_git, dot_git.parent, GITFILE_BYTES, outside=True)
    except (OSError, ToolError):
        return None
    text = data.decode("utf-8", "replace")
    target = text.strip().removeprefix("gitdir:").strip() if text.startswith("gitdir:") else ""
    return Path(os.path.realpath(dot_git.parent / target)) if target else None


def _natural_top(root: Path) -> Path | None:
    """The work tree git finds by itself: the nearest directory at or above root with a
    `.git`, whatever the config says."""
    for directory in (root, *root.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def _unsafe_error(
    root: Path,
    places: config_scan.Places,
    entries: list[config_scan.ConfigEntry],
    unsafe: list[str],
) -> ToolError:
    key = unsafe[0]
    entry = next(e for e in entries if e.key == key and e.scope in config_scan.REPOSITORY_SCOPES)
    where, config = "The repository's own config", ".git/config"
    if entry.source is not None:
        shown = _relative(entry.source, root, places.top)
        where, config = f"The config of the repository in {shown}", shown
        if entry.scope == "nested" and entry.workdir is not None:
            where = f"The nested repository {_relative(entry.workdir, root, places.top)}/"
    if config_scan.reads_outside(entry, places):
        effect = "which makes git read a file outside the project"
    else:
        effect = "which makes git run a program"
    return ToolError(
        ErrorKind.UNSAFE_REPOSITORY_CONFIG,
        f"{where} sets {key}, {effect}; remove it from {config} (or move it to your global "
        "config) and retry.",
        keys=unsafe,
    )


def _relative(path: Path, root: Path, top: Path) -> str:
    """`path` for a message: relative to the root, else to the work tree's top."""
    for base in (root, top):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return "a repository outside the project"


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


def _stat(path: str, *, dirs_by_identity: bool = False) -> Stat:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if dirs_by_identity and stat.S_ISDIR(st.st_mode):
        return (0, 0, 0, st.st_ino)  # which directory, not its entries
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _signature_paths(root: Path, repo: Repository) -> tuple[str, ...]:
    """What `_signature` stats: each `.git` git would discover from root upward (up to the
    first that exists: should that change, so does a stat), the repository's config files,
    then its `modules` directory (last). Made once per scan, so a check is only the stats."""
    found: list[str] = []
    directory = str(root)
    while True:
        found.append(os.path.join(directory, ".git"))
        parent = os.path.dirname(directory)
        if os.path.lexists(found[-1]) or parent == directory:
            break
        directory = parent
    git_dir, common_dir = str(repo.git_dir), str(repo.common_dir)
    found += [
        os.path.join(git_dir, "config"), os.path.join(git_dir, "config.worktree"),
        os.path.join(common_dir, "config"),
    ]  # fmt: skip
    modules = os.path.join(common_dir, "modules")
    # each once (outside a linked worktree, git_dir is common_dir), modules/ last
    return (*dict.fromkeys(p for p in found if p != modules), modules)


def _signature(paths: tuple[str, ...], repo: Repository) -> tuple[Stat, ...]:
    """What `inspect` saw: the stats of `paths` (`_signature_paths`), and of the submodules'
    configs, wherever they are below `modules`, when it exists. A directory counts by its
    identity: a `.git` directory's own stat changes with every index git writes in it."""
    found = [_stat(path, dirs_by_identity=True) for path in paths]
    if found[-1] is not None:
        found += [_stat(str(f)) for f in submodule_configs(repo.common_dir)]
    return tuple(found)
