"""`edit_symbol`: replace a definition or its body, or put text before or after it, found by
its name path in the file's document symbols, and written the way `edit_file` writes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
from lsprotocol import types as lsp

from codeward.daemon.edits.symbol_text import ACTIONS, Action, Place, Span, check_text, new_text
from codeward.daemon.intel.addressing import choose, name_parts, segments
from codeward.daemon.intel.symbols import kind_name
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.uris import real_path
from codeward.daemon.tools.diagnostics import Severity
from codeward.daemon.tools.edit_file import Mode, check_expected, read_target, write_edit
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ErrorKind, ToolError


class EditSymbolArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str, msgspec.Meta(description="The file, relative to the project root or absolute.")
    ]
    symbol: Annotated[
        str,
        msgspec.Meta(
            description="The symbol's name path in the file: `Class.method`, `Class`, a "
            "top-level `main` (as get_symbols lists them)."
        ),
    ]
    action: Annotated[
        str,
        msgspec.Meta(
            description="`replace_body` (the body only: in Python the lines after the "
            "header, docstring included; elsewhere the text between its braces), `replace` "
            "(the whole definition as the server's range gives it, decorators included "
            "when it holds them), `insert_before` or `insert_after` (whole lines)."
        ),
    ]
    text: Annotated[
        str,
        msgspec.Meta(
            description="The new text, at the top level or already indented: it is "
            "re-indented to the symbol (its body, for replace_body)."
        ),
    ]
    mode: Annotated[
        Mode,
        msgspec.Meta(
            description="`apply` writes it; `preview` writes nothing and shows the servers "
            "the new text in memory only; `safe` previews and writes only when no "
            "diagnostic of `severity` or worse is introduced."
        ),
    ] = "apply"
    expected_hash: Annotated[
        str | None,
        msgspec.Meta(
            description="The `content_hash` the file must still have; else `stale_edit` "
            "and nothing is written."
        ),
    ] = None
    severity: Annotated[
        Severity,
        msgspec.Meta(description="With `safe`: the least severe introduced level that refuses."),
    ] = "error"


@tool(
    "edit_symbol",
    "Edit a definition by its name path (`Class.method`, `main`) in a file, found through "
    "the language server's document symbols: `replace_body`, `replace` the whole "
    "definition, `insert_before` or `insert_after` it. `text` is re-indented to the "
    "symbol. Written like edit_file: `apply`, `preview` or `safe`, `expected_hash`, and "
    "the result has `symbol` (what was edited), `content_hash`, `diff`, `written` and "
    "`diagnostics_after`. An ambiguous or unknown name is an error naming the candidates.",
    EditSymbolArgs,
    title="Edit a symbol",
    destructive=True,
    write_switch="mode",
    writes=lambda args: args.mode != "preview",
)
async def edit_symbol(ctx: ToolContext, args: EditSymbolArgs) -> dict[str, Any]:
    if args.action not in ACTIONS:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"Unknown action {args.action!r}; give one of {', '.join(ACTIONS)}.",
        )
    action: Action = args.action  # type: ignore[assignment]  # checked just above
    check_text(args.text, action)
    if not segments(args.symbol):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            "Give `symbol` as a name path, such as `Class.method` or `main`.",
        )
    target = await read_target(ctx.session, args.path)
    check_expected(target, args.expected_hash)
    old_text = target.text()
    manager = ctx.session.lsp
    language = manager.language(target.path)
    answer = await manager.request(
        target.path,
        "textDocument/documentSymbol",
        lambda doc: shapes.document_params("textDocument/documentSymbol", doc.uri),
        wait_ready=False,
        snapshot=True,
    )
    seen = (answer.versions or {}).get(Path(real_path(target.path)))
    if seen is not None and seen[1] != target.hash:
        raise ToolError(
            ErrorKind.STALE_EDIT,
            f"{target.shown!r} changed while its symbols were asked, so nothing was written; "
            "run the tool again.",
            path=target.shown,
        )
    tree = shapes.answer(answer.result, answer.server, "textDocument/documentSymbol")
    found = list(_symbols(tree or [], answer, target.path.as_uri()))
    chosen = choose(args.symbol, found, f"in {target.shown!r}", ways="")
    place = Place(chosen.span, chosen.name_line, chosen.described)
    new = new_text(old_text, place, action, args.text, language)
    result = await write_edit(
        ctx, target, old_text, new, args.mode, args.severity, tool_name="edit_symbol"
    )
    return {"symbol": chosen.public(), **result}


@dataclass(frozen=True)
class _Symbol:
    chain: tuple[str, ...]  # names from the top of the file down
    kind: str
    span: Span
    name_line: int

    @property
    def dotted(self) -> str:
        return ".".join(self.chain)

    @property
    def place(self) -> tuple[Any, ...]:
        return (self.span.line, self.span.character, self.chain)

    @property
    def shown(self) -> str:
        return self.described

    @property
    def described(self) -> str:
        return f"{self.dotted!r} ({self.kind}, {self._lines})"

    @property
    def _lines(self) -> str:
        first, last = self.span.line, self.span.end_line
        return f"line {first}" if first == last else f"lines {first}-{last}"

    def public(self) -> dict[str, Any]:
        return {
            "name_path": self.dotted,
            "kind": self.kind,
            "line": self.span.line,
            "end_line": self.span.end_line,
        }


def _symbols(items: Sequence[Any], answer: Answer, uri: str) -> Iterator[_Symbol]:
    """Every symbol of a document-symbol answer (a tree, or flat with containers)."""

    def walk(nodes: Sequence[Any], chain: tuple[str, ...]) -> Iterator[_Symbol]:
        for node in nodes:
            if isinstance(node, lsp.DocumentSymbol):
                own = (*chain, *name_parts(node.name))
                span = Span(*answer.span(uri, node.range))
                name_line = answer.point(uri, node.selection_range.start)[0]
                yield _Symbol(own, kind_name(node.kind), span, name_line)
                yield from walk(node.children or [], own)
            elif isinstance(node, lsp.SymbolInformation):
                container = node.container_name
                above = segments(container.replace("/", ".")) if container else ()
                own = (*above, *name_parts(node.name))
                span = Span(*answer.span(uri, node.location.range))
                yield _Symbol(own, kind_name(node.kind), span, span.line)

    yield from walk(items, ())
