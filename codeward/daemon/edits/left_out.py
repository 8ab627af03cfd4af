"""What a write's checks left out, said beside `diagnostics_after`:

- `unanalysed`: for a language whose server analyses only part of the project (basedpyright
  or pyright with an `include` in `pyrightconfig.json` or `[tool.basedpyright]` /
  `[tool.pyright]` of `pyproject.toml`), that scope and the project files of the language
  outside it, which no diagnostic covers and no rename reaches;
- `unanalysed_mentions`: for a rename, the lines of tracked text files that still hold the old
  name as a word outside what the server edited (`git grep -w`, bounded).
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.git import run_git
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

SHOWN_FILES = 20  # files outside a scope named (the count says how many in all)
MENTIONS = 50  # lines of `unanalysed_mentions`
MENTION_CHARS = 200  # a mention's text is cut there
SCOPED_SERVERS = ("basedpyright", "pyright")


def pyright_scope(root: Path) -> list[str] | None:
    """The `include` entries of the root's pyright configuration (None: the whole root)."""
    config = root / "pyrightconfig.json"
    try:
        if config.is_file():
            data = json.loads(config.read_text(encoding="utf-8"))
            include = data.get("include") if isinstance(data, dict) else None
            return _entries(include)
        pyproject = root / "pyproject.toml"
        if pyproject.is_file():
            tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
            for key in SCOPED_SERVERS:
                section = tool.get(key) if isinstance(tool, dict) else None
                if isinstance(section, dict) and "include" in section:
                    return _entries(section["include"])
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # unreadable: the server reads it no better; nothing to say
    return None


def _entries(include: Any) -> list[str] | None:
    if not isinstance(include, list) or not include:
        return None
    entries = [str(e).strip().removeprefix("./").rstrip("/") for e in include if str(e).strip()]
    return None if not entries or "" in entries or "." in entries else entries


def inside(path: str, entries: Iterable[str]) -> bool:
    """Whether root-relative `path` is under one of the include `entries` (folders, files or
    globs with `*` and `**`)."""
    for entry in entries:
        if any(c in entry for c in "*?["):
            parts = path.split("/")
            if any(fnmatch.fnmatch("/".join(parts[:n]), entry) for n in range(1, len(parts) + 1)):
                return True
        elif path == entry or path.startswith(entry + "/"):
            return True
    return False


async def unanalysed(session: Session, paths: Sequence[Path]) -> list[dict[str, Any]]:
    """For each scoped server of the written files' languages, its scope and the project
    files of the language outside it."""
    manager = session.lsp
    languages = sorted({lang for p in paths if (lang := manager.language_or_none(p))})
    scoped = [
        (language, server)
        for language in languages
        for server in manager.servers_of(language)
        if server in SCOPED_SERVERS
    ]
    if not scoped:
        return []
    scope = await trio.to_thread.run_sync(pyright_scope, manager.root)
    if scope is None:
        return []
    listing, _ = await trio.to_thread.run_sync(manager.project_files)
    shown: list[dict[str, Any]] = []
    for language, server in scoped:
        files = [p.relative_to(manager.root).as_posix() for p in listing.get(language, [])]
        outside = [f for f in files if not inside(f, scope)]
        if outside:
            shown.append({"server": server, "include": scope, "count": len(outside),
                          "files": outside[:SHOWN_FILES]})  # fmt: skip
    return shown


async def mentions(session: Session, name: str, edited: Iterable[str]) -> list[dict[str, Any]]:
    """The lines of tracked text files that hold `name` as a word, but those of the files
    in `edited` (root-relative): what a rename did not reach."""
    skip = set(edited)
    try:
        found = await run_git(
            session.root, "grep", ["-n", "-w", "-I", "-F", "-e", name],
            allow_destructive=False, policy=session.policy, limits=session.config.git,
            approve=_no_approval, on_files_changed=_nothing,
        )  # fmt: skip
    except ToolError:
        return []  # no repository, or git failed: nothing to say
    shown: list[dict[str, Any]] = []
    for row in str(found.get("output") or "").splitlines():
        path, sep, rest = row.partition(":")
        number, sep2, text = rest.partition(":")
        if not (sep and sep2 and number.isdigit()) or path in skip:
            continue
        shown.append({"path": path, "line": int(number), "text": text.strip()[:MENTION_CHARS]})
        if len(shown) == MENTIONS:
            break
    return shown


async def _no_approval(summary: str, argv: list[str]) -> bool | None:
    return None  # a grep is a read: never asked


def _nothing(changed: list[Path]) -> None:
    return None  # a grep changes nothing
