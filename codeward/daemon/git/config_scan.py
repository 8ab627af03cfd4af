"""The repository's own config is not trusted: find the keys in it that would run a program
or make git read a file outside the project.

`unsafe_key(key, value)` is the pure rule for programs, `reads_outside(entry, places)` the
one for files; `parse_config_list` reads the output of `git config --list --show-scope -z
--no-includes`, and `find_unsafe` applies the rules to the entries of the repository's
scopes (local, worktree, submodules and nested repositories). The user's global and system
config are trusted and not scanned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from codeward.daemon.paths import is_inside

REPOSITORY_SCOPES = frozenset({"local", "worktree", "submodule", "nested"})

# Exact keys (lower-case, as git prints them) whose value names a program or a file to read.
_EXACT = frozenset(
    {
        "core.pager", "core.editor", "core.sshcommand", "core.gitproxy", "core.askpass",
        "core.alternaterefscommand", "core.fsmonitor", "diff.external",
        "sequence.editor", "gpg.program",
        "gpg.ssh.defaultkeycommand", "credential.helper", "include.path",
        "uploadpack.packobjectshook", "interactive.difffilter", "web.browser",
        "instaweb.httpd", "sendemail.smtpserver", "sendemail.sendmailcmd",
        "sendemail.tocmd", "sendemail.cccmd", "sendemail.headercmd",
    }
)  # fmt: skip
# Sections whose every subsection key with one of these names runs a program.
_SUBSECTION_KEYS: dict[str, frozenset[str]] = {
    "diff": frozenset({"textconv", "command"}),
    "filter": frozenset({"clean", "smudge", "process"}),
    "merge": frozenset({"driver"}),
    "hook": frozenset({"command"}),
    "includeif": frozenset({"path"}),
    "credential": frozenset({"helper"}),
    "gpg": frozenset({"program"}),
    "remote": frozenset({"uploadpack", "receivepack", "vcs"}),
    "difftool": frozenset({"cmd", "path"}),
    "mergetool": frozenset({"cmd", "path"}),
    "browser": frozenset({"cmd", "path"}),
    "man": frozenset({"cmd", "path"}),
    "trailer": frozenset({"command", "cmd"}),
    "tar": frozenset({"command"}),
}
# Keys whose value is a file or directory git reads (git_config_pathname): outside the
# project, they leak it (`blame.ignoreRevsFile` prints a line of it, `core.worktree` makes
# every file under it part of the work tree).
_PATH_KEYS = frozenset(
    {
        "core.worktree", "core.excludesfile", "core.attributesfile", "commit.template",
        "mailmap.file", "blame.ignorerevsfile", "diff.orderfile", "init.templatedir",
        "gpg.ssh.allowedsignersfile", "gpg.ssh.revocationfile", "fsck.skiplist",
        "fetch.fsck.skiplist", "receive.fsck.skiplist",
    }
)  # fmt: skip
# `http.<name>` and `http.<url>.<name>`: files sent to or trusted for a server.
_HTTP_PATH_NAMES = frozenset(
    {"sslcert", "sslkey", "sslcainfo", "sslcapath", "cookiefile", "proxysslcert",
     "proxysslkey", "proxysslcainfo"}
)  # fmt: skip
# Whole sections where any key may run a program.
_SECTIONS = frozenset({"pager"})
_FALSE = frozenset({"false", "no", "off", "0", ""})


@dataclass(frozen=True)
class ConfigEntry:
    scope: str
    key: str
    value: str | None  # None: a key with no `=` (boolean true)
    source: Path | None = None  # the config file, when read with --file
    workdir: Path | None = None  # its repository's work tree, when not the root's


@dataclass(frozen=True)
class Places:
    """Where the paths in a repository's config are resolved, and where they must stay."""

    root: Path  # files git reads must be inside the project root
    top: Path  # git runs at the work tree's top: relative file values start here
    git_dir: Path  # a relative `core.worktree` of the repository's own config starts here
    worktree_limit: Path  # any `core.worktree` stays in the work tree git finds by itself


def parse_config_list(
    data: bytes,
    scope: str | None = None,
    *,
    source: Path | None = None,
    workdir: Path | None = None,
) -> list[ConfigEntry]:
    """Entries of `git config --list -z`: with `--show-scope` (`scope NUL key LF value NUL`)
    when `scope` is None, else `key LF value NUL` entries all given that scope (and
    `source`, `workdir`)."""
    tokens = data.decode("utf-8", "replace").split("\x00")
    if tokens and tokens[-1] == "":
        tokens.pop()
    pairs = (
        zip(tokens[::2], tokens[1::2], strict=False)
        if scope is None
        else ((scope, item) for item in tokens)
    )
    entries = []
    for entry_scope, item in pairs:
        key, sep, value = item.partition("\n")
        entries.append(ConfigEntry(entry_scope, key, value if sep else None, source, workdir))
    return entries


def unsafe_key(key: str, value: str | None) -> bool:
    """Whether `key = value` in a repository's config would make git run a program."""
    key = key.lower()
    section, _, rest = key.partition(".")
    name = rest.rpartition(".")[2]
    has_subsection = "." in rest
    if key == "core.fsmonitor":  # a bare key means true: the builtin daemon
        return value is None or value.strip().lower() not in _FALSE
    if key in _EXACT or section in _SECTIONS:
        return True
    if has_subsection and name in _SUBSECTION_KEYS.get(section, frozenset()):
        return True
    if section == "submodule" and name == "update" and (value or "").startswith("!"):
        return True
    if section in ("remote", "url") and value is not None:
        lowered = value.lower()
        if lowered.startswith(("ext::", "fd::")):
            return True
    # ext:: and fd:: run programs; the daemon forbids them on its command line as well.
    return key in ("protocol.ext.allow", "protocol.fd.allow") and ((value or "").lower() != "never")


def is_path_key(key: str) -> bool:
    key = key.lower()
    section, _, rest = key.partition(".")
    return key in _PATH_KEYS or (section == "http" and rest.rpartition(".")[2] in _HTTP_PATH_NAMES)


def reads_outside(entry: ConfigEntry, places: Places) -> bool:
    """Whether `entry` names a file or directory git would read outside the project."""
    if entry.value is None or entry.value == "" or not is_path_key(entry.key):
        return False
    if entry.value.startswith("%(prefix)"):  # git's own install prefix
        return True
    value = os.path.expanduser(entry.value)
    if entry.key.lower() == "core.worktree":
        base = entry.source.parent if entry.source is not None else places.git_dir
        limit = places.worktree_limit
    else:
        base, limit = entry.workdir or places.top, places.root
    return not is_inside(Path(os.path.realpath(base / value)), limit)


def find_unsafe(entries: Iterable[ConfigEntry], places: Places | None = None) -> list[str]:
    """The keys of the repository's own scopes that would run a program (or, given
    `places`, read a file outside the project), in order."""
    found: list[str] = []
    for entry in entries:
        if entry.scope not in REPOSITORY_SCOPES or entry.key in found:
            continue
        outside = places is not None and reads_outside(entry, places)
        if outside or unsafe_key(entry.key, entry.value):
            found.append(entry.key)
    return found


def implicit_force_push(entries: Iterable[ConfigEntry]) -> str | None:
    """A repository key that makes a plain `git push` a force push (mirror, `+` refspec)."""
    for entry in entries:
        if entry.scope not in REPOSITORY_SCOPES:
            continue
        key = entry.key.lower()
        if not key.startswith("remote."):
            continue
        if key.endswith(".mirror") and (entry.value or "true").lower() not in _FALSE:
            return entry.key
        if key.endswith(".push") and (entry.value or "").startswith(("+", ":")):
            return entry.key
    return None


def implicit_local_fetch(entries: Iterable[ConfigEntry]) -> tuple[str, bool] | None:
    """A repository fetch refspec that stores outside `refs/remotes/` (a plain `git fetch`
    then updates local branches or tags), and whether it forces (`+`)."""
    for entry in entries:
        key = entry.key.lower()
        if entry.scope not in REPOSITORY_SCOPES or not key.startswith("remote."):
            continue
        if not key.endswith(".fetch") or not entry.value:
            continue
        src, colon, dst = entry.value.partition(":")
        if colon and dst and not dst.startswith("refs/remotes/"):
            return entry.key, src.startswith("+")
    return None
