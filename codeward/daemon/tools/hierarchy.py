"""The type hierarchy and signature help tools: the supertypes or subtypes of the type at a
position (`textDocument/prepareTypeHierarchy`, then `typeHierarchy/supertypes|subtypes`),
and the signatures of the call a position is in (`textDocument/signatureHelp`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from lsprotocol import types as lsp

from codeward.daemon.intel import hover
from codeward.daemon.intel.inputs import check_position, source_file
from codeward.daemon.intel.locations import Locator, finish
from codeward.daemon.intel.symbols import kind_name
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import DocumentContext
from codeward.daemon.tools.positions import Character, Line, Path_, PositionArgs, locate, with_at
from codeward.daemon.tools.registry import ToolContext, tool

PREPARE = "textDocument/prepareTypeHierarchy"
SIGNATURE_HELP = "textDocument/signatureHelp"


class TypeHierarchyArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
    direction: Annotated[
        Literal["supertypes", "subtypes"],
        msgspec.Meta(
            description="`supertypes`: what the type extends or implements; `subtypes`: the "
            "types that extend or implement it."
        ),
    ] = "supertypes"


def _at_position(method: str, line: int, character: int) -> Any:
    def build(doc: DocumentContext) -> Any:
        position = lsp.Position(**doc.position(line, character))
        return shapes.document_params(method, doc.uri, position=position)

    return build


class CallPositionArgs(msgspec.Struct, forbid_unknown_fields=True):
    """A position inside a call's parentheses: taken as given (a space between arguments
    is a place here, never snapped to a name)."""

    path: Path_
    line: Line
    character: Character


@tool(
    "type_hierarchy",
    "List the supertypes (direction supertypes: what it extends or implements) or the "
    "subtypes (direction subtypes: what extends or implements it) of the class, interface "
    "or struct at a position, one level deep, each with its location and a preview. Use it "
    "to see where a type sits before changing it.",
    TypeHierarchyArgs,
    title="Type hierarchy",
)
async def type_hierarchy(ctx: ToolContext, args: TypeHierarchyArgs) -> dict[str, Any]:
    manager, at = await locate(ctx, args)
    answer = await manager.request(
        at.source.path, PREPARE, _at_position(PREPARE, at.line, at.character)
    )
    items: Sequence[lsp.TypeHierarchyItem] = shapes.answer(answer.result, answer.server, PREPARE)
    result: dict[str, Any] = {"status": "not_found", "direction": args.direction, "types": []}
    if not items:
        return with_at(at, {**result, "count": 0, "partial": answer.partial})
    method = f"typeHierarchy/{args.direction}"
    locator = Locator(manager)
    found: list[dict[str, Any]] = []
    for item in items:
        params = (
            lsp.TypeHierarchySupertypesParams(item=item)
            if args.direction == "supertypes"
            else lsp.TypeHierarchySubtypesParams(item=item)
        )
        reply = await answer.follow(method, shapes.unstructure(params))
        related: Sequence[lsp.TypeHierarchyItem] | None = shapes.answer(
            reply.result, reply.server, method
        )
        await locator.prepare([item.uri, *(r.uri for r in related or ())])
        for other in related or ():
            where = locator.location(other.uri, other.selection_range, answer.encoding)
            if where is not None:
                name = locator.scrub(other.name)
                found.append({"name": name, "kind": kind_name(other.kind), **where})
    found = finish(found)
    target = items[0]
    where = locator.location(target.uri, target.selection_range, answer.encoding)
    return with_at(
        at,
        {
            "status": "found" if found else "not_found",
            "direction": args.direction,
            "item": {
                "name": locator.scrub(target.name),
                "kind": kind_name(target.kind),
                **(where or {}),
            },
            "types": found,
            "count": len(found),
            "partial": answer.partial,
        },
    )


@tool(
    "signature_help",
    "Show the signature(s) of the function or method whose call a position is in (inside "
    "the parentheses), with each parameter's documentation and which parameter the position "
    "is at. Use it while writing a call, to pass the right arguments.",
    CallPositionArgs,
    title="Signature help",
)
async def signature_help(ctx: ToolContext, args: CallPositionArgs) -> dict[str, Any]:
    manager = ctx.session.lsp
    source = source_file(manager, args.path)
    check_position(source, args.line, args.character)
    answer = await manager.request(
        source.path, SIGNATURE_HELP, _at_position(SIGNATURE_HELP, args.line, args.character)
    )
    helped: lsp.SignatureHelp | None = shapes.answer(answer.result, answer.server, SIGNATURE_HELP)
    if helped is None or not helped.signatures:
        return {"status": "not_found", "signatures": [], "partial": answer.partial}
    locator = Locator(manager)
    signatures = [_signature(s, locator) for s in helped.signatures]
    active = helped.active_signature or 0
    active = active if 0 <= active < len(signatures) else 0
    chosen = helped.signatures[active]
    parameter = chosen.active_parameter
    if parameter is None:
        parameter = helped.active_parameter
    parameters = chosen.parameters or []
    return {
        "status": "found",
        "signatures": signatures,
        "active_signature": active,
        "active_parameter": parameter
        if parameter is not None and parameter < len(parameters)
        else None,
        "partial": answer.partial,
    }


def _signature(signature: lsp.SignatureInformation, locator: Locator) -> dict[str, Any]:
    """One signature: its label, docs and parameters (each label as text, with its docs)."""
    label = signature.label
    parameters = []
    for parameter in signature.parameters or []:
        text = parameter.label
        if not isinstance(text, str):  # [start, end] offsets into the label (UTF-16)
            start, end = text
            text = _utf16_slice(label, start, end)
        parameters.append({"label": text, "docs": _docs(parameter.documentation, locator)})
    return {
        "label": locator.scrub(label),
        "docs": _docs(signature.documentation, locator),
        "parameters": parameters,
    }


def _docs(documentation: str | lsp.MarkupContent | None, locator: Locator) -> str:
    if documentation is None:
        return ""
    text = documentation if isinstance(documentation, str) else hover.markdown_of(documentation)
    return locator.scrub(text).strip()


def _utf16_slice(text: str, start: int, end: int) -> str:
    """`text[start:end]` with offsets counted in UTF-16 code units, as LSP counts them."""
    data = text.encode("utf-16-le")
    return data[2 * start : 2 * end].decode("utf-16-le", errors="replace")
