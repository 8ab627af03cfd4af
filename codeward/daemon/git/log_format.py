"""`git log` in one run: its default (medium) output rendered from the run `parsed` comes
from.

A plain `git log` (no option that changes what it prints, nor config that does: `plain`,
`configured`) prints, per commit, fields git itself fills in the parse run's format too
(`FORMAT`: the parsed fields, then the author as mailmapped, the date as `log.date` would
show it, the abbreviated parents, the raw message and the notes), so one run gives both:
`medium` lays them out as git's medium format does (the message's lines indented, trailing
whitespace and leading blank lines dropped). A message with a tab (git expands it by
display columns) or commits with notes make `medium` say no, and the caller runs `git log`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from codeward.daemon.git import parse
from codeward.daemon.git.config_scan import ConfigEntry

# The parsed fields, then what the medium format shows of each commit.
FORMAT = f"{parse.LOG_FORMAT}%x00%aN%x00%aE%x00%ad%x00%p%x00%B%x00%N"
# The run's options: `%aN` reads the mailmap itself, so the log's own reading of it (for
# the medium format's header, `log.mailmap`) is turned off: sympy's 1,924-line mailmap read
# twice cost more than the rest of a `log -n 20`.
RUN_OPTIONS = ("-z", "--no-use-mailmap", f"--format={FORMAT}")
_FIELDS = len(parse.LOG_FIELDS)
_WIDTH = _FIELDS + 6
# Options that only choose which commits are shown, and in which order.
_PLAIN_EXACT = frozenset(
    {"--all", "--branches", "--tags", "--remotes", "--no-merges", "--merges", "--first-parent",
     "--reverse", "--date-order", "--topo-order", "--author-date-order", "-i",
     "--regexp-ignore-case", "--all-match", "--invert-grep", "-E", "--extended-regexp",
     "-F", "--fixed-strings", "-n"}
)  # fmt: skip
_PLAIN_VALUED = ("--max-count=", "--skip=", "--since=", "--after=", "--until=", "--before=",
                 "--author=", "--committer=", "--grep=")  # fmt: skip
_COUNT = re.compile(r"-n?\d+")
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
# Config that changes what the medium format shows (any value: git's own run says it).
_LOOK_KEYS = frozenset(
    {"format.pretty", "log.date", "log.decorate", "log.abbrevcommit", "log.showsignature",
     "log.mailmap", "i18n.logoutputencoding", "core.abbrev"}
)  # fmt: skip
_SPACE = b" \t\n\r"  # what git's isspace() is: trailing whitespace of a line is dropped


def plain(args: Sequence[str]) -> bool:
    """Whether `git log args` prints the medium format and no diff: every argument a
    revision, a path, or an option that only picks commits (`-n 20`, `--since=...`)."""
    for arg in args:
        if arg == "--":
            return True  # paths follow
        if not arg.startswith("-"):
            continue  # a revision or a path (or `-n`'s value)
        if arg in _PLAIN_EXACT or arg.startswith(_PLAIN_VALUED) or _COUNT.fullmatch(arg):
            continue
        return False
    return True


def configured(entries: Sequence[ConfigEntry]) -> bool:
    """Whether config among `entries` makes `git log`'s medium output differ from `medium`."""
    for entry in entries:
        key = entry.key.lower()
        if key in _LOOK_KEYS:
            return True
        if key in ("color.ui", "color.diff") and "always" in (entry.value or "").lower():
            return True
    return False


def _records(data: bytes) -> list[list[bytes]] | None:
    """The NUL-separated records of `FORMAT`, one per commit; None unless each is whole and
    starts with an object id."""
    tokens = data.split(b"\x00")
    if len(tokens) % _WIDTH == 1 and tokens[-1] == b"":
        tokens.pop()
    records = [tokens[start : start + _WIDTH] for start in range(0, len(tokens), _WIDTH)]
    if any(len(r) != _WIDTH or not _OID.fullmatch(r[0]) for r in records):
        return None
    return records


def parse_log(data: bytes) -> list[dict[str, Any]] | None:
    """The `parsed` commits of a run with `FORMAT` (as `parse.parse_log` makes of its own)."""
    records = _records(data)
    if records is None:
        return None
    return parse.parse_log(b"\x00".join(b"\x00".join(r[:_FIELDS]) for r in records))


def medium(data: bytes) -> bytes | None:
    """What `git log` prints, from a run with `FORMAT`; None when only git can say it."""
    records = _records(data)
    if records is None:
        return None
    blocks: list[bytes] = []
    for record in records:
        oid, parents, name, email, date, abbrev, message, notes = (
            record[0], record[1], *record[_FIELDS:]
        )  # fmt: skip
        if notes or b"\t" in message or b"\v" in message or b"\f" in message:
            return None
        head = b""
        if len(parents.split()) > 1:
            head = b"Merge: " + abbrev + b"\n"
        head += b"Author: %s <%s>\nDate:   %s\n\n" % (name, email, date)
        lines = message.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        body: list[bytes] = []
        for line in lines:
            line = line.rstrip(_SPACE)
            if line or body:  # leading blank lines are dropped
                body.append(b"    " + line + b"\n")
        text = (head + b"".join(body)).rstrip(_SPACE)
        blocks.append(b"commit " + oid + b"\n" + text + b"\n")
    return b"\n".join(blocks)
