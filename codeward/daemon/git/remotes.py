"""Which repositories a fetch, pull, push or `remote show` would contact, and refusing
those that are local: git reads any repository on disk through a local path or `file://`,
and a push to one runs its hooks with its own config (codeward's `-c` settings do not reach
it). The URLs are worked out as git does: `remote.<name>.url`/`pushurl` (else the legacy
`remotes/<name>` and `branches/<name>` files), then `url.<base>.insteadOf` and
`pushInsteadOf`, the longest matching prefix winning. git itself runs with
`protocol.file.allow=never` besides (runner.py): this module is what words the refusal, and
names the remote's URL in the approval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.daemon.git.config_scan import ConfigEntry
from codeward.daemon.git.containment import read_small
from codeward.daemon.git.grammar import Parsed, parse_args
from codeward.daemon.git.tables import SPECS
from codeward.daemon.paths import scrub
from codeward.protocol.errors import ErrorKind, ToolError

_WORD = re.compile(r"[^\s]+")
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:]*):[^/@]*@")
# `remote` actions that connect to the remote (`add` only with `-f`)
_CONTACTING = frozenset({"show", "prune", "update", "set-head", "add"})
ARGUMENT = "argument"  # a remote named on the command line
_OTHER_REPOSITORIES = frozenset({"submodule", "nested"})  # config_scan's scopes of others


@dataclass(frozen=True)
class Url:
    """One URL git would use, and where it came from (a config key or a file)."""

    remote: str  # the name the command gave (or the URL itself)
    url: str  # after rewriting
    origin: str  # the key or file that set it: `remote.o.url`, `remotes/o`, `argument`
    rewrite: tuple[str, str] | None  # `url.<base>.<var>` that rewrote it: (base, var)


def is_local(url: str) -> bool:
    """Whether git reaches `url` through the file system (its `file` transport): `file://`,
    or no `scheme://` and either no `:` or a `/` before the first `:` (git's own rule)."""
    if url.lower().startswith("file://"):
        return True
    if _URL_SCHEME.match(url) or "::" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def contacted(subcommand: str, args: Sequence[str], entries: list[ConfigEntry],
              git_dir: Path, common_dir: Path) -> list[Url]:  # fmt: skip
    """Every URL `git subcommand args` may connect to (fetch URLs, and push URLs for a push)."""
    parsed = parse_args(subcommand, tuple(args), SPECS[subcommand])
    config = _Config(entries)
    push = subcommand == "push"
    names, named_by = _names(subcommand, parsed, config, git_dir)
    found: list[Url] = []
    for name in names:
        for member in config.group(name) if subcommand != "push" else [name]:
            found += _urls(member, named_by, push, config, common_dir)
    return found


def check(root: Path, subcommand: str, args: Sequence[str], entries: list[ConfigEntry],
          git_dir: Path, common_dir: Path) -> list[Url]:  # fmt: skip
    """The URLs the command contacts, or a `ToolError` when one is local."""
    if subcommand not in ("fetch", "pull", "push", "remote"):
        return []
    urls = contacted(subcommand, args, entries, git_dir, common_dir)
    for url in urls:
        if is_local(url.url):
            raise _refusal(root, subcommand, url)
    return urls


def describe(urls: Sequence[Url]) -> str:
    """The remotes for an approval: `origin (https://host/x.git)`, passwords left out."""
    shown = list(dict.fromkeys(f"{u.remote} ({shown_url(u.url)})" if u.remote != u.url
                               else shown_url(u.url) for u in urls))  # fmt: skip
    if len(shown) > 3:
        shown = [*shown[:3], f"{len(shown) - 3} more"]
    return ", ".join(shown)


def shown_url(url: str) -> str:
    """`url` without a password (`https://user:secret@host` shows as `https://user@host`)."""
    return _USERINFO.sub(r"\g<scheme>\g<user>@", url)


def scrub_urls(text: str, root: Path) -> str:
    """`text` (what `git remote` lists) with each local URL that is an absolute path or
    `file://` shown as `paths.scrub` shows it; network URLs (`host:/srv/x.git` too) stay."""

    def shown(match: re.Match[str]) -> str:
        word = match.group(0)
        local = is_local(word) and (word.startswith("/") or word.lower().startswith("file://"))
        return scrub(word, root) if local else word

    return _WORD.sub(shown, text)


def current_branch(git_dir: Path) -> str | None:
    """The branch HEAD names (`ref: refs/heads/NAME`), or None when detached or unreadable."""
    head = (read_small(git_dir / "HEAD") or "").strip()
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None


# --- which remotes ----------------------------------------------------------------------


class _Config:
    """The entries git's remote code reads: remotes, groups, defaults, rewrites."""

    def __init__(self, entries: list[ConfigEntry]) -> None:
        self.values: dict[tuple[str, str, str], list[ConfigEntry]] = {}
        self.remotes: list[str] = []
        self.rewrites: dict[str, list[tuple[str, str]]] = {"insteadof": [], "pushinsteadof": []}
        for entry in entries:
            if entry.scope in _OTHER_REPOSITORIES:
                continue  # a submodule's or nested repository's own remotes: not this one's
            section, _, rest = entry.key.partition(".")
            sub, _, var = rest.rpartition(".")
            section, var = section.lower(), var.lower()
            self.values.setdefault((section, sub, var), []).append(entry)
            if section == "remote" and sub and sub not in self.remotes:
                self.remotes.append(sub)
            if section == "url" and var in self.rewrites and entry.value is not None:
                self.rewrites[var].append((sub, entry.value))

    def all(self, section: str, sub: str, var: str) -> list[ConfigEntry]:
        return self.values.get((section, sub, var), [])

    def last(self, section: str, sub: str, var: str) -> str | None:
        found = self.all(section, sub, var)
        return found[-1].value if found else None

    def group(self, name: str) -> list[str]:
        """A `remotes.<group>` list's members (git prefers a group to a remote), else name."""
        sub, _, var = name.rpartition(".")
        listed = self.all("remotes", sub, var.lower())
        members = [word for entry in listed for word in (entry.value or "").split()]
        return members or [name]

    def rewrite(self, url: str, var: str) -> tuple[str, tuple[str, str] | None]:
        """`url` rewritten by the longest `url.<base>.<var>` prefix (git's `alias_url`:
        bases in the order first seen, the first of equal length winning)."""
        bases: dict[str, list[str]] = {}
        for base, prefix in self.rewrites[var]:
            bases.setdefault(base, []).append(prefix)
        best: tuple[str, str] | None = None
        for base, prefixes in bases.items():
            for prefix in prefixes:
                if url.startswith(prefix) and (best is None or len(best[1]) < len(prefix)):
                    best = (base, prefix)
        if best is None:
            return url, None
        return best[0] + url[len(best[1]) :], (best[0], var)


def _names(
    subcommand: str, parsed: Parsed, config: _Config, git_dir: Path
) -> tuple[list[str], str | None]:
    """The remote names (or URLs) the command uses, and what named them: `argument`, or the
    config key (`branch.main.remote`); a name so given that is no remote is a URL to git.
    None: git's fallback `origin`, which is nothing when it is no remote."""
    operands = parsed.positionals
    if subcommand == "remote":
        action, rest = (operands[0], operands[1:]) if operands else ("", [])
        if action not in _CONTACTING:
            return [], ARGUMENT
        if action == "add":
            return (rest[1:2] if parsed.has("fetch") else []), ARGUMENT
        if action == "update" and not rest:
            return config.remotes, ARGUMENT
        if action == "set-head" and not parsed.has("auto"):
            return [], ARGUMENT
        return rest[:1] if action == "set-head" else rest, ARGUMENT
    if subcommand != "push" and parsed.has("all"):  # fetch --all, pull --all
        return config.remotes, ARGUMENT
    if subcommand == "fetch" and parsed.has("multiple") and operands:
        return list(operands), ARGUMENT
    repo = parsed.values("repo") if subcommand == "push" else []
    if operands or repo:
        return [operands[0] if operands else repo[-1]], ARGUMENT
    branch = current_branch(git_dir) or ""
    chain = [("branch", branch, "remote")] if branch else []
    if subcommand == "push":  # git's order for a push
        pushremote = [("branch", branch, "pushremote")] if branch else []
        chain = [*pushremote, ("remote", "", "pushdefault"), *chain]
    for section, sub, var in chain:
        name = config.last(section, sub, var)
        if name:
            return [name], ".".join(part for part in (section, sub, var) if part)
    return ["origin"], None


def _urls(
    name: str, named_by: str | None, push: bool, config: _Config, common_dir: Path
) -> list[Url]:
    """The URLs git fetches from (or pushes to) for remote `name`, as git's remote.c makes
    them: the first `url` (else the legacy files, else `name` itself when named), rewritten
    by `insteadOf`; a push goes to the `pushurl`s (rewritten by `insteadOf`), else to the
    `pushInsteadOf` rewrites of the urls, else to the urls."""
    urls = [(e.value, f"remote.{name}.url") for e in config.all("remote", name, "url") if e.value]
    if not urls and _nick(name):
        urls = _legacy(common_dir, name)
    if not urls and named_by is not None:  # no remote: git takes the name as a URL
        urls = [(name, named_by)]
    pushurls = [(e.value, f"remote.{name}.pushurl")
                for e in config.all("remote", name, "pushurl") if e.value]  # fmt: skip
    if push and not pushurls:
        aliases = [(url, origin, config.rewrite(url, "pushinsteadof")) for url, origin in urls]
        pushed = [Url(name, new, origin, key) for _, origin, (new, key) in aliases if key]
        if pushed:
            return pushed
    found: list[Url] = []
    for url, origin in pushurls if push and pushurls else urls if push else urls[:1]:
        rewritten, key = config.rewrite(url, "insteadof")
        found.append(Url(name, rewritten, origin, key))
    return found


def _nick(name: str) -> bool:
    """git's `valid_remote_nick`: a name that may have a `remotes/` or `branches/` file."""
    return bool(name) and name not in (".", "..") and "/" not in name


def _legacy(common_dir: Path, name: str) -> list[tuple[str, str]]:
    """URLs from `remotes/<name>` (`URL: ...` lines), else `branches/<name>` (one line)."""
    for folder in ("remotes", "branches"):
        text = read_small(common_dir / folder / name) or ""
        origin = f"{folder}/{name}"
        if folder == "remotes":
            found = [(line[4:].strip(), origin) for line in text.splitlines()
                     if line.startswith("URL:") and line[4:].strip()]  # fmt: skip
        else:
            line = text.splitlines()[0].strip() if text.strip() else ""
            found = [(line.partition("#")[0], origin)] if line else []
        if found:
            return found
    return []


def _refusal(root: Path, subcommand: str, url: Url) -> ToolError:
    what, name = f"git {subcommand}", scrub(url.remote, root)
    if url.rewrite is not None:
        base, var = url.rewrite
        key = f"url.{scrub(base, root)}.{var}"
        return ToolError(
            ErrorKind.UNSAFE_REPOSITORY_CONFIG,
            f"{what} would reach {name!r} through a local path: {key} in the config "
            "rewrites its URL to one. codeward lets git contact network remotes only (a local "
            "repository is read or its hooks run); remove that rule, or run git yourself.",
            keys=[key],
        )
    if url.origin == ARGUMENT:
        return ToolError(
            ErrorKind.ARGUMENT_NOT_ALLOWED,
            f"{name!r} is no configured remote, so git would read it as a "
            "local path; give a configured remote's name or a network URL (https://, ssh://, "
            "git://, host:path).",
        )
    if url.origin.startswith(("remotes/", "branches/")):
        return ToolError(
            ErrorKind.UNSAFE_REPOSITORY_CONFIG,
            f"{what} would contact remote {name!r}, which the repository's "
            f".git/{url.origin} file makes a local path. codeward lets git contact network "
            "remotes only; remove that file, or run git yourself.",
            keys=[],
            file=f".git/{url.origin}",
        )
    if url.origin.endswith((".url", ".pushurl")):
        return ToolError(
            ErrorKind.UNSAFE_REPOSITORY_CONFIG,
            f"{what} would contact remote {name!r}, whose {url.origin} is a local path "
            "or file:// URL. codeward lets git contact network remotes only (a local "
            "repository is read or its hooks run); set a network URL with `git remote "
            "set-url`, or run git yourself.",
            keys=[url.origin],
        )
    return ToolError(
        ErrorKind.UNSAFE_REPOSITORY_CONFIG,
        f"{what} would contact {name!r}, which {url.origin} names: no "
        "configured remote, so git takes it as a local path (`.`: this repository itself). "
        "codeward lets git contact network remotes only; name a remote in the command, or "
        "run git yourself (`git merge` needs no remote).",
        keys=[url.origin],
    )
