"""git reads only the repository the user opened: the files behind the repository that make
git read another one (a gitfile, `commondir`, `objects/info/alternates`,
`objects/info/http-alternates`) and the symbolic links in its git directories must lead
inside it.

The repository's places (`Home`) are the root; the `.git` directory git discovers at the
root or above it (the user opened a folder of that work tree); and, when that `.git` is a
gitfile leading outside the root, its target only when the target names this work tree
back, as git itself wrote it: a linked worktree's `<main>/worktrees/<id>` whose `gitdir`
file names this `.git` (and then the main repository's git directory, its `commondir`), or
a submodule's git directory whose `core.worktree` is this work tree. Nothing here runs git;
it is file reads and one walk of each git directory, done once per inspection (cached with
it: `check` returns the files whose change must make the inspection run again).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeward.daemon.git.config_scan import ConfigEntry
from codeward.daemon.paths import is_inside
from codeward.protocol.errors import ErrorKind, ToolError

SMALL_FILE_BYTES = 1024 * 1024  # a gitfile, commondir, alternates: a few lines
ALTERNATE_DEPTH = 5  # git follows alternates of alternates this deep
WALK_ENTRIES = 1_000_000  # entries of git directories walked for symbolic links, at most
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_OCTAL = re.compile(r"[0-7]{3}")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


@dataclass
class Home:
    """The places of the repository the user opened: the root and its git directories."""

    root: Path
    git_dirs: list[Path] = field(default_factory=list)  # real paths

    def has(self, path: Path) -> bool:
        return is_inside(path, self.root) or any(is_inside(path, d) for d in self.git_dirs)

    def add(self, git_dir: Path) -> None:
        if not self.has(git_dir):
            self.git_dirs.append(git_dir)

    def shown(self, path: Path) -> str:
        """`path` for a message: root-relative, else from its git directory's name."""
        if is_inside(path, self.root):
            return path.relative_to(self.root).as_posix() if path != self.root else "."
        for git_dir in sorted(self.git_dirs, key=lambda d: len(d.parts)):  # outermost first
            if is_inside(path, git_dir):
                rest = path.relative_to(git_dir).as_posix() if path != git_dir else ""
                return f"{git_dir.name}/{rest}".rstrip("/")
        return "a file outside the project"


def check(
    root: Path,
    git_dir: Path,
    common_dir: Path,
    entries: Sequence[ConfigEntry],
    nested: Iterable[Path] = (),
) -> tuple[Path, ...]:
    """Raise `unsafe_repository_config` when git would read another repository through the
    files of this one (or of `nested`, the `.git`s of repositories git enters below it);
    else the files and folders whose change must make the check run again."""
    real = Path(os.path.realpath(git_dir))
    home = Home(root)
    watched: list[Path] = []
    top = _natural_top(root)
    if top is not None:
        _discovered(home, top / ".git", entries, watched)
    if not home.has(real):
        raise _unsafe(
            "git's directory for this work tree is outside the project (not its own `.git`)",
            ".git",
        )
    common = Path(os.path.realpath(common_dir))
    git_dirs = [real, *([common] if common != real else [])]
    for dot_git in nested:
        target = _target(dot_git)
        if target is None:
            continue
        if not home.has(target):
            shown = home.shown(dot_git)
            raise _unsafe(f"{shown} leads to a git directory outside the project", shown)
        if target not in git_dirs:
            git_dirs.append(target)
    for directory in git_dirs:  # a worktree's own folder is walked with its main one's
        inner = any(other != directory and is_inside(directory, other) for other in git_dirs)
        _check_git_dir(home, directory, watched, walk=not inner)
    return tuple(dict.fromkeys(watched))


def _discovered(
    home: Home, dot_git: Path, entries: Sequence[ConfigEntry], watched: list[Path]
) -> None:
    """Add the `.git` git discovers to `home`: a directory, or a gitfile's target inside the
    root or linked back to this work tree."""
    watched.append(dot_git)
    try:
        is_link, is_dir = dot_git.is_symlink(), dot_git.is_dir()
    except OSError:
        return
    target = _target(dot_git)
    if target is None:
        return
    if is_dir and not is_link:
        home.add(target)
        return
    if home.has(target):
        return
    if is_link:
        raise _unsafe(".git is a symbolic link to a folder outside the project", ".git")
    linked = _linked_worktree(target, dot_git, watched)
    if linked is not None:
        home.add(target)
        home.add(linked)
        return
    if _submodule_of(target, dot_git.parent, entries):
        home.add(target)
        return
    raise _unsafe(
        "the .git file (gitdir:) leads to a git directory outside the project that is "
        "neither a linked worktree of this work tree nor its submodule's",
        ".git",
    )


def _linked_worktree(target: Path, dot_git: Path, watched: list[Path]) -> Path | None:
    """The main repository's git directory when `target` is `<main>/worktrees/<id>` and its
    `gitdir` file names `dot_git` (what `git worktree add` writes), else None."""
    watched += [target / "commondir", target / "gitdir"]
    common = _read_line(target / "commondir")
    back = _read_line(target / "gitdir")
    if not common or not back:
        return None
    main = Path(os.path.realpath(target / common))
    if Path(os.path.realpath(target)).parent != main / "worktrees":
        return None
    if Path(os.path.realpath(target / back)) != Path(os.path.realpath(dot_git)):
        return None
    return main


def _submodule_of(target: Path, workdir: Path, entries: Sequence[ConfigEntry]) -> bool:
    """Whether `target` is a submodule's git directory (no `commondir`) whose own
    `core.worktree` is `workdir` (what `git submodule` writes)."""
    if os.path.lexists(target / "commondir"):
        return False
    worktree = [e.value for e in entries
                if e.scope == "local" and e.key.lower() == "core.worktree" and e.value]  # fmt: skip
    if not worktree:
        return False
    return Path(os.path.realpath(target / worktree[-1])) == Path(os.path.realpath(workdir))


def _check_git_dir(home: Home, git_dir: Path, watched: list[Path], *, walk: bool) -> None:
    """A git directory's `commondir` and alternates lead into `home`, and so do its links."""
    commondir = git_dir / "commondir"
    watched += [git_dir, commondir]
    common = _read_line(commondir)
    if common:
        real = Path(os.path.realpath(git_dir / common))
        if not home.has(real):
            shown = home.shown(commondir)
            raise _unsafe(f"{shown} leads to a repository outside the project", shown)
        objects = real / "objects"
    else:
        objects = git_dir / "objects"
    _check_alternates(home, objects, watched, ALTERNATE_DEPTH)
    if walk:
        _check_links(home, git_dir)


def _check_alternates(home: Home, objects: Path, watched: list[Path], depth: int) -> None:
    """`info/alternates` (paths, absolute or from `objects`) and `info/http-alternates`
    (URLs, or paths) of an objects directory lead into `home`, alternates of alternates too."""
    info = objects / "info"
    watched += [info, info / "alternates", info / "http-alternates"]
    for name in ("alternates", "http-alternates"):
        listing = info / name
        if not os.path.lexists(listing):
            continue
        shown = home.shown(listing)
        if not home.has(Path(os.path.realpath(listing))):
            raise _unsafe(f"{shown} is a symbolic link to a file outside the project", shown)
        lines = _lines(listing)
        if lines is None:
            raise _unsafe(f"{shown} is too long to check", shown)
        for line in lines:
            if name == "http-alternates" and _URL_SCHEME.match(line) and not line.lower(
            ).startswith("file://"):  # fmt: skip
                continue  # another server's objects, fetched over the network
            path = line.removeprefix("file://") if line.lower().startswith("file://") else line
            target = Path(os.path.realpath(objects / path))
            if not home.has(target):
                raise _unsafe(
                    f"{shown} lists objects outside the project (a clone made with "
                    "--reference or --shared: `git repack -a -d`, then remove the file)",
                    shown,
                )
            if name == "alternates" and depth > 1 and target != objects:
                _check_alternates(home, target, watched, depth - 1)


def _check_links(home: Home, git_dir: Path) -> None:
    """Every symbolic link in `git_dir` (refs, packed-refs, shallow, info/*, config, HEAD,
    objects...) leads into `home`: git follows them when it reads those files."""
    stack, seen = [git_dir], 0
    while stack and seen < WALK_ENTRIES:
        try:
            scanner = os.scandir(stack.pop())
        except OSError:
            continue
        with scanner:
            for entry in scanner:
                seen += 1
                if entry.is_symlink():
                    if not home.has(Path(os.path.realpath(entry.path))):
                        shown = home.shown(Path(entry.path))
                        raise _unsafe(
                            f"{shown} is a symbolic link to a file outside the project", shown
                        )
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))


# --- reading ----------------------------------------------------------------------------


def _natural_top(root: Path) -> Path | None:
    """The nearest directory at or above root with a `.git`: where git discovers it."""
    for directory in (root, *root.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def _target(dot_git: Path) -> Path | None:
    """The real git directory behind a `.git`: the folder (links followed), or the target of
    a gitfile (`gitdir: PATH`, from the gitfile's folder)."""
    if os.path.isdir(dot_git):
        return Path(os.path.realpath(dot_git))
    line = _read_line(dot_git)
    if not line.startswith("gitdir:"):
        return None
    target = line.removeprefix("gitdir:").strip()
    return Path(os.path.realpath(dot_git.parent / target)) if target else None


def read_small(path: Path) -> str | None:
    """A small regular file's text: '' when absent or no regular file (a FIFO is never
    waited on), None when longer than `SMALL_FILE_BYTES` (too long to check)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        data = b""
        while len(data) <= SMALL_FILE_BYTES:
            chunk = os.read(fd, SMALL_FILE_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return ""
    finally:
        os.close(fd)
    return None if len(data) > SMALL_FILE_BYTES else data.decode("utf-8", "surrogateescape")


def _read_line(path: Path) -> str:
    text = read_small(path) or ""
    return text.splitlines()[0].strip() if text.strip() else ""


def _lines(path: Path) -> list[str] | None:
    """The entries of an alternates file: no blank lines or comments, C quotes undone
    (None: too long to check)."""
    text = read_small(path)
    if text is None:
        return None
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found.append(_unquote(line) if line.startswith('"') else line)
    return found


def _unquote(text: str) -> str:
    """git's C-style quoting (`"a\\tb\\303\\251"`), as in alternates files."""
    out = bytearray()
    k, end = 1, len(text) - 1 if text.endswith('"') and len(text) > 1 else len(text)
    while k < end:
        char = text[k]
        if char == "\\" and k + 1 < end:
            nxt = text[k + 1]
            if _OCTAL.fullmatch(text[k + 1 : k + 4]):
                out.append(int(text[k + 1 : k + 4], 8) & 0xFF)
                k += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode("utf-8", "surrogateescape")
            k += 2
            continue
        out += char.encode("utf-8", "surrogateescape")
        k += 1
    return out.decode("utf-8", "surrogateescape")


def _unsafe(what: str, shown: str) -> ToolError:
    return ToolError(
        ErrorKind.UNSAFE_REPOSITORY_CONFIG,
        f"In this repository, {what}: git would read another repository's files through it. "
        f"Remove or fix {shown} (or open the repository it leads to as the root) and retry.",
        keys=[],
        file=shown,
    )
