"""What a write's checks left out, said beside `diagnostics_after`:

- `unanalysed`: for a language whose server analyses only part of the project (basedpyright
  or pyright with an `include` or `exclude` in `pyrightconfig.json` or `[tool.basedpyright]`
  / `[tool.pyright]` of `pyproject.toml`: `lsp.pyright_scope`), that scope and the project
  files of the language outside it, which no diagnostic covers and no rename reaches;
- `unanalysed_mentions`: for a rename, the lines of tracked text files that still hold the old
  name as a word outside what the server edited (`git grep -w`, bounded).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from codeward.daemon.git import run_git
from codeward.daemon.lsp.pyright_scope import SCOPED_SERVERS, pyright_scope
from codeward.protocol.errors import ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

SHOWN_FILES = 20  # files outside a scope named (the count says how many in all)
MENTIONS = 50  # lines of `unanalysed_mentions`
MENTION_CHARS = 200  # a mention's text is cut there


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
    listing, _ = await trio.to_thread.run_sync(manager.project_files)
    shown: list[dict[str, Any]] = []
    for language, server in scoped:
        scope = await trio.to_thread.run_sync(pyright_scope, manager.root, server)
        if not scope.narrowed:
            continue
        split = await trio.to_thread.run_sync(scope.split, manager.root, listing.get(language, []))
        outside = [p.relative_to(manager.root).as_posix() for p in split.excluded]
        if outside:
            said = {"include": list(scope.include or (".",))}
            if scope.exclude:
                said["exclude"] = list(scope.exclude)
            shown.append({"server": server, **said, "count": len(outside),
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
