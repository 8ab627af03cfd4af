"""Language servers: one supervised actor per (server, session root), or per (server,
repository) where the roots of a repository share its process (`SharedServers`), behind
`LanguageService`, the one interface the rest of the daemon uses."""

from codeward.daemon.lsp.service import (
    Answer,
    DocumentContext,
    LanguageService,
    SharedServers,
    repository_of,
)

__all__ = ["Answer", "DocumentContext", "LanguageService", "SharedServers", "repository_of"]
