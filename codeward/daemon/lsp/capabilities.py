"""Which server offers which method.

A server offers a method through its static `ServerCapabilities` (from `initialize`) or
through a dynamic registration (`client/registerCapability`), until it unregisters. Both are
lsprotocol shapes: the registration options are structured as the method's registration
options type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.lsp.positions import Encoding, negotiated
from codeward.daemon.lsp.shapes import OffSpec, structure, unstructure

# The static capability that offers each request, and a sub-option it also needs.
_PROVIDERS: dict[str, tuple[str, str | None]] = {
    "textDocument/hover": ("hover_provider", None),
    "textDocument/definition": ("definition_provider", None),
    "textDocument/typeDefinition": ("type_definition_provider", None),
    "textDocument/implementation": ("implementation_provider", None),
    "textDocument/declaration": ("declaration_provider", None),
    "textDocument/references": ("references_provider", None),
    "textDocument/documentSymbol": ("document_symbol_provider", None),
    "workspace/symbol": ("workspace_symbol_provider", None),
    "textDocument/formatting": ("document_formatting_provider", None),
    "textDocument/rangeFormatting": ("document_range_formatting_provider", None),
    "textDocument/codeAction": ("code_action_provider", None),
    "codeAction/resolve": ("code_action_provider", "resolve_provider"),
    "textDocument/rename": ("rename_provider", None),
    "textDocument/prepareRename": ("rename_provider", "prepare_provider"),
    "textDocument/prepareCallHierarchy": ("call_hierarchy_provider", None),
    "callHierarchy/incomingCalls": ("call_hierarchy_provider", None),
    "callHierarchy/outgoingCalls": ("call_hierarchy_provider", None),
    "textDocument/prepareTypeHierarchy": ("type_hierarchy_provider", None),
    "typeHierarchy/supertypes": ("type_hierarchy_provider", None),
    "typeHierarchy/subtypes": ("type_hierarchy_provider", None),
    "textDocument/signatureHelp": ("signature_help_provider", None),
    "textDocument/diagnostic": ("diagnostic_provider", None),
    "workspace/diagnostic": ("diagnostic_provider", "workspace_diagnostics"),
    # what an editor asks too (`codeward lsp`)
    "textDocument/completion": ("completion_provider", None),
    "completionItem/resolve": ("completion_provider", "resolve_provider"),
    "textDocument/documentHighlight": ("document_highlight_provider", None),
    "textDocument/foldingRange": ("folding_range_provider", None),
    "textDocument/selectionRange": ("selection_range_provider", None),
    "textDocument/semanticTokens/full": ("semantic_tokens_provider", "full"),
    "textDocument/semanticTokens/full/delta": ("semantic_tokens_provider", "full"),
    "textDocument/semanticTokens/range": ("semantic_tokens_provider", "range"),
    "textDocument/inlayHint": ("inlay_hint_provider", None),
    "inlayHint/resolve": ("inlay_hint_provider", "resolve_provider"),
    "workspace/executeCommand": ("execute_command_provider", None),
}
# The file operations (`workspace.fileOperations.<name>` with filters of the files they
# are about) that codeward sends.
_FILE_OPERATIONS = {
    "workspace/willRenameFiles": "will_rename",
    "workspace/didRenameFiles": "did_rename",
}
# Requests a dynamic registration of another method also enables.
_REGISTERED_AS = {
    "callHierarchy/incomingCalls": "textDocument/prepareCallHierarchy",
    "callHierarchy/outgoingCalls": "textDocument/prepareCallHierarchy",
    "typeHierarchy/supertypes": "textDocument/prepareTypeHierarchy",
    "typeHierarchy/subtypes": "textDocument/prepareTypeHierarchy",
    "workspace/diagnostic": "textDocument/diagnostic",
    "codeAction/resolve": "textDocument/codeAction",
    "textDocument/prepareRename": "textDocument/rename",
    "completionItem/resolve": "textDocument/completion",
    "inlayHint/resolve": "textDocument/inlayHint",
    "textDocument/semanticTokens/full": "textDocument/semanticTokens",
    "textDocument/semanticTokens/full/delta": "textDocument/semanticTokens",
    "textDocument/semanticTokens/range": "textDocument/semanticTokens",
}


def registration_options(method: str, options: Any) -> Any:
    """A registration's options as the method's registration options type (raw when
    lsprotocol knows no such type); raises `OffSpec`."""
    types = lsp.METHOD_TO_TYPES.get(method)
    if options is None or types is None or types[3] is None:
        return options
    return structure(options, types[3])


class Capabilities:
    """A server's static capabilities and live dynamic registrations."""

    def __init__(
        self,
        static: lsp.ServerCapabilities | None = None,
        *,
        encoding: str | None = None,
        unreadable: Sequence[str] = (),
    ) -> None:
        self._static = static
        self.registrations: dict[str, tuple[str, Any]] = {}  # id -> (method, options)
        self.position_encoding: Encoding = negotiated(encoding)
        self.unreadable = list(unreadable)  # capabilities off the spec, left out
        self._offered: dict[str, bool] = {}  # `supports`, remembered until a registration
        self._data: dict[str, Any] | None = None  # `static` as JSON data, once asked

    @property
    def static(self) -> lsp.ServerCapabilities | None:
        """What the server answered to initialize (None until then)."""
        return self._static

    @static.setter
    def static(self, static: lsp.ServerCapabilities | None) -> None:
        self._static = static
        self._offered = {}
        self._data = None

    def static_data(self) -> dict[str, Any]:
        """`static` as the JSON data the server sent (empty until it answered), unstructured
        once for every editor's `initialize` (shared: not to be changed)."""
        data = self._data
        if data is None:
            data = self._data = unstructure(self._static) if self._static is not None else {}
        return data

    def register(self, reg_id: str, method: str, options: Any) -> str | None:
        """Record a registration. Options off the LSP spec are left out (the method is
        offered, none of its sub-options): what is wrong with them is returned."""
        self._offered = {}
        try:
            self.registrations[reg_id] = (method, registration_options(method, options))
        except OffSpec as exc:
            self.registrations[reg_id] = (method, None)
            self.unreadable.append(f"{method} registration")
            return exc.detail
        return None

    def unregister(self, reg_id: str) -> None:
        self._offered = {}
        self.registrations.pop(reg_id, None)

    def registered(self, method: str) -> list[Any]:
        """Options of the live dynamic registrations of `method`."""
        return [opts for m, opts in self.registrations.values() if m == method]

    @staticmethod
    def registered_as(method: str) -> str:
        """The method a dynamic registration names for `method`."""
        return _REGISTERED_AS.get(method, method)

    @staticmethod
    def provider(method: str) -> str:
        """The capability that offers `method`, as the LSP spec names it
        (`renameProvider.prepareProvider`)."""
        operation = _FILE_OPERATIONS.get(method)
        if operation is not None:
            return f"workspace.fileOperations.{_camel(operation)}"
        provider = _PROVIDERS.get(method)
        if provider is None:
            return method
        return ".".join(_camel(part) for part in provider if part)

    def supports(self, method: str) -> bool:
        """Whether the server offers `method` (statically or by a dynamic registration)."""
        offered = self._offered.get(method)
        if offered is None:
            offered = self._offered[method] = self._supports(method)
        return offered

    def _supports(self, method: str) -> bool:
        if method in _FILE_OPERATIONS:
            return bool(self.file_filters(method))
        provider = _PROVIDERS.get(method)
        if provider is None:
            return bool(self.registered(method))
        key, sub = provider
        options: list[Any] = [getattr(self.static, key, None)]
        options += [
            True if opts is None else opts for opts in self.registered(self.registered_as(method))
        ]
        for option in options:
            if option is None or option is False:
                continue
            if sub is None or getattr(option, sub, None):
                return True
        return False

    def file_filters(self, method: str) -> list[lsp.FileOperationFilter]:
        """The filters of the files a file operation (`workspace/willRenameFiles`) is sent
        about, statically and by registration; empty when the server does not take it."""
        name = _FILE_OPERATIONS[method]
        workspace = getattr(self.static, "workspace", None)
        operations = getattr(workspace, "file_operations", None)
        offered = [getattr(operations, name, None), *self.registered(method)]
        return [
            item
            for option in offered
            if isinstance(option, lsp.FileOperationRegistrationOptions)
            for item in option.filters
        ]

    def watched_file_globs(self) -> list[Any]:
        """The `FileSystemWatcher` glob patterns the server registered, as JSON data."""
        return [
            unstructure(watcher.glob_pattern)
            for options in self.registered("workspace/didChangeWatchedFiles")
            if isinstance(options, lsp.DidChangeWatchedFilesRegistrationOptions)
            for watcher in options.watchers
        ]


def _camel(name: str) -> str:
    """`code_action_provider` as the spec spells it: `codeActionProvider`."""
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)
