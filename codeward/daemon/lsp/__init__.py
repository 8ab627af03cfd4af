"""Language servers: one supervised actor per (server, session root), and the manager tools use."""

from codeward.daemon.lsp.manager import Answer, DocumentContext, LspManager

__all__ = ["Answer", "DocumentContext", "LspManager"]
