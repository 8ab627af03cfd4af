"""`git status` in one run: the long format, and porcelain v2 as the user asked for it,
rendered from `--porcelain=v2 -z --branch`.

Porcelain v2 with branch headers holds everything the long format shows for an ordinary
repository: the branch, its upstream and how far ahead or behind, staged, unstaged and
untracked files. What it cannot tell apart (a detached HEAD "at" or "from", conflicts
in a merge or rebase in progress, submodules, configuration that changes the long
format) makes `plain` or `long_format` say no, and the caller runs `git status` itself.
Porcelain v2 itself, with or without `-z` and `--branch`, is the same records: `porcelain`
drops the branch headers not asked for and, without `-z`, writes lines with quoted paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from codeward.daemon.git import settled
from codeward.daemon.git.config_scan import ConfigEntry

# What git's long format calls each change, padded to the widest label ("typechange:").
_LABELS = {
    "A": "new file:",
    "C": "copied:",
    "D": "deleted:",
    "M": "modified:",
    "R": "renamed:",
    "T": "typechange:",
}
_WIDTH = max(len(label) for label in _LABELS.values()) + 1
# Operations in progress that the long format describes and porcelain v2 does not.
_STATE_FILES = frozenset({"MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD",
                          "REVERT_HEAD", "BISECT_LOG", "sequencer"})  # fmt: skip
_UNTRACKED_MODES = {"no": "no", "normal": "normal", "all": "all", "": "all"}
_PLAIN_PATH = re.compile(rb"[\x20\x21\x23-\x5b\x5d-\x7e]*")  # printable ASCII but quote, backslash
_C_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}


def untracked_mode(args: Sequence[str]) -> str | None:
    """`no`, `normal` or `all` from `-u[MODE]`/`--untracked-files[=MODE]` (the last wins);
    None when some argument is not a pathspec or one of those options."""
    mode = "normal"
    for i, arg in enumerate(args):
        if "--" in args[:i] or arg == "--" or not arg.startswith("-"):
            continue  # a pathspec: porcelain v2 filters the same way
        if arg.startswith("--untracked-files"):
            value = arg.removeprefix("--untracked-files").removeprefix("=")
            if arg != "--untracked-files" and not arg.startswith("--untracked-files="):
                return None
        elif arg.startswith("-u"):
            value = arg[2:]
        else:
            return None
        if value not in _UNTRACKED_MODES:
            return None
        mode = _UNTRACKED_MODES[value]
    return mode


def format_configured(entries: Sequence[ConfigEntry]) -> bool:
    """Whether config among `entries` changes what the long format prints."""
    for entry in entries:
        key, value = entry.key.lower(), (entry.value or "true").lower()
        if key.startswith(("status.", "advice.status")) or key == "core.quotepath":
            return True
        if key in ("color.ui", "color.status", "column.ui", "column.status") and (
            "always" in value
        ):
            return True
    return False


def quote_path_configured(entries: Sequence[ConfigEntry]) -> bool:
    """Whether `entries` set core.quotePath (which porcelain v2 without `-z` follows)."""
    return any(entry.key.lower() == "core.quotepath" for entry in entries)


def plain(configured: bool, git_dir: Path, names: frozenset[str] | None = None) -> bool:
    """Whether, in the repository's present state, `git status` prints what `long_format`
    renders from porcelain v2 (its arguments aside: `untracked_mode` says those);
    `configured`: `format_configured` of the repository's config. Told before git runs, so
    that what the parse run cannot render (an operation in progress, a detached HEAD) has
    git's own status start with it, not after it. Each of the three things read is
    remembered while its settled stat stands (`settled`): a status of a repository at rest
    costs three lstats, not a listing of its git directory and a read of HEAD. `names`:
    the git directory's entries when they were listed during this call (the repository's
    inspection lists it when its stat changed, as every index git writes changes it): not
    listed again."""
    if configured:
        return False
    where = str(git_dir)
    if names is not None:
        in_operation = not _STATE_FILES.isdisjoint(names)
    else:
        in_operation = settled.value(where, _in_operation)
    return (
        not in_operation
        and not settled.value(os.path.join(where, "info"), _sparse)
        and settled.value(os.path.join(where, "HEAD"), _on_branch)
    )


def _in_operation(git_dir: str) -> bool:
    """Whether the git directory names an operation in progress (or cannot be listed)."""
    try:
        return not _STATE_FILES.isdisjoint(os.listdir(git_dir))
    except OSError:
        return True  # git itself says what it finds


def _sparse(info: str) -> bool:
    return os.path.lexists(os.path.join(info, "sparse-checkout"))


def _on_branch(head: str) -> bool:
    """Whether HEAD names a branch (else detached: "at" or "from" only git knows)."""
    try:
        fd = os.open(head, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False  # no HEAD to read: git itself says why
    try:
        return os.read(fd, 5) == b"ref: "
    except OSError:
        return False
    finally:
        os.close(fd)


def quote(path: str) -> str:
    """A path as the long format shows it (core.quotePath: C quotes, octal non-ASCII)."""
    raw = path.encode("utf-8", "surrogateescape")
    if _PLAIN_PATH.fullmatch(raw):
        return path
    out = []
    for b in raw:
        if b in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[b])
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _plural(count: int) -> str:
    return "commit" if count == 1 else "commits"


def _tracking(upstream: str, ab: tuple[int, int] | None) -> list[str]:
    if ab is None:
        return [f"Your branch is based on '{upstream}', but the upstream is gone.",
                '  (use "git branch --unset-upstream" to fixup)']  # fmt: skip
    ahead, behind = ab
    if not ahead and not behind:
        return [f"Your branch is up to date with '{upstream}'."]
    if not behind:
        return [f"Your branch is ahead of '{upstream}' by {ahead} {_plural(ahead)}.",
                '  (use "git push" to publish your local commits)']  # fmt: skip
    if not ahead:
        return [f"Your branch is behind '{upstream}' by {behind} {_plural(behind)}, "
                "and can be fast-forwarded.",
                '  (use "git pull" to update your local branch)']  # fmt: skip
    return [f"Your branch and '{upstream}' have diverged,",
            f"and have {ahead} and {behind} different commits each, respectively.",
            '  (use "git pull" to merge the remote branch into yours)']  # fmt: skip


def _change(letter: str, path: str, orig: str | None) -> str:
    label = _LABELS[letter]
    shown = f"{quote(orig)} -> {quote(path)}" if orig is not None else quote(path)
    return f"\t{label:<{_WIDTH}}{shown}"


def long_format(data: bytes, mode: str) -> str | None:
    """git's long status output from `git status --porcelain=v2 -z --branch` output; None
    for what only git itself can say (detached HEAD, conflicts, submodules)."""
    parts = data.decode("utf-8", "surrogateescape").split("\x00")
    if parts and parts[-1] == "":
        parts.pop()
    head: str | None = None
    initial = False
    upstream: str | None = None
    ab: tuple[int, int] | None = None
    staged: list[str] = []
    unstaged: list[str] = []
    untracked: list[str] = []
    deleted = False
    i = 0
    while i < len(parts):
        record = parts[i]
        i += 1
        kind = record[:1]
        if kind == "#":
            key, _, value = record[2:].partition(" ")
            if key == "branch.oid":
                initial = value == "(initial)"
            elif key == "branch.head":
                if value == "(detached)":
                    return None  # "detached at" or "from": only the reflog knows
                head = value
            elif key == "branch.upstream":
                upstream = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                ab = (int(ahead.lstrip("+")), int(behind.lstrip("-")))
        elif kind in ("1", "2"):
            fields = record.split(" ", 8 if kind == "1" else 9)
            xy, sub = fields[1], fields[2]
            if sub != "N..." or any(c not in _LABELS and c != "." for c in xy):
                return None  # a submodule, or a state the long format words otherwise
            orig = None
            if kind == "2":
                orig = parts[i] if i < len(parts) else ""
                i += 1
            path = fields[-1]
            if xy[0] != ".":
                staged.append(_change(xy[0], path, orig))
            if xy[1] != ".":
                unstaged.append(_change(xy[1], path, orig if xy[1] in "RC" else None))
                deleted = deleted or xy[1] == "D"
        elif kind == "?":
            untracked.append("\t" + quote(record[2:]))
        else:
            return None  # conflicts ("u") or ignored files ("!")
    if head is None:
        return None
    lines = [f"On branch {head}"]
    if upstream is not None and not initial:
        lines += [*_tracking(upstream, ab), ""]
    if initial:
        lines += ["", "No commits yet", ""]
    if staged:
        unstage = "git rm --cached" if initial else "git restore --staged"
        lines += ["Changes to be committed:", f'  (use "{unstage} <file>..." to unstage)',
                  *staged, ""]  # fmt: skip
    if unstaged:
        lines += ["Changes not staged for commit:",
                  f'  (use "git {"add/rm" if deleted else "add"} <file>..." to update what will '
                  "be committed)",
                  '  (use "git restore <file>..." to discard changes in working directory)',
                  *unstaged, ""]  # fmt: skip
    if mode != "no" and untracked:
        lines += ["Untracked files:",
                  '  (use "git add <file>..." to include in what will be committed)',
                  *untracked, ""]  # fmt: skip
    elif mode == "no" and staged:
        lines.append("Untracked files not listed (use -u option to show untracked files)")
    if not staged:
        if unstaged:
            lines.append('no changes added to commit (use "git add" and/or "git commit -a")')
        elif untracked and mode != "no":
            lines.append(
                'nothing added to commit but untracked files present (use "git add" to track)'
            )
        elif initial:
            lines.append('nothing to commit (create/copy files and use "git add" to track)')
        elif mode == "no":
            lines.append("nothing to commit (use -u to show untracked files)")
        else:
            lines.append("nothing to commit, working tree clean")
    return "\n".join(lines) + "\n"


def porcelain_format(args: Sequence[str], quote_path: bool) -> tuple[bool, bool] | None:
    """(branch headers, `-z`) when `git status ARGS` prints porcelain v2 that `porcelain`
    renders from the parse run; None otherwise. `quote_path`: `quote_path_configured` of
    the repository's config."""
    porcelain = branch = nul = False
    for i, arg in enumerate(args):
        if "--" in args[:i] or arg == "--" or not arg.startswith("-"):
            continue  # a pathspec: the parse run has it too
        if arg == "--porcelain=v2":
            porcelain = True
        elif arg in ("--branch", "-b"):
            branch = True
        elif arg == "-z":
            nul = True
        elif untracked_mode([arg]) is None:  # the parse run keeps the untracked mode
            return None
    if not porcelain:
        return None
    if not nul and quote_path:
        return None  # quoting as configured: git's to do
    return branch, nul


# the fields of each record before its path: changed, renamed or copied, unmerged
_FIELDS_BEFORE_PATH = {b"1": 8, b"2": 9, b"u": 10}


def porcelain(data: bytes, branch: bool, nul: bool) -> bytes:
    """`git status --porcelain=v2 [--branch] [-z]` from `--porcelain=v2 -z --branch` output."""
    parts = data.split(b"\x00")
    if parts and parts[-1] == b"":
        parts.pop()
    records: list[bytes] = []
    i = 0
    while i < len(parts):
        record = parts[i]
        i += 1
        if record.startswith(b"# branch."):
            if branch:
                records.append(record)
            continue
        kind = record[:1]
        orig = None
        if kind == b"2":  # the original path follows as a record of its own
            orig = parts[i] if i < len(parts) else b""
            i += 1
        if nul:
            records += [record] if orig is None else [record, orig]
            continue
        if kind in _FIELDS_BEFORE_PATH:
            *fields, path = record.split(b" ", _FIELDS_BEFORE_PATH[kind])
            record = b" ".join([*fields, _quoted(path)])
        elif kind in (b"?", b"!"):
            record = record[:2] + _quoted(record[2:])
        records.append(record if orig is None else record + b"\t" + _quoted(orig))
    end = b"\x00" if nul else b"\n"
    return b"".join(record + end for record in records)


def _quoted(path: bytes) -> bytes:
    return quote(path.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
