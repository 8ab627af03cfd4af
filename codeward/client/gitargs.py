"""Git arguments typed on the command line, made ready for the daemon (which runs git at the
root): codeward's own flags taken out, and paths made relative to the root.

From a subdirectory, git reads pathspecs and file options relative to that directory; the
daemon runs git at the root, so the CLI rewrites what git would have read relative to the
working directory: every argument after `--`, every positional of the commands whose
positionals are all paths (`add`, `rm`, `mv`, `restore`, `clean`, `ls-files`), any other
positional that names an existing file or folder, the values of the options that name a
file (`commit -F`, `grep -f`, `--pathspec-from-file`...), and a bare `--relative`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

# codeward's own flags, accepted after the git subcommand too (git has none of these names)
OWN_FLAGS = frozenset({"--allow-destructive", "--yes", "--json", "--no-autostart"})

_ALL_PATHS = frozenset({"add", "rm", "mv", "restore", "clean", "ls-files"})
# options whose (separate or attached) value is a file, per subcommand ("*": every one)
_FILE_OPTIONS: dict[str, frozenset[str]] = {
    "*": frozenset({"--pathspec-from-file"}),
    "commit": frozenset({"-F", "--file"}),
    "tag": frozenset({"-F", "--file"}),
    "grep": frozenset({"-f"}),
    "diff": frozenset({"-O"}),
    "log": frozenset({"-O"}),
    "show": frozenset({"-O"}),
    "ls-files": frozenset({"-X", "--exclude-from"}),
}
# options whose separate value is not a path (so it is not taken for a positional)
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "restore": frozenset({"-s", "--source"}),
    "ls-files": frozenset({"-x", "--exclude", "--with-tree"}),
    "clean": frozenset({"-e", "--exclude"}),
    "add": frozenset({"--chmod"}),
}


def take_own_flags(args: Sequence[str]) -> tuple[list[str], set[str]]:
    """`args` without codeward's own flags (those before a `--`), and the flags taken."""
    kept: list[str] = []
    taken: set[str] = set()
    for i, arg in enumerate(args):
        if arg == "--":
            kept.extend(args[i:])
            break
        if arg in OWN_FLAGS:
            taken.add(arg)
        else:
            kept.append(arg)
    return kept, taken


def root_relative(subcommand: str, args: Sequence[str], cwd: Path, root: Path) -> list[str]:
    """`args` with the paths git would read relative to `cwd` made relative to `root`
    (unchanged when `cwd` is the root or outside it)."""
    if cwd == root or not cwd.is_relative_to(root):
        return list(args)
    prefix = cwd.relative_to(root).as_posix()
    files = _FILE_OPTIONS["*"] | _FILE_OPTIONS.get(subcommand, frozenset())
    values = _VALUE_OPTIONS.get(subcommand, frozenset())
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out.append(arg)
            out.extend(pathspec(a, prefix) for a in args[i:])
            break
        name, eq, value = arg.partition("=")
        if arg.startswith("--") and eq and name in files:
            out.append(f"{name}={_path(value, prefix)}")
        elif arg in files and i < len(args):
            out += [arg, _path(args[i], prefix)]
            i += 1
        elif arg in values and i < len(args):
            out += [arg, args[i]]
            i += 1
        elif arg == "--relative":  # "relative to the current directory", in git's words
            out.append(f"--relative={prefix}/")
        elif arg.startswith("-") or not arg:
            out.append(arg)
        elif subcommand in _ALL_PATHS or os.path.lexists(cwd / arg):
            out.append(pathspec(arg, prefix))
        else:
            out.append(arg)  # a revision, a pattern, a remote...
    return out


def pathspec(spec: str, prefix: str) -> str:
    """A pathspec relative to `prefix` made relative to the root; its magic kept."""
    if not spec.startswith(":"):
        return _path(spec, prefix)
    if spec.startswith(":("):
        magic, close, rest = spec[2:].partition(")")
        if not close or "top" in magic.split(","):
            return spec
        return f":({magic}){_path(rest, prefix)}"
    body = spec[1:]
    count = len(body) - len(body.lstrip("/!^"))
    signs, rest = body[:count], body[count:]
    sep = ":" if rest.startswith(":") else ""
    rest = rest.removeprefix(":")
    if "/" in signs or not rest:  # `:/` is the top already
        return spec
    return f":{signs}{sep}{_path(rest, prefix)}"


def _path(path: str, prefix: str) -> str:
    """`path` typed in the folder `prefix` of the root, relative to the root (`..` kept when
    it leaves the root, for the daemon to refuse)."""
    if os.path.isabs(path):
        return path
    joined = os.path.normpath(os.path.join(prefix, path))
    return joined + "/" if path.endswith("/") and joined != "." else joined
