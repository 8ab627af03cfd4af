"""A project's `.codeward.toml` applied to the user's config: what its session runs with
(and what servers started for the root before its session runs with: `lsp.early`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from codeward.daemon.config import Config, ConfigError, load_project_config
from codeward.daemon.lsp.defaults import effective_languages


def effective_config(config: Config, root: Path) -> tuple[Config, dict[str, list[str]]]:
    """The user's config narrowed by the project's `.codeward.toml` (stricter approvals, a
    choice among each language's configured servers), and per language the servers that
    narrowing left out; raises ConfigError."""
    project = load_project_config(root)
    changes: dict[str, Any] = {}
    narrowed: dict[str, list[str]] = {}
    if project.policy is not None:
        changes["policy"] = config.policy.narrowed(project.policy)
    if project.servers:
        languages = effective_languages(config)
        for language, chosen in project.servers.items():
            current = languages.get(language)
            if current is None:
                raise ConfigError(
                    f".codeward.toml: servers.{language}: no language {language!r} is "
                    "configured; name one of codeward's languages (or one of the user's)."
                )
            keep = [name for name in current.servers if name in chosen]
            if not keep:
                raise ConfigError(
                    f".codeward.toml: servers.{language} names none of the servers "
                    f"configured for {language} ({', '.join(current.servers) or 'none'}); a "
                    "project may only choose among them, never turn them all off."
                )
            left = [name for name in current.servers if name not in chosen]
            if left:
                narrowed[language] = left
            languages[language] = type(current)(
                patterns=current.patterns, servers=keep, language_id=current.language_id
            )
        changes["languages"] = languages
    if not changes:
        return config, narrowed
    return msgspec.structs.replace(config, **changes), narrowed
