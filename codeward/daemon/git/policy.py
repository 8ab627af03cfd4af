"""Which git commands may run: subcommand tiers and argument rules, as pure functions.

`classify(root, subcommand, args)` either refuses (`ToolError`) or returns a `Decision`:
the tier (read, write, destructive), why, and whether the command may change the work tree.
Arguments are split by git's own grammar (grammar.py, tables.py): only the exact options
in the subcommand's table pass. Where a command's effect is unclear from its arguments, it
is put in the stricter tier.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from codeward.daemon.git.grammar import Kind, Parsed, parse_args, refuse
from codeward.daemon.git.tables import MERGE_STRATEGIES, SPECS
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


READ_SUBCOMMANDS = frozenset(
    {"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "describe",
     "shortlog", "fetch", "grep"}
)  # fmt: skip
WORKTREE_WRITES = frozenset(
    {"checkout", "switch", "merge", "rebase", "pull", "reset", "restore", "cherry-pick",
     "revert", "rm", "mv", "clean"}
)  # fmt: skip
# Subcommands whose first operand is a repository (a remote name or URL).
_REMOTE_FIRST = frozenset({"fetch", "pull", "push"})
_STASH_ACTIONS = frozenset(
    {"push", "save", "pop", "apply", "drop", "clear", "list", "show", "branch"}
)
_STASH_WORKTREE = frozenset({"push", "save", "pop", "apply", "branch"})
_REMOTE_ACTIONS = frozenset(
    {"add", "rename", "remove", "rm", "set-head", "set-branches", "get-url", "set-url",
     "show", "prune", "update"}
)  # fmt: skip


def classify(root: Path, subcommand: str, args: Sequence[str]) -> Decision:
    """The tier of `git subcommand args` run at `root`, or a `ToolError` refusing it."""
    if not isinstance(subcommand, str) or not subcommand:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `subcommand` as a git subcommand.")
    if not all(isinstance(a, str) for a in args):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `args` as a list of strings.")
    for arg in (subcommand, *args):
        if "\x00" in arg or "\n" in arg or "\r" in arg:
            raise refuse("Arguments may not contain NUL or line breaks; remove them.")
        lowered = arg.lower()
        if "ext::" in lowered or "fd::" in lowered:
            raise refuse("ext:: and fd:: transports run programs and are not allowed.")
    if subcommand.startswith("-"):
        raise refuse(
            f"Global git options such as {subcommand!r} are not allowed; "
            "give a subcommand, and the daemon runs it at the project root."
        )
    spec = SPECS.get(subcommand)
    words = subcommand.split()
    if spec is None and len(words) > 1 and words[0] in SPECS:  # `log -n 2` as one string
        split = json.dumps({"subcommand": words[0], "args": [*words[1:], *args]})
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"`subcommand` is one word, its arguments go in `args`: give {split}.",
        )
    if spec is None:
        allowed = ", ".join(sorted(SPECS))
        raise ToolError(
            ErrorKind.SUBCOMMAND_NOT_ALLOWED,
            f"git {subcommand} is not allowed; use one of: {allowed}.",
        )
    args = tuple(args)
    parsed = parse_args(subcommand, args, spec)
    check_values(root, subcommand, parsed)
    check_operands(root, subcommand, parsed)
    tier, reason = _TIERS.get(subcommand, _default_tier)(subcommand, parsed, root)
    changes = tier is not Tier.READ and (
        subcommand in WORKTREE_WRITES
        or (subcommand == "stash" and _stash_action(parsed) in _STASH_WORKTREE)
    )
    return Decision(subcommand, args, tier, reason, changes)


# --- values and operands ----------------------------------------------------------------


def check_values(root: Path, subcommand: str, parsed: Parsed) -> None:
    """Option values that name files, remotes or merge strategies."""
    for option, value in parsed.options:
        if value is None:
            continue
        if option.kind is Kind.FILE and value != "-":
            _check_path(root, value, value)
        elif option.kind is Kind.REMOTE:
            check_remote(root, value)
        elif option.kind is Kind.STRATEGY and value not in MERGE_STRATEGIES:
            raise refuse(
                f"Merge strategy {value!r} is not one of git's own "
                f"({', '.join(sorted(MERGE_STRATEGIES))}); git would run a program for it.",
                option=f"--{option.name}",
            )


def check_operands(root: Path, subcommand: str, parsed: Parsed) -> None:
    """Paths after `--` and path-like operands stay in root; repositories are remotes."""
    for path in parsed.paths:
        check_pathspec(root, path)
    operands = list(parsed.positionals)
    if subcommand in _REMOTE_FIRST and operands:
        many = subcommand == "fetch" and parsed.has("multiple")
        for remote in operands if many else operands[:1]:
            check_remote(root, remote)
        return  # the rest are refspecs
    if subcommand == "remote":
        action = operands[0] if operands else ""
        if action and action not in _REMOTE_ACTIONS:
            raise refuse(f"git remote {action} is not allowed; use one of: "
                         f"{', '.join(sorted(_REMOTE_ACTIONS))}.")  # fmt: skip
        if action == "add" and len(operands) > 2:
            check_remote(root, operands[2], url=True)
        if action == "set-url" and len(operands) > 2 and not parsed.has("delete"):
            check_remote(root, operands[2], url=True)
        return
    for arg in operands:
        if _path_like(root, arg):
            check_pathspec(root, arg)


def _path_like(root: Path, arg: str) -> bool:
    return (
        arg.startswith((":", "/"))
        or ".." in arg.split("/")
        or arg.lower().startswith("file://")
        or os.path.lexists(root / arg)
    )


_LONG_MAGIC_OK = frozenset({"exclude", "icase", "literal", "glob"})
_SHORT_MAGIC = "/!^"


def check_pathspec(root: Path, pathspec: str) -> None:
    """A pathspec must name paths inside root: `top` magic (`:(top)`, `:/`) is refused, and
    only the magic words that cannot widen it (exclude, icase, literal, glob) are allowed."""
    path = pathspec
    if pathspec.lower().startswith("file://"):
        path = pathspec[len("file://") :]
    elif pathspec.startswith(":("):
        magic, sep, rest = pathspec[2:].partition(")")
        if not sep:
            raise refuse(f"Pathspec {pathspec!r} has no closing ')'; fix its magic.")
        for word in magic.split(","):
            name = word.split(":")[0].strip().lower()
            if name == "top":
                raise _outside(pathspec, root)
            if name not in _LONG_MAGIC_OK:
                raise refuse(
                    f"Pathspec magic {name!r} in {pathspec!r} is not allowed; use exclude, "
                    "icase, literal or glob, or a plain path.",
                    magic=name,
                )
        path = rest
    elif pathspec.startswith(":"):
        k = 1
        while k < len(pathspec) and pathspec[k] in _SHORT_MAGIC:
            if pathspec[k] == "/":
                raise _outside(pathspec, root)
            k += 1
        path = pathspec[k + 1 :] if pathspec[k : k + 1] == ":" else pathspec[k:]
    _check_path(root, path or ".", pathspec)


_NETWORK_URL = re.compile(r"(?:https?|ssh|git|git\+ssh|ssh\+git)://(?:[^/?#@]*@)?([^/?#]*)")
_SCP_LIKE = re.compile(r"(?:[^@/:]+@)?([^/:]+):")
_REMOTE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_remote(root: Path, value: str, *, url: bool = False) -> None:
    """A repository operand: a configured remote's name, or a network URL (http(s), ssh,
    git, scp-like `host:path`), never a local path, `file://`, `~` or a transport helper.
    `url` asks for a URL only (what `remote add` stores)."""
    network = _NETWORK_URL.match(value.lower())
    if network is not None:
        if network.group(1) and not network.group(1).startswith("-"):
            return
    elif "::" not in value and "://" not in value:
        scp = _SCP_LIKE.match(value)
        if scp is not None and not scp.group(1).startswith("-"):
            return
        if not url and _REMOTE_NAME.fullmatch(value):
            if os.path.lexists(root / value):  # git falls back to it as a path
                _check_path(root, value, value)
            return
        if value.startswith(("/", ".")):
            _check_path(root, value, value)
    elif value.lower().startswith("file://"):
        _check_path(root, value[len("file://") :], value)
    raise refuse(
        f"{_shown(value, root)!r} is not a remote codeward lets git use: give the name of a "
        "configured remote or a network URL (https://, ssh://, git://, host:path); local "
        "paths, file://, ~ and transport helpers are refused.",
    )


def _check_path(root: Path, path: str, shown: str) -> None:
    candidate = Path(path) if path.startswith("/") else root / path
    resolved = Path(os.path.realpath(candidate))
    if not is_inside(resolved, root):
        raise _outside(shown, root)


def _shown(value: str, root: Path) -> str:
    if "/" not in value:
        return value
    for prefix in ("file://", ""):
        path = value.removeprefix(prefix)
        if path.startswith("/"):
            try:
                return Path(path).relative_to(root).as_posix()
            except ValueError:
                return "the given path"
    return value if not value.startswith("~") else "the given path"


def _outside(shown: str, root: Path) -> ToolError:
    return ToolError(
        ErrorKind.PATH_OUTSIDE_PROJECT,
        f"{_shown(shown, root)!r} is outside the project; give paths inside the root.",
    )


# --- tiers ------------------------------------------------------------------------------

TierResult = tuple[Tier, str]


def _default_tier(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if subcommand in READ_SUBCOMMANDS:
        return Tier.READ, "reads the repository"
    return Tier.WRITE, f"git {subcommand} changes the repository"


def _writes_local_refs(refspecs: Sequence[str]) -> tuple[bool, bool]:
    """Whether fetch refspecs write local refs, and whether they force it (`+src:dst`,
    `tag NAME`)."""
    writes = forced = False
    for k, refspec in enumerate(refspecs):
        if refspec == "tag" or (k and refspecs[k - 1] == "tag"):
            writes = True
            continue
        src, colon, dst = refspec.partition(":")
        if colon and dst:
            writes = True
            forced = forced or src.startswith("+")
    return writes, forced


def _fetch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    refspecs = [] if parsed.has("multiple") else parsed.positionals[1:]
    writes, forced = _writes_local_refs(refspecs)
    if forced or (writes and _force(parsed)):
        return Tier.DESTRUCTIVE, "force-updates local refs from the remote"
    if parsed.has("prune-tags") or (parsed.has("tags") and _force(parsed)):
        return Tier.DESTRUCTIVE, "deletes or overwrites local tags (tags have no reflog)"
    if writes:
        return Tier.WRITE, "updates local refs named in the refspec"
    if parsed.has("prune"):
        return Tier.WRITE, "deletes stale remote-tracking branches"
    return Tier.READ, "fetches from a remote"


def _pull(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    writes, forced = _writes_local_refs(parsed.positionals[1:])
    if forced or (writes and _force(parsed)) or (parsed.has("tags") and _force(parsed)):
        return Tier.DESTRUCTIVE, "force-updates local refs from the remote"
    return Tier.WRITE, "fetches and merges into the current branch"


def _push(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    forced = _force(parsed) or parsed.has(
        "force-with-lease", "force-if-includes", "mirror", "delete", "prune"
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
    if parsed.has("dry-run") and not _force(parsed):
        return Tier.READ, "lists what clean would remove"
    return Tier.DESTRUCTIVE, "deletes untracked files"


def _branch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if o.has("D") or (o.has("delete") and _force(o)):
        return Tier.DESTRUCTIVE, "force-deletes a branch"
    if o.has("M", "C") or ((o.has("move", "copy") or o.positionals) and _force(o)):
        return Tier.DESTRUCTIVE, "overwrites an existing branch"
    writes = ("delete", "move", "copy", "set-upstream-to", "unset-upstream", "track",
              "no-track", "edit-description", "create-reflog")  # fmt: skip
    if o.has(*writes):
        return Tier.WRITE, "changes branches"
    # git lists (never creates) with no operand or with a filter; `-v`, `--column`,
    # `--format`, `--sort` do not make it list.
    lists = ("list", "contains", "no-contains", "merged", "no-merged", "points-at",
             "show-current")  # fmt: skip
    if not o.positionals or o.has(*lists):
        return Tier.READ, "lists branches"
    return Tier.WRITE, "creates a branch"


def _tag(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if o.has("delete"):
        return Tier.DESTRUCTIVE, "deletes a tag (tags have no reflog)"
    if _force(o):
        return Tier.DESTRUCTIVE, "replaces an existing tag"
    if o.has("annotate", "sign", "message", "file", "local-user", "edit", "create-reflog"):
        return Tier.WRITE, "creates a tag"
    lists = ("list", "n", "contains", "no-contains", "merged", "no-merged", "points-at",
             "verify")  # fmt: skip
    if not o.positionals or o.has(*lists):
        return Tier.READ, "lists tags"
    return Tier.WRITE, "creates a tag"


def _remote(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    action = parsed.positionals[0] if parsed.positionals else ""
    if action in ("", "show", "get-url"):
        return Tier.READ, "lists remotes"
    return Tier.WRITE, f"remote {action} changes the repository's remotes"


def _stash_action(parsed: Parsed) -> str:
    """The stash action: any operand naming one counts (the stricter reading)."""
    named = [p for p in parsed.positionals if p in _STASH_ACTIONS]
    for action in ("clear", "drop"):
        if action in named:
            return action
    return named[0] if named else "push"


def _stash(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    action = _stash_action(parsed)
    if action in ("list", "show"):
        return Tier.READ, "lists stashes"
    if action in ("drop", "clear"):
        return Tier.DESTRUCTIVE, f"stash {action} deletes stashed changes"
    return Tier.WRITE, f"stash {action} changes the work tree"


def _checkout(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    o = parsed
    if _force(o) or o.has("B", "ours", "theirs", "merge", "pathspec-from-file"):
        return Tier.DESTRUCTIVE, "overwrites work-tree changes"
    if o.paths or len(o.positionals) > 1:
        return Tier.DESTRUCTIVE, "checks out paths, discarding their work-tree changes"
    for arg in o.positionals:
        if arg.startswith(":") or any(c in arg for c in "*?[") or os.path.lexists(root / arg):
            return Tier.DESTRUCTIVE, f"{arg!r} names files whose changes would be discarded"
    return Tier.WRITE, "switches branches"


def _switch(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if _force(parsed) or parsed.has("discard-changes", "force-create"):
        return Tier.DESTRUCTIVE, "discards work-tree changes"
    return Tier.WRITE, "switches branches"


def _restore(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    staged = parsed.has("staged")
    worktree = parsed.has("worktree")
    if staged and not worktree:
        return Tier.WRITE, "unstages changes"
    return Tier.DESTRUCTIVE, "discards work-tree changes"


def _rm_mv(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    if _force(parsed):
        return Tier.DESTRUCTIVE, f"{subcommand} --force may lose uncommitted changes"
    return Tier.WRITE, f"git {subcommand} changes the work tree and index"


def _sequencer(subcommand: str, parsed: Parsed, root: Path) -> TierResult:
    """merge, rebase, cherry-pick, revert: `--abort` and `--skip` reset the work tree."""
    if parsed.has("abort", "skip"):
        return Tier.DESTRUCTIVE, "--abort/--skip resets the work tree, discarding changes"
    return Tier.WRITE, f"git {subcommand} changes the repository"


def _force(parsed: Parsed) -> bool:
    return parsed.has("force")


_TIERS = {
    "fetch": _fetch,
    "pull": _pull,
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
    "merge": _sequencer,
    "rebase": _sequencer,
    "cherry-pick": _sequencer,
    "revert": _sequencer,
}


def _shell_quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "-_./=:@^~+,%" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"
