"""What the daemon declares to servers, and which server offers which method.

A server offers a method through its static `ServerCapabilities` (from `initialize`) or
through a dynamic registration (`client/registerCapability`), until it unregisters.
"""

from __future__ import annotations

from typing import Any

from codeward.daemon.lsp.positions import Encoding, negotiated

_LINK = {"dynamicRegistration": True, "linkSupport": True}
_SYMBOL_KINDS = {"valueSet": list(range(1, 27))}
_CODE_ACTION_KINDS = [
    "",
    "quickfix",
    "refactor",
    "refactor.extract",
    "refactor.inline",
    "refactor.rewrite",
    "source",
    "source.organizeImports",
    "source.fixAll",
]


def client_capabilities() -> dict[str, Any]:
    """The `ClientCapabilities` of `initialize`: what the tools really use, and nothing more."""
    return {
        "general": {
            "positionEncodings": ["utf-8", "utf-16"],
            "staleRequestSupport": {"cancel": True, "retryOnContentModified": []},
        },
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {
                "documentChanges": True,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
            },
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
            "symbol": {"dynamicRegistration": True, "symbolKind": _SYMBOL_KINDS},
            "diagnostics": {"refreshSupport": False},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": True, "didSave": False},
            "hover": {"dynamicRegistration": True, "contentFormat": ["markdown", "plaintext"]},
            "definition": _LINK,
            "typeDefinition": _LINK,
            "implementation": _LINK,
            "declaration": _LINK,
            "references": {"dynamicRegistration": True},
            "documentSymbol": {
                "dynamicRegistration": True,
                "hierarchicalDocumentSymbolSupport": True,
                "symbolKind": _SYMBOL_KINDS,
            },
            "publishDiagnostics": {
                "relatedInformation": True,
                "versionSupport": True,
                "codeDescriptionSupport": True,
                "dataSupport": True,
                "tagSupport": {"valueSet": [1, 2]},
            },
            "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
            "formatting": {"dynamicRegistration": True},
            "rangeFormatting": {"dynamicRegistration": True},
            "codeAction": {
                "dynamicRegistration": True,
                "isPreferredSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit"]},
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": _CODE_ACTION_KINDS}},
            },
            "rename": {"dynamicRegistration": True, "prepareSupport": True},
            "callHierarchy": {"dynamicRegistration": True},
        },
        "window": {"workDoneProgress": True, "showMessage": {}},
        # rust-analyzer then says when it is quiescent (lsp/readiness.py)
        "experimental": {"serverStatusNotification": True},
        # clangd's own name for positionEncodings (clangd before 15 reads only this one).
        "offsetEncoding": ["utf-8", "utf-16"],
    }


# The static capability that offers each request, and a sub-option it also needs.
_PROVIDERS: dict[str, tuple[str, str | None]] = {
    "textDocument/hover": ("hoverProvider", None),
    "textDocument/definition": ("definitionProvider", None),
    "textDocument/typeDefinition": ("typeDefinitionProvider", None),
    "textDocument/implementation": ("implementationProvider", None),
    "textDocument/declaration": ("declarationProvider", None),
    "textDocument/references": ("referencesProvider", None),
    "textDocument/documentSymbol": ("documentSymbolProvider", None),
    "workspace/symbol": ("workspaceSymbolProvider", None),
    "textDocument/formatting": ("documentFormattingProvider", None),
    "textDocument/rangeFormatting": ("documentRangeFormattingProvider", None),
    "textDocument/codeAction": ("codeActionProvider", None),
    "codeAction/resolve": ("codeActionProvider", "resolveProvider"),
    "textDocument/rename": ("renameProvider", None),
    "textDocument/prepareRename": ("renameProvider", "prepareProvider"),
    "textDocument/prepareCallHierarchy": ("callHierarchyProvider", None),
    "callHierarchy/incomingCalls": ("callHierarchyProvider", None),
    "callHierarchy/outgoingCalls": ("callHierarchyProvider", None),
    "textDocument/diagnostic": ("diagnosticProvider", None),
    "workspace/diagnostic": ("diagnosticProvider", "workspaceDiagnostics"),
}
# Requests a dynamic registration of another method also enables.
_REGISTERED_AS = {
    "callHierarchy/incomingCalls": "textDocument/prepareCallHierarchy",
    "callHierarchy/outgoingCalls": "textDocument/prepareCallHierarchy",
    "workspace/diagnostic": "textDocument/diagnostic",
    "codeAction/resolve": "textDocument/codeAction",
    "textDocument/prepareRename": "textDocument/rename",
}


class ServerCapabilities:
    """A server's static capabilities and live dynamic registrations."""

    def __init__(self, static: dict[str, Any] | None = None) -> None:
        self.static: dict[str, Any] = static or {}
        self.registrations: dict[str, tuple[str, Any]] = {}  # id -> (method, options)

    @property
    def position_encoding(self) -> Encoding:
        return negotiated(self.static.get("positionEncoding") or self.static.get("offsetEncoding"))

    def register(self, reg_id: str, method: str, options: Any) -> None:
        self.registrations[reg_id] = (method, options)

    def unregister(self, reg_id: str) -> None:
        self.registrations.pop(reg_id, None)

    def registered(self, method: str) -> list[Any]:
        """Options of the live dynamic registrations of `method`."""
        return [opts for m, opts in self.registrations.values() if m == method]

    @staticmethod
    def registered_as(method: str) -> str:
        """The method a dynamic registration names for `method`."""
        return _REGISTERED_AS.get(method, method)

    def supports(self, method: str) -> bool:
        """Whether the server offers `method` (statically or by a dynamic registration)."""
        provider = _PROVIDERS.get(method)
        if provider is None:
            return bool(self.registered(method))
        key, sub = provider
        options: list[Any] = [self.static.get(key)]
        options += [
            True if opts is None else opts for opts in self.registered(self.registered_as(method))
        ]
        for option in options:
            if option is None or option is False:
                continue
            if sub is None:
                return True
            if isinstance(option, dict) and option.get(sub):
                return True
        return False

    def watched_file_globs(self) -> list[Any]:
        """The `FileSystemWatcher` glob patterns the server registered."""
        patterns: list[Any] = []
        for options in self.registered("workspace/didChangeWatchedFiles"):
            if isinstance(options, dict):
                for watcher in options.get("watchers") or []:
                    if isinstance(watcher, dict) and "globPattern" in watcher:
                        patterns.append(watcher["globPattern"])
        return patterns
