"""The one walk of a project's files: by language, ignored folders skipped, bounded."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeward.daemon.config import LanguageConfig
from codeward.daemon.lsp.ignored import is_ignored
from codeward.daemon.lsp.routing import routed_language

WALK_LIMIT = 20000  # files looked at before a walk stops (and says it is incomplete)
# Languages of configuration files: a question about the whole project does not start
# their servers (a pyproject.toml does not make a Python project a TOML one).
CONFIG_LANGUAGES = frozenset({"yaml", "json", "jsonc", "toml", "dockerfile"})
MAIN_SHARE = 0.1  # a main language has at least this share of the most common one's files


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


def main_languages(files: Mapping[str, Sequence[Path]]) -> list[str]:
    """The project's main languages by file count: those (configuration languages aside)
    with at least MAIN_SHARE of the files of the most common one, not every extension
    present (sympy's few shell scripts and HTML pages are not main languages)."""
    counts = {lang: len(paths) for lang, paths in files.items() if lang not in CONFIG_LANGUAGES}
    top = max(counts.values(), default=0)
    return sorted(lang for lang, count in counts.items() if count and count >= top * MAIN_SHARE)
