"""The `initialize` handshake's shapes: the params the daemon sends (what it declares it
can do, and nothing more) and the server's capabilities read from the result."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as lsp

from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.shapes import OffSpec, structure, unstructure

log = logging.getLogger("codeward.lsp")

CLIENT = lsp.ClientInfo(name="codeward", version="0.1.0")
ENCODINGS = ["utf-8", "utf-16"]
_LINK = lsp.DefinitionClientCapabilities(dynamic_registration=True, link_support=True)
_SYMBOL_KINDS = lsp.ClientSymbolKindOptions(value_set=list(lsp.SymbolKind))
_CODE_ACTION_KINDS = [
    lsp.CodeActionKind.Empty,
    lsp.CodeActionKind.QuickFix,
    lsp.CodeActionKind.Refactor,
    lsp.CodeActionKind.RefactorExtract,
    lsp.CodeActionKind.RefactorInline,
    lsp.CodeActionKind.RefactorRewrite,
    lsp.CodeActionKind.Source,
    lsp.CodeActionKind.SourceOrganizeImports,
    lsp.CodeActionKind.SourceFixAll,
]
_DYNAMIC = {"dynamic_registration": True}


def client_capabilities() -> lsp.ClientCapabilities:
    """The `ClientCapabilities` of `initialize`: what the tools really use."""
    return lsp.ClientCapabilities(
        general=lsp.GeneralClientCapabilities(
            position_encodings=ENCODINGS,
            stale_request_support=lsp.StaleRequestSupportOptions(
                cancel=True, retry_on_content_modified=[]
            ),
        ),
        workspace=lsp.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=lsp.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[
                    lsp.ResourceOperationKind.Create,
                    lsp.ResourceOperationKind.Rename,
                    lsp.ResourceOperationKind.Delete,
                ],
                failure_handling=lsp.FailureHandlingKind.Abort,
            ),
            configuration=True,
            workspace_folders=True,
            did_change_configuration=lsp.DidChangeConfigurationClientCapabilities(**_DYNAMIC),
            did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True, relative_pattern_support=True
            ),
            symbol=lsp.WorkspaceSymbolClientCapabilities(
                dynamic_registration=True, symbol_kind=_SYMBOL_KINDS
            ),
            diagnostics=lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=False),
            # move_file: the edits a rename of files needs, and the rename told after it
            file_operations=lsp.FileOperationClientCapabilities(
                dynamic_registration=True, will_rename=True, did_rename=True
            ),
        ),
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(
                dynamic_registration=True, did_save=False
            ),
            hover=lsp.HoverClientCapabilities(
                dynamic_registration=True,
                content_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText],
            ),
            definition=_LINK,
            type_definition=lsp.TypeDefinitionClientCapabilities(**attrs.asdict(_LINK)),
            implementation=lsp.ImplementationClientCapabilities(**attrs.asdict(_LINK)),
            declaration=lsp.DeclarationClientCapabilities(**attrs.asdict(_LINK)),
            references=lsp.ReferenceClientCapabilities(**_DYNAMIC),
            document_symbol=lsp.DocumentSymbolClientCapabilities(
                dynamic_registration=True,
                hierarchical_document_symbol_support=True,
                symbol_kind=_SYMBOL_KINDS,
            ),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                related_information=True,
                version_support=True,
                code_description_support=True,
                data_support=True,
                tag_support=lsp.ClientDiagnosticsTagOptions(value_set=list(lsp.DiagnosticTag)),
            ),
            diagnostic=lsp.DiagnosticClientCapabilities(
                dynamic_registration=True, related_document_support=False
            ),
            formatting=lsp.DocumentFormattingClientCapabilities(**_DYNAMIC),
            range_formatting=lsp.DocumentRangeFormattingClientCapabilities(**_DYNAMIC),
            code_action=lsp.CodeActionClientCapabilities(
                dynamic_registration=True,
                is_preferred_support=True,
                data_support=True,
                resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]),
                code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                    code_action_kind=lsp.ClientCodeActionKindOptions(value_set=_CODE_ACTION_KINDS)
                ),
            ),
            rename=lsp.RenameClientCapabilities(dynamic_registration=True, prepare_support=True),
            call_hierarchy=lsp.CallHierarchyClientCapabilities(**_DYNAMIC),
            type_hierarchy=lsp.TypeHierarchyClientCapabilities(dynamic_registration=False),
            signature_help=lsp.SignatureHelpClientCapabilities(
                dynamic_registration=True,
                signature_information=lsp.ClientSignatureInformationOptions(
                    documentation_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText],
                    parameter_information=lsp.ClientSignatureParameterInformationOptions(
                        label_offset_support=True
                    ),
                    active_parameter_support=True,
                ),
                context_support=True,
            ),
        ),
        window=lsp.WindowClientCapabilities(
            work_done_progress=True,
            show_message=lsp.ShowMessageRequestClientCapabilities(),
        ),
        # rust-analyzer then says when it is quiescent (lsp/readiness.py)
        experimental={"serverStatusNotification": True},
    )


def folders(roots: Sequence[Path]) -> list[lsp.WorkspaceFolder]:
    """The workspace folders of a server serving `roots` (the first is its own root)."""
    return [lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name) for root in roots]


def folders_changed(added: Sequence[Path], removed: Sequence[Path]) -> dict[str, Any]:
    """The params of `workspace/didChangeWorkspaceFolders`, as JSON-able data."""
    event = lsp.WorkspaceFoldersChangeEvent(added=folders(added), removed=folders(removed))
    return unstructure(lsp.DidChangeWorkspaceFoldersParams(event=event))


def initialize_params(roots: Sequence[Path], init_options: Any = None) -> dict[str, Any]:
    """The params of `initialize` for a server of `roots` (the first its root), as
    JSON-able data."""
    root = roots[0]
    params = lsp.InitializeParams(
        process_id=os.getpid(),
        client_info=CLIENT,
        locale="en",
        root_path=str(root),
        root_uri=root.as_uri(),
        workspace_folders=folders(roots),
        capabilities=client_capabilities(),
        initialization_options=init_options,
        trace=lsp.TraceValue.Off,
    )
    data = unstructure(params)
    # clangd's own name for positionEncodings (clangd before 15 reads only this one).
    data["capabilities"]["offsetEncoding"] = ENCODINGS
    data.setdefault("initializationOptions", None)
    return data


def server_capabilities(name: str, result: Any) -> Capabilities:
    """The capabilities of an `initialize` result. A capability off the LSP spec is left out
    (logged, and listed in `unreadable`), so one odd option does not stop a server whose
    other capabilities are fine; a result without capabilities raises `OffSpec`."""
    caps = result.get("capabilities") if isinstance(result, dict) else None
    if not isinstance(caps, dict):
        raise OffSpec("its initialize result has no capabilities")
    unreadable: list[str] = []
    try:
        static = structure(caps, lsp.ServerCapabilities)
    except OffSpec:
        readable: dict[str, Any] = {}
        for key, value in caps.items():
            try:
                structure({key: value}, lsp.ServerCapabilities)
            except OffSpec as exc:
                unreadable.append(key)
                log.warning("%s: capability %s is off the LSP spec: %s", name, key, exc.detail)
            else:
                readable[key] = value
        static = structure(readable, lsp.ServerCapabilities)
    # clangd before 15 answers with its own `offsetEncoding`, beside the capabilities.
    encoding = static.position_encoding or result.get("offsetEncoding")
    encoding = encoding if isinstance(encoding, str) else None
    return Capabilities(static, encoding=encoding, unreadable=unreadable)
