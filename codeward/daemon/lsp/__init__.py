"""Language servers: one supervised actor per (server, session root), behind `LanguageService`,
the one interface the rest of the daemon uses."""

from codeward.daemon.lsp.service import Answer, DocumentContext, LanguageService

__all__ = ["Answer", "DocumentContext", "LanguageService"]
