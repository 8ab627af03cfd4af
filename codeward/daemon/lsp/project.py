"""The one walk of a project's files: by language, ignored folders skipped, bounded."""

from __future__ import annotations

import os
from pathlib import Path

from codeward.daemon.config import LanguageConfig
from codeward.daemon.lsp.ignored import is_ignored
from codeward.daemon.lsp.routing import routed_language

WALK_LIMIT = 20000  # files looked at before a walk stops (and says it is incomplete)


def project_files(
    root: Path,
    languages: dict[str, LanguageConfig],
    folder: Path | None = None,
    limit: int = WALK_LIMIT,
) -> tuple[dict[str, list[Path]], bool]:
    """The files under `folder` (default: the root) by language, sorted (ignored folders
    and codeward's own files skipped), and whether that is all of them: the walk stops
    after `limit` files."""
    files: dict[str, list[Path]] = {}
    count = 0
    whole = True
    for dirpath, dirnames, filenames in os.walk(folder or root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not is_ignored(here / d, root)]
        for filename in filenames:
            count += 1
            path = here / filename
            language = routed_language(path, root, languages)
            if language is not None:
                files.setdefault(language, []).append(path)
        if count > limit:
            whole = False
            break
    for paths in files.values():
        paths.sort()  # a budget takes the same files every time
    return files, whole


def project_languages(
    root: Path, languages: dict[str, LanguageConfig], limit: int = WALK_LIMIT
) -> list[str]:
    """The languages with at least one file under the root."""
    return sorted(project_files(root, languages, limit=limit)[0])
