"""Hover answers: the markdown, and the signature, type, docs and module parsed out of it.

Servers dress hovers differently: basedpyright writes ```` ```python\n(function) def f()``` ````
then docs after `---`; gopls writes the declaration, docs and a pkg.go.dev link; clangd
writes a `### kind `name`` heading, details, and the declaration last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[ \t]*([\w+#-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_PYRIGHT_KIND = re.compile(r"^\(([a-z][a-z ]*)\)\s+")
_GO_DOC_LINK = re.compile(r"\[[^\]]*\]\(https://pkg\.go\.dev/([^)#\s]+)(?:#[^)\s]*)?\)")
_CLANGD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*`([^`]+)`\s*$", re.MULTILINE)
_CLANGD_NAMESPACE = re.compile(r"^//\s*In (?:namespace|class|struct)\s+(.+)$", re.MULTILINE)
_CLANGD_TYPE = re.compile(r"^Type:\s*`([^`]+)`", re.MULTILINE)
_GO_KINDS = ("func", "var", "const", "type", "field", "package", "method")
_TYPED_KINDS = ("variable", "parameter", "property", "constant", "type alias", "field")


@dataclass
class HoverText:
    markdown: str
    signature: str | None
    kind: str | None
    type: str | None
    docs: str | None
    module: str | None


def markdown_of(contents: Any) -> str:
    """The markdown of `Hover.contents`: MarkupContent, MarkedString or a list of them."""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, list):
        parts = [markdown_of(item) for item in contents]
        return "\n\n".join(part for part in parts if part.strip())
    if isinstance(contents, dict):
        value = contents.get("value")
        if not isinstance(value, str):
            return ""
        language = contents.get("language")
        if isinstance(language, str):
            return f"```{language}\n{value}\n```"
        if contents.get("kind") == "plaintext":
            return value
        return value
    return ""


def _prose(markdown: str) -> str:
    """The markdown without code blocks, rules and clangd's heading, tidied."""
    text = _FENCE.sub("", markdown)
    text = _CLANGD_HEADING.sub("", text)
    text = _GO_DOC_LINK.sub("", text)
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip() not in ("---", "***", "___")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _after_name(signature: str) -> str | None:
    """`int` from `x: int` (Python) or `Square` from `sq: Square`."""
    match = re.match(r"^[\w.]+\s*:\s*(.+)$", signature, re.DOTALL)
    return match.group(1).strip() if match else None


def parse(markdown: str) -> HoverText | None:
    """The parts of a hover's markdown, or None when it shows nothing."""
    if not markdown.strip():
        return None
    blocks = [(lang, body.strip()) for lang, body in _FENCE.findall(markdown)]
    docs = _prose(markdown) or None
    signature = kind = type_ = module = None
    heading = _CLANGD_HEADING.search(markdown)
    if heading:  # clangd: the declaration is the last block
        kind = heading.group(1).strip().lower() or None
        if blocks:
            body = blocks[-1][1]
            namespace = _CLANGD_NAMESPACE.search(body)
            if namespace:
                module = namespace.group(1).strip()
            signature = _CLANGD_NAMESPACE.sub("", body).strip() or None
        typed = _CLANGD_TYPE.search(markdown)
        if typed:
            type_ = typed.group(1)
    elif blocks:
        signature = blocks[0][1]
        prefix = _PYRIGHT_KIND.match(signature)
        if prefix:  # basedpyright, pyright
            kind = prefix.group(1)
            signature = signature[prefix.end() :]
            if kind == "module":
                module = signature.strip()
            elif kind in _TYPED_KINDS:
                type_ = _after_name(signature)
        elif signature.startswith("class "):  # basedpyright shows a class bare
            kind = "class"
        else:
            first = signature.split(None, 1)
            if first and first[0] in _GO_KINDS:  # gopls
                kind = first[0]
                if kind in ("var", "const", "field") and len(first) == 2:
                    rest = first[1].split(None, 1)
                    type_ = rest[1].split("=", 1)[0].strip() if len(rest) == 2 else None
        link = _GO_DOC_LINK.search(markdown)
        if link:
            module = link.group(1).split("@", 1)[0]
    return HoverText(markdown.strip(), signature, kind, type_ or None, docs, module)
