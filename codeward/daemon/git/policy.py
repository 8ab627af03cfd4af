"""Which git commands may run: subcommand tiers and argument rules, as pure functions.

`classify(root, subcommand, args)` either refuses (`ToolError`) or returns a `Decision`:
the tier (read, write, destructive), why, and whether the command may change the work tree.
Where a command's effect is unclear from its arguments, it is put in the stricter tier.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from codeward.daemon.paths import is_inside
from codeward.protocol.errors import ErrorKind, ToolError


class Tier(StrEnum):
    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"


@dataclass(frozen=True)
class Decision:
    subcommand: str
    args: tuple[str, ...]
    tier: Tier
    reason: str  # what makes it write or destructive, for the approval summary
    changes_worktree: bool = False

    @property
    def summary(self) -> str:
        shown = " ".join(_shell_quote(a) for a in (self.subcommand, *self.args))
        return f"git {shown} ({self.tier.value}: {self.reason})"


@dataclass(frozen=True)
class Spec:
    """What the walker must know of a subcommand's options to tell values from positionals."""

    short_values: str = ""  # take a value, attached or as the next argument
    short_optional: str = ""  # take an attached value only
    long_values: frozenset[str] = frozenset()  # take a value, `=v` or the next argument
    file_options: frozenset[str] = frozenset()  # the value is a file that must be inside root
    refused: frozenset[str] = frozenset()  # long names (and their abbreviations), short letters
    dash_c: str = ""  # which of `-c`/`-C` this subcommand documents (else: git's global option)


@dataclass
class Parsed:
    """Arguments split into options (name, value) and positionals, before and after `--`."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # after `--`
    dashdash: bool = False

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [v for n, v in self.options if n in names and v is not None]


GLOBAL_OPTIONS = (
    "--git-dir",
    "--work-tree",
    "--exec-path",
    "--config-env",
    "--namespace",
    "--super-prefix",
    "--list-cmds",
)
EVERYWHERE_REFUSED = frozenset({"output", "ext-diff", "textconv"})
_EXACT_OPTIONS = frozenset({"text"})  # real options that are prefixes of refused ones

_LOG_LONG = frozenset(
    {
        "author", "committer", "grep", "since", "until", "after", "before", "max-count",
        "skip", "encoding", "branches", "tags", "remotes", "glob", "exclude",
        "date", "diff-filter", "word-diff-regex", "inter-hunk-context", "relative",
        "stat-width", "stat-name-width", "stat-count", "anchored", "ignore-matching-lines",
        "decorate-refs", "decorate-refs-exclude", "format", "pretty", "orderfile",
    }
)  # fmt: skip
_DIFF_FILES = frozenset({"O", "orderfile"})
_LOG_SPEC = Spec(
    short_values="nGSO", short_optional="MCBUlI", long_values=_LOG_LONG,
    file_options=_DIFF_FILES, dash_c="cC",
)  # fmt: skip
_NO_SPEC = Spec()

SPECS: dict[str, Spec] = {
    "status": Spec(short_optional="u"),
    "diff": Spec(
        dash_c="cC",
        short_values="GSO",
        short_optional="MCBUlI",
        long_values=_LOG_LONG,
        file_options=_DIFF_FILES,
        refused=frozenset({"no-index"}),
    ),
    "log": _LOG_SPEC,
    "show": _LOG_SPEC,
    "shortlog": _LOG_SPEC,
    "blame": Spec(
        dash_c="C",
        short_optional="C",
        short_values="LS",
        long_values=frozenset({"ignore-rev", "ignore-revs-file", "date"}),
        file_options=frozenset({"S", "ignore-revs-file"}),
        refused=frozenset({"contents"}),
    ),
    "grep": Spec(
        dash_c="C",
        short_values="efABCm",
        short_optional="O",
        long_values=frozenset({"max-depth", "context", "after-context", "before-context"}),
        file_options=frozenset({"f"}),
        refused=frozenset({"O", "open-files-in-pager", "no-index"}),
    ),
    "ls-files": Spec(
        short_values="xX",
        long_values=frozenset({"exclude", "exclude-from", "format"}),
        file_options=frozenset({"X", "exclude-from"}),
    ),
    "rev-parse": _NO_SPEC,
    "describe": Spec(long_values=frozenset({"match", "exclude"})),
    "fetch": Spec(
        short_values="jo",
        long_values=frozenset(
            {
                "depth",
                "deepen",
                "shallow-since",
                "shallow-exclude",
                "jobs",
                "server-option",
                "negotiation-tip",
                "refmap",
            }
        ),
        refused=frozenset({"upload-pack", "u"}),
    ),
    "pull": Spec(
        short_values="sXjo",
        long_values=frozenset({"strategy", "strategy-option", "depth", "server-option", "jobs"}),
        refused=frozenset({"upload-pack", "u"}),
    ),
    "push": Spec(
        short_values="o",
        long_values=frozenset({"repo", "push-option", "recurse-submodules"}),
        refused=frozenset({"receive-pack", "exec"}),
    ),
    "add": Spec(long_values=frozenset({"chmod"}), file_options=frozenset({"pathspec-from-file"})),
    "commit": Spec(
        dash_c="cC",
        short_values="mFtcC",
        short_optional="S",
        long_values=frozenset(
            {
                "message",
                "file",
                "template",
                "author",
                "date",
                "fixup",
                "squash",
                "reuse-message",
                "reedit-message",
                "cleanup",
                "trailer",
                "pathspec-from-file",
                "untracked-files",
            }
        ),
        file_options=frozenset({"F", "file", "t", "template", "pathspec-from-file"}),
    ),
    "checkout": Spec(
        short_values="bB",
        long_values=frozenset({"orphan", "conflict", "track"}),
        file_options=frozenset({"pathspec-from-file"}),
    ),
    "switch": Spec(
        dash_c="cC",
        short_values="cC",
        long_values=frozenset({"create", "force-create", "orphan", "conflict"}),
    ),
    "restore": Spec(
        short_values="s",
        long_values=frozenset({"source", "conflict"}),
        file_options=frozenset({"pathspec-from-file"}),
    ),
    "merge": Spec(
        short_values="msXF",
        long_values=frozenset({"strategy", "strategy-option", "message", "file", "into-name"}),
        file_options=frozenset({"F", "file"}),
    ),
    "rebase": Spec(
        short_values="sX",
        short_optional="S",
        long_values=frozenset({"onto", "strategy", "strategy-option", "whitespace"}),
        refused=frozenset({"x", "exec", "i", "interactive", "edit-todo"}),
    ),
    "cherry-pick": Spec(
        short_values="mX",
        short_optional="S",
        long_values=frozenset({"mainline", "strategy", "strategy-option"}),
    ),
    "revert": Spec(
        short_values="mX",
        short_optional="S",
        long_values=frozenset({"mainline", "strategy", "strategy-option"}),
    ),
    "stash": Spec(
        short_values="m",
        long_values=frozenset({"message", "format", "pretty"}),
        file_options=frozenset({"pathspec-from-file"}),
    ),
    "branch": Spec(
        dash_c="cC",
        short_values="ut",
        long_values=frozenset(
            {
                "set-upstream-to",
                "contains",
                "no-contains",
                "merged",
                "no-merged",
                "points-at",
                "sort",
                "format",
                "column",
            }
        ),
    ),
    "tag": Spec(
        short_values="mFu",
        short_optional="n",
        long_values=frozenset(
            {
                "message",
                "file",
                "local-user",
                "contains",
                "no-contains",
                "merged",
                "no-merged",
                "points-at",
                "sort",
                "format",
                "cleanup",
            }
        ),
        file_options=frozenset({"F", "file"}),
    ),
    "remote": Spec(short_values="tm", long_values=frozenset({"track", "master"})),
    "reset": Spec(file_options=frozenset({"pathspec-from-file"})),
    "rm": Spec(file_options=frozenset({"pathspec-from-file"})),
    "mv": _NO_SPEC,
    "clean": Spec(short_values="e", long_values=frozenset({"exclude"})),
}

READ_SUBCOMMANDS = frozenset(
    {"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "describe",
     "shortlog", "fetch", "grep"}
)  # fmt: skip
WORKTREE_WRITES = frozenset(
    {"checkout", "switch", "merge", "rebase", "pull", "reset", "restore", "cherry-pick",
     "revert", "rm", "mv", "clean"}
)  # fmt: skip


def refuse(message: str, **details: object) -> ToolError:
    return ToolError(ErrorKind.ARGUMENT_NOT_ALLOWED, message, **details)


def classify(root: Path, subcommand: str, args: Sequence[str]) -> Decision:
    """The tier of `git subcommand args` run at `root`, or a `ToolError` refusing it."""
    if not isinstance(subcommand, str) or not subcommand:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `subcommand` as a git subcommand.")
    if not all(isinstance(a, str) for a in args):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `args` as a list of strings.")
    for arg in (subcommand, *args):
        if "\x00" in arg or "\n" in arg or "\r" in arg:
            raise refuse("Arguments may not contain NUL or line breaks; remove them.")
    if subcommand.startswith("-"):
        raise refuse(
            f"Global git options such as {subcommand!r} are not allowed; "
            "give a subcommand, and the daemon runs it at the project root."
        )
    spec = SPECS.get(subcommand)
    if spec is None:
        allowed = ", ".join(sorted(SPECS))
        raise ToolError(
            ErrorKind.SUBCOMMAND_NOT_ALLOWED,
            f"git {subcommand} is not allowed; use one of: {allowed}.",
        )
    args = tuple(args)
    parsed = parse_args(subcommand, args, spec)
    check_paths(root, parsed, spec)
    tier, reason = _TIERS.get(subcommand, _default_tier)(subcommand, parsed, root)
    changes = tier is not Tier.READ and (
        subcommand in WORKTREE_WRITES
        or (subcommand == "stash" and _stash_action(parsed) in _STASH_WORKTREE)
    )
    return Decision(subcommand, args, tier, reason, changes)


def parse_args(subcommand: str, args: Sequence[str], spec: Spec) -> Parsed:
    """Split `args` into options and positionals, refusing the injection vectors."""
    parsed = Parsed()
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        _check_url(arg)
        if parsed.dashdash:
            parsed.paths.append(arg)
        elif arg == "--":
            parsed.dashdash = True
        elif arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            _check_long(subcommand, name, spec)
            if not eq and name in spec.long_values and i < len(args):
                value, eq = args[i], "="
                i += 1
            parsed.options.append((name, value if eq else None))
        elif arg.startswith("-") and len(arg) > 1:
            if arg in ("-c", "-C") and arg[1] not in spec.dash_c:
                raise refuse(
                    f"{arg} is git's global config/directory option and is not allowed here; "
                    "the daemon runs git at the project root with its own config."
                )
            i = _parse_short(subcommand, arg, args, i, spec, parsed)
        else:
            parsed.positionals.append(arg)
    return parsed


def _parse_short(
    subcommand: str, arg: str, args: Sequence[str], i: int, spec: Spec, parsed: Parsed
) -> int:
    letters = arg[1:]
    if letters.isdigit():  # `-5`: a count
        parsed.options.append(("n", letters))
        return i
    for k, letter in enumerate(letters):
        if letter in spec.refused:
            raise refuse(f"git {subcommand} -{letter} is not allowed; remove it.")
        rest = letters[k + 1 :]
        if letter in spec.short_values:
            if not rest and i < len(args):
                rest = args[i]
                i += 1
            parsed.options.append((letter, rest))
            return i
        if letter in spec.short_optional:
            parsed.options.append((letter, rest or None))
            return i
        parsed.options.append((letter, None))
    return i


def _check_long(subcommand: str, name: str, spec: Spec) -> None:
    if f"--{name}" in GLOBAL_OPTIONS:
        raise refuse(
            f"--{name} is a global git option and is not allowed; "
            "the daemon always runs git at the project root."
        )
    if name in _EXACT_OPTIONS:
        return
    for refused in EVERYWHERE_REFUSED | spec.refused:
        # git accepts any unambiguous prefix of a long option: refuse those too.
        if len(refused) > 1 and len(name) >= 2 and refused.startswith(name):
            raise refuse(f"git {subcommand} --{refused} is not allowed; remove it.")


def _check_url(arg: str) -> None:
    lowered = arg.lower()
    if "ext::" in lowered or "fd::" in lowered:
        raise refuse("ext:: and fd:: transports run programs and are not allowed.")


def check_paths(root: Path, parsed: Parsed, spec: Spec) -> None:
    """Paths after `--`, file option values, and path-like positionals must stay in root."""
    for path in parsed.paths:
        _check_path(root, _strip_magic(path), path)
    for name, value in parsed.options:
        if name in spec.file_options and value is not None and value != "-":
            _check_path(root, value, value)
    for arg in parsed.positionals:
        if arg.lower().startswith("file://"):
            _check_path(root, arg[len("file://") :], arg)
        elif arg.startswith("/") or ".." in arg.split("/") or os.path.lexists(root / arg):
            _check_path(root, arg, arg)


def _strip_magic(pathspec: str) -> str:
    """The path of a pathspec, without `:(magic)` or short magic; `top` magic is refused."""
    if not pathspec.startswith(":"):
        return pathspec
    if pathspec.startswith(":("):
        magic, sep, rest = pathspec[2:].partition(")")
        words = {w.split(":")[0].strip() for w in magic.split(",")}
        if not sep or "top" in words:
            raise _outside(pathspec)
        return rest or "."
    rest = pathspec[1:]
    while rest and rest[0] in "!^":
        rest = rest[1:]
    if rest.startswith("/"):
        raise _outside(pathspec)
    return rest.removeprefix(":") or "."


def _check_path(root: Path, path: str, shown: str) -> None:
    candidate = Path(path) if path.startswith("/") else root / path
    resolved = Path(os.path.realpath(candidate))
    if not is_inside(resolved, root):
        raise _outside(shown, root)


def _outside(shown: str, root: Path | None = None) -> ToolError:
    if root is not None and shown.startswith("/"):
        try:
            shown = Path(shown).relative_to(root).as_posix()
        except ValueError:
            shown = "the given path"
    return ToolError(
        ErrorKind.PATH_OUTSIDE_PROJECT,
        f"{shown!r} is outside the project; give paths inside the root.",
    )


# --- tiers ------------------------------------------------------------------------------

TierResult = tuple[Tier, str]


def _default_tier(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if subcommand in READ_SUBCOMMANDS:
        return Tier.READ, "reads the repository"
    return Tier.WRITE, f"git {subcommand} changes the repository"


def _fetch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    refspecs = parsed.positionals[1:]
    writes_local = [r for r in refspecs if ":" in r.lstrip("+").rstrip(":")]
    if any(r.startswith("+") for r in writes_local) or (writes_local and _force(parsed)):
        return Tier.DESTRUCTIVE, "force-updates local refs from the remote"
    if writes_local:
        return Tier.WRITE, "updates local refs named in the refspec"
    return Tier.READ, "fetches from a remote"


def _push(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    forced = _force(parsed) or parsed.has(
        "force-with-lease", "force-if-includes", "mirror", "delete", "d", "prune"
    )
    refspecs = parsed.positionals[1:]
    if forced or any(r.startswith(("+", ":")) for r in refspecs):
        return Tier.DESTRUCTIVE, "force push (rewrites or deletes remote refs)"
    return Tier.WRITE, "pushes to a remote"


def _reset(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if parsed.has("hard", "merge", "keep"):
        return Tier.DESTRUCTIVE, "discards work-tree changes"
    return Tier.WRITE, "moves HEAD or unstages changes"


def _clean(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if parsed.has("n", "dry-run") and not _force(parsed):
        return Tier.READ, "lists what clean would remove"
    return Tier.DESTRUCTIVE, "deletes untracked files"


def _branch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if o.has("D") or (o.has("d", "delete") and _force(o)):
        return Tier.DESTRUCTIVE, "force-deletes a branch"
    if o.has("M", "C") or ((o.has("m", "move", "c", "copy") or o.positionals) and _force(o)):
        return Tier.DESTRUCTIVE, "overwrites an existing branch"
    writes = (
        "d", "delete", "m", "move", "c", "copy", "u", "set-upstream-to", "unset-upstream",
        "t", "track", "no-track", "edit-description",
    )  # fmt: skip
    if o.has(*writes):
        return Tier.WRITE, "changes branches"
    lists = ("l", "list", "v", "vv", "verbose", "contains", "no-contains", "merged",
             "no-merged", "points-at", "show-current")  # fmt: skip
    if not o.positionals or o.has(*lists):
        return Tier.READ, "lists branches"
    return Tier.WRITE, "creates a branch"


def _tag(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if o.has("d", "delete"):
        return Tier.DESTRUCTIVE, "deletes a tag (tags have no reflog)"
    if _force(o):
        return Tier.DESTRUCTIVE, "replaces an existing tag"
    if o.has("a", "annotate", "s", "sign", "m", "message", "F", "file", "u", "local-user"):
        return Tier.WRITE, "creates a tag"
    lists = ("l", "list", "n", "contains", "no-contains", "merged", "no-merged", "points-at",
             "v", "verify")  # fmt: skip
    if not o.positionals or o.has(*lists):
        return Tier.READ, "lists tags"
    return Tier.WRITE, "creates a tag"


def _remote(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    action = parsed.positionals[0] if parsed.positionals else ""
    if action in ("", "show", "get-url"):
        return Tier.READ, "lists remotes"
    return Tier.WRITE, f"remote {action} changes the repository's remotes"


_STASH_WORKTREE = frozenset({"push", "save", "pop", "apply", "branch"})


def _stash_action(parsed: Parsed) -> str:
    return parsed.positionals[0] if parsed.positionals else "push"


def _stash(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    action = _stash_action(parsed)
    if action in ("list", "show"):
        return Tier.READ, "lists stashes"
    if action in ("drop", "clear"):
        return Tier.DESTRUCTIVE, f"stash {action} deletes stashed changes"
    return Tier.WRITE, f"stash {action} changes the work tree"


def _checkout(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if _force(o) or o.has("B", "ours", "theirs", "patch", "p", "pathspec-from-file", "merge"):
        return Tier.DESTRUCTIVE, "overwrites work-tree changes"
    if o.paths or len(o.positionals) > 1:
        return Tier.DESTRUCTIVE, "checks out paths, discarding their work-tree changes"
    for arg in o.positionals:
        if any(c in arg for c in "*?[") or os.path.lexists(root / arg):
            return Tier.DESTRUCTIVE, f"{arg!r} names files whose changes would be discarded"
    return Tier.WRITE, "switches branches"


def _switch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if _force(parsed) or parsed.has("discard-changes", "force-create", "C"):
        return Tier.DESTRUCTIVE, "discards work-tree changes"
    return Tier.WRITE, "switches branches"


def _restore(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    staged = parsed.has("S", "staged")
    worktree = parsed.has("W", "worktree")
    if staged and not worktree:
        return Tier.WRITE, "unstages changes"
    return Tier.DESTRUCTIVE, "discards work-tree changes"


def _rm_mv(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if _force(parsed):
        return Tier.DESTRUCTIVE, f"{subcommand} --force may lose uncommitted changes"
    return Tier.WRITE, f"git {subcommand} changes the work tree and index"


def _force(parsed: Parsed) -> bool:
    return parsed.has("f", "force")


_TIERS = {
    "fetch": _fetch,
    "push": _push,
    "reset": _reset,
    "clean": _clean,
    "branch": _branch,
    "tag": _tag,
    "remote": _remote,
    "stash": _stash,
    "checkout": _checkout,
    "switch": _switch,
    "restore": _restore,
    "rm": _rm_mv,
    "mv": _rm_mv,
}


def _shell_quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "-_./=:@^~+,%" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"
