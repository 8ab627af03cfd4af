"""The project a pyright-based server (basedpyright, pyright) analyses, as its configuration
at the root says: `pyrightconfig.json` (JSON with comments), else the `[tool.basedpyright]`
(basedpyright only) or `[tool.pyright]` section of `pyproject.toml`. Its `include` (default:
the root), `exclude` and `ignore` entries are globs relative to the root, matched as the
server matches them: `**` any number of folders, `*` and `?` within one name, and an entry
that names a folder covers what is below it. Excluded besides: `**/node_modules`,
`**/__pycache__`, `**/.*` and the folders of virtual environments (always for basedpyright,
with `**/__editable__.*`, as basedpyright 1.40 does whatever `exclude` says; for pyright
only when the configuration names no `exclude`). A configuration that cannot be
read leaves the server the whole root, as the server does (it reports the error itself)."""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCOPED_SERVERS = ("basedpyright", "pyright")
CONFIG_FILE = "pyrightconfig.json"
PYPROJECT = "pyproject.toml"
DEFAULT_EXCLUDES = ("**/node_modules", "**/__pycache__", "**/.*")
BASED_EXCLUDES = (*DEFAULT_EXCLUDES, "**/__editable__.*")  # basedpyright's (its --verbose)
# a folder holding one of these is a virtual environment's
VENV_MARKERS = (("bin", "activate"), ("Scripts", "activate"), ("pyvenv.cfg",), ("conda-meta",))


def glob_pattern(entry: str, root: Path) -> re.Pattern[str] | None:
    """The pattern of a configuration's path `entry` (relative to `root`), matched against
    "/" + a root-relative path: it matches a path when it matches the path or one of its
    folders. None: an entry that can name nothing under the root."""
    entry = entry.strip()
    if not entry:
        return None
    if entry.startswith("/"):
        try:
            entry = Path(entry).relative_to(root).as_posix()
        except ValueError:
            return None
    body = ""
    for part in posixpath.normpath(entry).split("/"):
        if part == ".":
            continue
        if part == "**":
            body += "(?:/[^/]+)*?"
            continue
        body += "/" + "".join(
            "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part
        )
    return re.compile(f"^{body}(?:$|/)")


def _patterns(entries: Iterable[str], root: Path) -> tuple[re.Pattern[str], ...]:
    return tuple(p for e in entries if (p := glob_pattern(e, root)) is not None)


def matches(path: str, patterns: Iterable[re.Pattern[str]]) -> bool:
    """Whether root-relative `path` (or a folder of it) matches one of `patterns`."""
    return any(p.match("/" + path) for p in patterns)


@dataclass
class Split:
    """A server's files as its configuration sorts them."""

    analysed: list[Path] = field(default_factory=list)  # its project: asked about
    excluded: list[Path] = field(default_factory=list)  # outside `include`, or excluded
    ignored: list[Path] = field(default_factory=list)  # in its project, diagnostics suppressed

    @property
    def left_out(self) -> list[Path]:
        """The files not asked about: excluded or ignored."""
        return [*self.excluded, *self.ignored]


@dataclass(frozen=True)
class Scope:
    """One server's project, as its configuration at the root says."""

    server: str
    config: str | None = None  # the file read ("pyrightconfig.json", "pyproject.toml")
    include: tuple[str, ...] = ()  # as written; none: the root
    exclude: tuple[str, ...] = ()  # as written (the default excludes come besides)
    ignore: tuple[str, ...] = ()
    problem: str | None = None  # why the configuration could not be read

    @property
    def narrowed(self) -> bool:
        """Whether the configuration narrows the project (`include` or `exclude`)."""
        return bool(self.include or self.exclude)

    def split(self, root: Path, paths: Sequence[Path]) -> Split:
        """`paths` (under `root`) as analysed, excluded or ignored. Blocking: it looks for
        virtual environments' markers (run in a thread)."""
        include = _patterns(self.include or (".",), root)
        based = self.server == "basedpyright"
        defaults = based or not self.exclude
        implied = (BASED_EXCLUDES if based else DEFAULT_EXCLUDES) if defaults else ()
        exclude = _patterns((*self.exclude, *implied), root)
        ignore = _patterns(self.ignore, root)
        venvs = _Venvs(root) if defaults else None
        split = Split()
        for path in paths:
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                split.excluded.append(path)
                continue
            if (
                not matches(rel, include)
                or matches(rel, exclude)
                or (venvs is not None and venvs.inside(rel))
            ):
                split.excluded.append(path)
            elif matches(rel, ignore):
                split.ignored.append(path)
            else:
                split.analysed.append(path)
        return split


class _Venvs:
    """Whether a root-relative path lies in a virtual environment's folder (each folder
    looked at once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.known: dict[str, bool] = {}

    def inside(self, rel: str) -> bool:
        parts = rel.split("/")[:-1]
        return any(self._venv("/".join(parts[:n])) for n in range(1, len(parts) + 1))

    def _venv(self, folder: str) -> bool:
        known = self.known.get(folder)
        if known is None:
            here = self.root / folder
            known = self.known[folder] = any(here.joinpath(*m).exists() for m in VENV_MARKERS)
        return known


def project_split(root: Path, server: str, paths: Sequence[Path]) -> tuple[Scope, Split] | None:
    """For a server whose project its pyright configuration says: that scope, and `paths` as
    it sorts them; None for another server. Blocking (run in a thread)."""
    if server not in SCOPED_SERVERS:
        return None
    scope = pyright_scope(root, server)
    return scope, scope.split(root, paths)


def pyright_scope(root: Path, server: str = "basedpyright") -> Scope:
    """`server`'s project as the configuration at `root` says (blocking: reads files)."""
    config = root / CONFIG_FILE
    pyproject = root / PYPROJECT
    try:
        if config.is_file():
            data = json.loads(without_comments(config.read_text(encoding="utf-8")))
            return _scope(server, CONFIG_FILE, data)
        if pyproject.is_file():
            tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool")
            tool = tool if isinstance(tool, dict) else {}
            keys = ("basedpyright", "pyright") if server == "basedpyright" else ("pyright",)
            found = [k for k in keys if isinstance(tool.get(k), dict)]
            if len(found) > 1:  # basedpyright refuses the file then
                raise ValueError("both [tool.pyright] and [tool.basedpyright]")
            if found:
                return _scope(server, PYPROJECT, tool[found[0]])
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        name = CONFIG_FILE if config.is_file() else PYPROJECT
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        return Scope(server, name, problem=f"{name} could not be read ({why})")
    return Scope(server)


def _scope(server: str, name: str, data: Any) -> Scope:
    if not isinstance(data, dict):
        raise ValueError("not a table of settings")
    return Scope(
        server,
        name,
        _entries(data.get("include")),
        _entries(data.get("exclude")),
        _entries(data.get("ignore")),
    )


def _entries(value: Any) -> tuple[str, ...]:
    """A configuration's list of paths, normalised (one that is not a list is not taken, as
    the server does not take it)."""
    if not isinstance(value, list):
        return ()
    entries = [posixpath.normpath(e.strip()) for e in value if isinstance(e, str) and e.strip()]
    return tuple(entries)


_CLOSING = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)*[}\]]", re.S)  # what a trailing comma precedes


def without_comments(text: str) -> str:
    """JSON with comments (`//`, `/* */`) and trailing commas, as plain JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "," and _CLOSING.match(text, i + 1):
            i += 1  # a trailing comma
        else:
            out.append(c)
            i += 1
    return "".join(out)
