"""Which language a file is, which servers serve it and in what order, and the errors
routing gives when none of them can answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from codeward.daemon.config import PROJECT_CONFIG, LanguageConfig, ServerConfig
from codeward.daemon.lsp.defaults import language_of
from codeward.protocol.errors import ErrorKind, ToolError

# codeward's own files in a project: configuration for codeward, not sources of a language
# (with TOML configured, `.codeward.toml` must not start the TOML server)
OWN_FILES = frozenset({PROJECT_CONFIG})
CACHED_PATHS = 4096  # paths whose language is remembered (the cache starts over beyond)


def routed_language(path: Path, root: Path, languages: dict[str, LanguageConfig]) -> str | None:
    """The language whose patterns match `path`, or None (codeward's own files never match)."""
    if path.name in OWN_FILES:
        return None
    return language_of(path, root, languages)


class Languages:
    """The configured languages of one root: a path's language (remembered, since the
    patterns never change), its servers in routing order, its LSP language id."""

    def __init__(self, root: Path, languages: dict[str, LanguageConfig]) -> None:
        self.root = root
        self.configs = languages
        self._cache: dict[Path, str | None] = {}

    def of(self, path: Path) -> str | None:
        try:
            return self._cache[path]
        except KeyError:
            pass
        language = routed_language(path, self.root, self.configs)
        if len(self._cache) >= CACHED_PATHS:
            self._cache.clear()
        self._cache[path] = language
        return language

    def require(self, path: Path) -> str:
        """The language of `path`, or `unsupported_file_type`."""
        language = self.of(path)
        if language is None:
            raise ToolError(
                ErrorKind.UNSUPPORTED_FILE_TYPE,
                f"No language is configured for {path.name!r}; give a file of a configured "
                "language or add one under [languages].",
            )
        return language

    def language_id(self, language: str) -> str:
        return self.configs[language].language_id or language

    def servers(self, language: str) -> list[str]:
        """The servers of `language`, in routing order."""
        return self.configs[language].servers

    def servers_of(self, languages: Iterable[str]) -> list[str]:
        """The servers of several languages, each once, in routing order."""
        return list(dict.fromkeys(n for lang in languages for n in self.configs[lang].servers))


def in_routing_order(errors: Sequence[ToolError], names: Sequence[str]) -> list[ToolError]:
    """Servers' errors sorted as their servers are in `names` (concurrent asks end in any order)."""
    rank = {name: i for i, name in enumerate(names)}
    return sorted(errors, key=lambda e: rank.get(e.details.get("server", ""), len(rank)))


def missing(
    errors: Sequence[ToolError], names: Sequence[str], configs: Mapping[str, ServerConfig]
) -> ToolError:
    """The error to raise when every server of `names` failed: the first in routing order,
    or, when several are not installed (or several may not start in an untrusted root),
    one naming them all, always in routing order."""
    ordered = in_routing_order(errors, names)
    absent = [e for e in ordered if e.kind is ErrorKind.LSP_UNAVAILABLE
              and e.details.get("server") in configs]  # fmt: skip
    refused = list(
        dict.fromkeys(e.details["server"] for e in absent if e.details.get("restricted"))
    )
    if len(refused) >= 2 and len(refused) == len(absent):
        return ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"The {_listed(refused)} language servers do not start in an untrusted root; "
            "trust the root (codeward trust) to use them.",
            server=refused[0],
            servers=refused,
            restricted=True,
        )
    uninstalled = _servers(e for e in absent if not e.details.get("restricted"))
    if len(uninstalled) < 2:
        return ordered[0]
    hints = [configs[n].install_hint or f"install {n}" for n in uninstalled]
    return ToolError(
        ErrorKind.LSP_UNAVAILABLE,
        f"The {_listed(uninstalled)} language servers are not installed; {'; '.join(hints)}.",
        server=uninstalled[0],
        servers=uninstalled,
    )


def unsupported(method: str, names: Sequence[str], language: str) -> ToolError:
    """The error when no server of `names` (all running) offers `method`: "not supported",
    which must never look like "nothing found". A language with no server at all has
    nothing to ask: `lsp_unavailable`, saying to configure one."""
    if not names:
        return ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"No {language} language server is configured; add one under [languages].",
        )
    from codeward.daemon.lsp.capabilities import Capabilities  # (lsprotocol: not at start)

    capability = Capabilities.provider(method)
    servers = "servers" if len(names) > 1 else "server"
    return ToolError(
        ErrorKind.UNSUPPORTED_BY_SERVER,
        f"The {language} language {servers} {_listed(names)} "
        f"{'do' if len(names) > 1 else 'does'} not offer {method} ({capability}); "
        "use another tool, or configure a server that offers it.",
        server=names[0],
        servers=list(names),
        method=method,
        capability=capability,
    )


def _servers(errors: Iterable[ToolError]) -> list[str]:
    """The servers `errors` name, each once, in their order."""
    return list(dict.fromkeys(e.details["server"] for e in errors))


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
