"""Hover answers: the markdown, and the signature, type, docs and module parsed out of it.

Servers dress hovers differently: basedpyright writes ```` ```python\n(function) def f()``` ````
then docs after `---`; gopls writes the declaration, docs and a pkg.go.dev link; clangd
writes a `### kind `name`` heading, details, and the declaration last. The servers of other
languages are told apart by the language of their first code block: rust-analyzer puts the
module path (`demo::util`) in a block of its own before the declaration; tsserver (and the
Svelte server) writes `(method) C.m(): T`, `function f(x: number): string` or `const x: T`,
with an `import x` line under an alias; intelephense a bold `__Ns\\Class::member__`
heading, docs, then the declaration after `<?php` with an empty body (a variable is only
`_@var_ `int $n``); jdtls the declaration (`int Util.twice(int x)`), docs and a `Source:`
link.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lsprotocol import types as lsp

from codeward.protocol.render.intel import plain

_FENCE = re.compile(r"```[ \t]*([\w+#-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_PYRIGHT_KIND = re.compile(r"^\(([a-z][a-z ]*)\)\s+")
_GO_DOC_LINK = re.compile(r"\[[^\]]*\]\(https://pkg\.go\.dev/([^)#\s]+)(?:#[^)\s]*)?\)")
_CLANGD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*`([^`]+)`\s*$", re.MULTILINE)
_CLANGD_NAMESPACE = re.compile(r"^//\s*In (?:namespace|class|struct)\s+(.+)$", re.MULTILINE)
_CLANGD_TYPE = re.compile(r"^Type:\s*`([^`]+)`", re.MULTILINE)
_GO_KINDS = ("func", "var", "const", "type", "field", "package", "method")
_RUST_PATH = re.compile(r"^\w+(?:::\w+)*$")  # `demo::util`: the module rust-analyzer shows first
_RUST_VISIBILITY = re.compile(r"^pub(?:\([^)]*\))?\s+")
_RUST_FN = re.compile(r"^(?:(?:const|async|unsafe|extern(?: \"\w+\")?)\s+)*fn\b")
_RUST_KINDS = {
    "fn": "function",
    "struct": "struct",
    "enum": "enum",
    "union": "union",
    "trait": "trait",
    "mod": "module",
    "type": "type alias",
    "const": "constant",
    "static": "static",
    "let": "variable",
    "macro_rules!": "macro",
}
_TS_LANGUAGES = ("typescript", "javascript", "ts", "js", "tsx", "jsx")
_TS_KEYWORDS = {
    "function": "function",
    "class": "class",
    "interface": "interface",
    "type": "type alias",
    "enum": "enum",
    "namespace": "namespace",
    "module": "module",
    "const": "constant",
    "let": "variable",
    "var": "variable",
}
_PHP_HEADING = re.compile(r"^__(.+?)__\s*$", re.MULTILINE)
_PHP_TAGGED = re.compile(r"^_@(var|param)_\s+`([^`]+)`", re.MULTILINE)
_PHP_KINDS = ("class", "interface", "trait", "enum", "function", "const")
_JAVA_SOURCE = re.compile(r"^Source:\s*\*?\[[^\]]*\]\([^)]*\)\*?\s*$", re.MULTILINE)
_JAVA_KINDS = ("class", "interface", "enum", "record", "package")
_TYPED_KINDS = ("variable", "parameter", "property", "constant", "type alias", "field")


@dataclass
class HoverText:
    markdown: str
    signature: str | None
    kind: str | None
    type: str | None
    docs: str | None
    module: str | None


def markdown_of(contents: lsp.MarkupContent | lsp.MarkedString | Sequence[lsp.MarkedString]) -> str:
    """The markdown of `Hover.contents`: MarkupContent, MarkedString or a list of them."""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, lsp.MarkupContent):
        return contents.value
    if isinstance(contents, lsp.MarkedStringWithLanguage):
        return f"```{contents.language}\n{contents.value}\n```"
    if isinstance(contents, Sequence):
        parts = [markdown_of(item) for item in contents]
        return "\n\n".join(part for part in parts if part.strip())
    return ""


def plaintext(markdown: str) -> str:
    """Markdown for a reader of plain text (an editor that takes no markdown): its code
    blocks' text, then its prose (`_prose`) as models read it (`render.plain`)."""
    blocks = [body.strip() for _, body in _FENCE.findall(markdown)]
    return "\n\n".join(part for part in [*blocks, plain(_prose(markdown))] if part)


def _prose(markdown: str) -> str:
    """The markdown without code blocks, rules, headings and source links, tidied."""
    text = _FENCE.sub("", markdown)
    text = _CLANGD_HEADING.sub("", text)
    text = _PHP_HEADING.sub("", text)
    text = _JAVA_SOURCE.sub("", text)
    text = _GO_DOC_LINK.sub("", text)
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip() not in ("---", "***", "___")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _after_name(signature: str) -> str | None:
    """`int` from `x: int` (Python) or `Square` from `sq: Square`."""
    match = re.match(r"^[\w.]+\s*:\s*(.+)$", signature, re.DOTALL)
    return match.group(1).strip() if match else None


def _typed(name_and_type: str) -> str | None:
    """`T` from `x: T` (Rust, TypeScript), or None."""
    match = re.match(r"^(?:[\w.$]+\??)\s*:\s*(.+)$", name_and_type, re.DOTALL)
    return match.group(1).strip() if match else None


def _rust(blocks: list[str]) -> tuple[str | None, str | None, str | None, str | None]:
    """(signature, kind, type, module) of rust-analyzer's blocks: the module path first
    (when a declaration follows it), then the declaration."""
    module = None
    if len(blocks) > 1 and _RUST_PATH.match(blocks[0]):
        module, blocks = blocks[0], blocks[1:]
    signature = blocks[0]
    bare = _RUST_VISIBILITY.sub("", signature)
    word = bare.split(None, 1)[0] if bare.split() else ""
    kind = "function" if _RUST_FN.match(bare) else _RUST_KINDS.get(word)
    type_ = None
    if kind in ("variable", "constant", "static"):
        type_ = _typed(bare.split(None, 1)[1].split("=", 1)[0]) if " " in bare else None
    elif kind is None and (typed := _typed(bare)) is not None:  # a field or parameter
        kind, type_ = "field" if bare != signature or module else "variable", typed
    return signature, kind, type_, module


def _typescript(block: str) -> tuple[str | None, str | None, str | None]:
    """(signature, kind, type) of tsserver's block: `(kind) rest` or `keyword rest`; an
    alias's `import x` lines are dropped."""
    lines = [line for line in block.splitlines() if not line.startswith("import ")]
    signature = "\n".join(lines).strip() or block
    prefix = _PYRIGHT_KIND.match(signature)
    if prefix:
        kind = prefix.group(1)
        signature = signature[prefix.end() :]
        type_ = _typed(signature) if kind in ("property", "parameter", "variable") else None
        return signature, kind, type_
    word = signature.split(None, 1)
    kind = _TS_KEYWORDS.get(word[0]) if word else None
    type_ = None
    if kind in ("constant", "variable") and len(word) == 2:
        type_ = _typed(word[1].split(" = ", 1)[0])
    return signature, kind, type_


def _php(markdown: str, blocks: list[str]) -> tuple[str | None, str | None, str | None, str | None]:
    """(signature, kind, type, module) of intelephense's hover: the declaration without
    `<?php` and its empty body; the module is the namespace (and class) it lives in."""
    heading = _PHP_HEADING.search(markdown)
    name = heading.group(1).replace("\\\\", "\\") if heading else ""
    owner, sep, _ = name.rpartition("::") if "::" in name else name.rpartition("\\")
    module = owner if sep and owner else None
    if not blocks:
        tagged = _PHP_TAGGED.search(markdown)
        if tagged is None:
            return None, None, None, module
        declared = tagged.group(2)
        kind = "variable" if tagged.group(1) == "var" else "parameter"
        return declared, kind, declared.rsplit(None, 1)[0] if " " in declared else None, module
    lines = [line for line in blocks[0].splitlines() if line.strip() != "<?php"]
    signature = re.sub(r"\s*\{\s*\}\s*$", "", "\n".join(lines)).strip()
    words = signature.split()
    kind = next((word for word in words if word in _PHP_KINDS), None)
    if kind == "function" and "::" in name:
        kind = "method"
    return signature or None, kind, None, module


def _java(block: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(signature, kind, type, module) of jdtls' block: a method `int demo.Util.twice(int
    x)` (its module the class it belongs to), a type `demo.Util` or `class Util`, a field
    or variable `String s`."""
    words = block.split()
    kind = next((word for word in words if word in _JAVA_KINDS), None)
    type_ = module = None
    if kind is None and "(" in block:
        kind = "method"
        name = block.split("(", 1)[0].split()
        owner = name[-1].rpartition(".")[0] if name else ""
        module = owner or None
    elif kind is None and len(words) >= 2 and "=" not in block:
        kind, type_ = "variable", " ".join(words[:-1])
    return block, kind, type_, module


def parse(markdown: str) -> HoverText | None:
    """The parts of a hover's markdown, or None when it shows nothing."""
    if not markdown.strip():
        return None
    blocks = [(lang, body.strip()) for lang, body in _FENCE.findall(markdown)]
    docs = _prose(markdown) or None
    signature = kind = type_ = module = None
    fence = blocks[0][0].lower() if blocks else ""
    if fence == "rust":
        rust = [body for lang, body in blocks if lang.lower() == "rust"]
        signature, kind, type_, module = _rust(rust)
        return HoverText(markdown.strip(), signature, kind, type_, docs, module)
    if fence in _TS_LANGUAGES:
        signature, kind, type_ = _typescript(blocks[0][1])
        return HoverText(markdown.strip(), signature, kind, type_, docs, module)
    if fence == "php" or (not blocks and _PHP_TAGGED.search(markdown)):
        signature, kind, type_, module = _php(markdown, [b for _, b in blocks[:1]])
        return HoverText(markdown.strip(), signature, kind, type_, docs, module)
    if fence == "java":
        signature, kind, type_, module = _java(blocks[0][1])
        return HoverText(markdown.strip(), signature, kind, type_, docs, module)
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
