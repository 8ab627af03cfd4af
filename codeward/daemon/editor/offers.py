"""The capabilities the editor is told: what the root's servers offer, merged.

Each request the dialect forwards is offered when a server of the root's main languages
offers it (statically, with that server's options, or by a dynamic registration); the
first such server in routing order gives the options, as it is the one a request goes to.
Commands are the union of every server's. Documents are synced incrementally and saves
announced, diagnostics both pushed and answered to pulls; `positionEncoding` is the one
negotiated.
"""

from __future__ import annotations

from typing import Any

from codeward.daemon.lsp.service import Offer

# The requests forwarded to a document's servers, and the capability that offers each.
PROVIDERS: dict[str, str] = {
    "textDocument/hover": "hoverProvider",
    "textDocument/definition": "definitionProvider",
    "textDocument/declaration": "declarationProvider",
    "textDocument/typeDefinition": "typeDefinitionProvider",
    "textDocument/implementation": "implementationProvider",
    "textDocument/references": "referencesProvider",
    "textDocument/documentHighlight": "documentHighlightProvider",
    "textDocument/documentSymbol": "documentSymbolProvider",
    "textDocument/completion": "completionProvider",
    "textDocument/signatureHelp": "signatureHelpProvider",
    "textDocument/codeAction": "codeActionProvider",
    "textDocument/formatting": "documentFormattingProvider",
    "textDocument/rangeFormatting": "documentRangeFormattingProvider",
    "textDocument/rename": "renameProvider",
    "textDocument/prepareRename": "renameProvider",
    "textDocument/foldingRange": "foldingRangeProvider",
    "textDocument/selectionRange": "selectionRangeProvider",
    "textDocument/semanticTokens/full": "semanticTokensProvider",
    "textDocument/semanticTokens/full/delta": "semanticTokensProvider",
    "textDocument/semanticTokens/range": "semanticTokensProvider",
    "textDocument/inlayHint": "inlayHintProvider",
    "textDocument/prepareCallHierarchy": "callHierarchyProvider",
    "textDocument/prepareTypeHierarchy": "typeHierarchyProvider",
    "workspace/symbol": "workspaceSymbolProvider",
}
# What the dialect itself answers for every editor.
OWN: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
    "diagnosticProvider": {"interFileDependencies": True, "workspaceDiagnostics": False},
    "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": False}},
}


def merged(offers: list[Offer], encoding: str) -> dict[str, Any]:
    """The `capabilities` of the answer to `initialize` (see the module docstring)."""
    capabilities: dict[str, Any] = {"positionEncoding": encoding}
    for method, key in PROVIDERS.items():
        if key in capabilities:
            continue
        for offer in offers:
            option = offer.capabilities.get(key)
            if option not in (None, False):
                capabilities[key] = _in(option, key, offer.encoding != encoding)
                break
            if offer.supports(method) and (value := _registered(key)) is not None:
                capabilities[key] = value
                break
    commands = [c for offer in offers for c in _commands(offer)]
    if commands:
        capabilities["executeCommandProvider"] = {"commands": list(dict.fromkeys(commands))}
    capabilities.update(OWN)
    return capabilities


def _in(option: Any, key: str, converted: bool) -> Any:
    """A server's option as the editor gets it: semantic tokens whose positions are
    converted come whole (a delta edits the server's numbers, which cannot be converted)."""
    if converted and key == "semanticTokensProvider" and isinstance(option, dict):
        full = option.get("full")
        if isinstance(full, dict):
            return {**option, "full": True}
    return option


def _registered(key: str) -> Any:
    """The option of a capability a server registered dynamically (its options are its own)."""
    if key == "completionProvider":
        return {"resolveProvider": True}
    if key == "semanticTokensProvider":
        return None
    return True


def _commands(offer: Offer) -> list[str]:
    option = offer.capabilities.get("executeCommandProvider")
    commands = option.get("commands") if isinstance(option, dict) else None
    return [c for c in commands if isinstance(c, str)] if isinstance(commands, list) else []


def command_servers(offers: list[Offer]) -> dict[str, str]:
    """Each command's server (the first that names it)."""
    found: dict[str, str] = {}
    for offer in offers:
        for command in _commands(offer):
            found.setdefault(command, offer.server)
    return found


def _client_name(method: str) -> tuple[str, str]:
    """Where the editor declares a method's dynamic registration: (section, name)."""
    section, _, name = method.partition("/")
    name = name.split("/", 1)[0]
    if name.startswith("prepare") and name != "prepareRename":
        name = name[len("prepare") :]
    return section, name[:1].lower() + name[1:]


def registration_method(method: str) -> str:
    """The method a registration names (semantic tokens register as one)."""
    if method.startswith("textDocument/semanticTokens"):
        return "textDocument/semanticTokens"
    return method


def registrations(
    offers: list[Offer], announced: set[str], language_id: str, client: dict[str, Any]
) -> list[dict[str, Any]]:
    """`client/registerCapability` registrations of what the servers of a language that
    started after `initialize` offer and the editor was not told (`announced`: the
    capabilities told so far, updated), for the editor's documents of that language only;
    only those the editor registers dynamically."""
    found: list[dict[str, Any]] = []
    for method, key in PROVIDERS.items():
        if key in announced or method == "textDocument/prepareRename":
            continue
        section, name = _client_name(method)
        declared = client.get(section, {}).get(name, {}) if isinstance(client, dict) else {}
        if not (isinstance(declared, dict) and declared.get("dynamicRegistration") is True):
            continue
        for offer in offers:
            option = offer.capabilities.get(key)
            if option in (None, False) and not offer.supports(method):
                continue
            options = dict(option) if isinstance(option, dict) else {}
            if section == "textDocument":
                options["documentSelector"] = [{"language": language_id}]
            method_name = registration_method(method)
            found.append({"id": f"codeward-{method_name}-{language_id}", "method": method_name,
                          "registerOptions": options})  # fmt: skip
            announced.add(key)
            break
    return found
