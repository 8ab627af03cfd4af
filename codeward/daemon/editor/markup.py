"""Answers in the markup the editor takes: an editor that declares plain text only (its
`hover.contentFormat`, completion items' or signatures' `documentationFormat` without
"markdown", e.g. eglot without markdown-mode) gets the servers' markdown as plain text
(`intel.hover.plaintext`, the cleanup agents' text gets). The daemon's servers were started
with codeward's own capabilities (markdown), so the conversion is the dialect's; answers
pass untouched when the editor takes markdown, or said nothing."""

from __future__ import annotations

from typing import Any

import msgspec

from codeward.daemon.intel.hover import plaintext

MARKDOWN = "markdown"


def _plain_only(capabilities: Any, *path: str) -> bool:
    for key in path:
        capabilities = capabilities.get(key) if isinstance(capabilities, dict) else None
    return isinstance(capabilities, list) and MARKDOWN not in capabilities


class Markup:
    """One editor's conversions (see the module docstring), by request method."""

    def __init__(self, capabilities: dict[str, Any]) -> None:
        hover = _plain_only(capabilities, "textDocument", "hover", "contentFormat")
        completion = _plain_only(capabilities, "textDocument", "completion", "completionItem",
                                 "documentationFormat")  # fmt: skip
        signature = _plain_only(capabilities, "textDocument", "signatureHelp",
                                "signatureInformation", "documentationFormat")  # fmt: skip
        self.methods: dict[str, Any] = {}
        if hover:
            self.methods["textDocument/hover"] = _hover
        if completion:
            self.methods["textDocument/completion"] = _completion
            self.methods["completionItem/resolve"] = _documented
        if signature:
            self.methods["textDocument/signatureHelp"] = _signatures

    def __call__(self, method: str, result: Any) -> Any:
        """`result` (raw JSON or data) as the editor takes it."""
        convert = self.methods.get(method)
        if convert is None:
            return result
        if isinstance(result, msgspec.Raw):
            if b'"markdown"' not in bytes(result) and method != "textDocument/hover":
                return result  # (documentation that is plain already: passed as it came)
            # (a hover's MarkedString is markdown without saying so: always read)
            result = msgspec.json.decode(result)
        return convert(result)


def _text(markup: Any) -> Any:
    """A `MarkupContent` as plain text (anything else as it is)."""
    if isinstance(markup, dict) and markup.get("kind") == MARKDOWN:
        return {"kind": "plaintext", "value": plaintext(str(markup.get("value", "")))}
    return markup


def _marked(item: Any) -> str:
    """A `MarkedString` (markdown, or code of a language) as plain text."""
    if isinstance(item, dict):
        return str(item.get("value", ""))
    return plaintext(str(item))


def _hover(result: Any) -> Any:
    if not isinstance(result, dict) or "contents" not in result:
        return result
    contents = result["contents"]
    if isinstance(contents, dict) and "kind" in contents:
        value = _text(contents)
    else:
        items = contents if isinstance(contents, list) else [contents]
        value = {"kind": "plaintext",
                 "value": "\n\n".join(t for t in map(_marked, items) if t.strip())}  # fmt: skip
    return {**result, "contents": value}


def _documented(item: Any) -> Any:
    """A completion item or a signature (or parameter) with plain documentation."""
    if isinstance(item, dict) and "documentation" in item:
        return {**item, "documentation": _text(item["documentation"])}
    return item


def _completion(result: Any) -> Any:
    if isinstance(result, list):
        return [_documented(item) for item in result]
    if isinstance(result, dict) and isinstance(result.get("items"), list):
        return {**result, "items": [_documented(item) for item in result["items"]]}
    return result


def _signatures(result: Any) -> Any:
    if not isinstance(result, dict) or not isinstance(result.get("signatures"), list):
        return result
    signatures = []
    for signature in result["signatures"]:
        signature = _documented(signature)
        if isinstance(signature, dict) and isinstance(signature.get("parameters"), list):
            parameters = [_documented(p) for p in signature["parameters"]]
            signature = {**signature, "parameters": parameters}
        signatures.append(signature)
    return {**result, "signatures": signatures}
