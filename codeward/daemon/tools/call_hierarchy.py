"""The call-hierarchy tool: the callers or callees of the function at a position, one
level deep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from lsprotocol import types as lsp

from codeward.daemon.intel import calls
from codeward.daemon.intel.locations import Locator, finish
from codeward.daemon.lsp import shapes
from codeward.daemon.tools.positions import PositionArgs, locate, position_params, with_at
from codeward.daemon.tools.registry import ToolContext, tool


class CallsArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
    direction: Annotated[
        Literal["incoming", "outgoing"],
        msgspec.Meta(description="`incoming`: who calls it; `outgoing`: what it calls."),
    ] = "incoming"


@tool(
    "call_hierarchy",
    "List the callers (direction incoming) or the callees (direction outgoing) of the "
    "function at a position, one level deep, each with its location and a preview. Use it "
    "to trace how code is reached or what it depends on.",
    CallsArgs,
    title="Call hierarchy",
)
async def call_hierarchy(ctx: ToolContext, args: CallsArgs) -> dict[str, Any]:
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    prepare = "textDocument/prepareCallHierarchy"
    answer = await manager.request(source.path, prepare, position_params(prepare, line, character))
    items: Sequence[lsp.CallHierarchyItem] = (
        shapes.answer(answer.result, answer.server, prepare) or []
    )
    if not items:
        return with_at(
            at,
            {
                "status": "not_found",
                "direction": args.direction,
                "calls": [],
                "count": 0,
                "partial": answer.partial,
            },
        )
    method = f"callHierarchy/{args.direction}Calls"
    locator = Locator(manager)
    found: list[dict[str, Any]] = []
    for item in items:
        if args.direction == "incoming":
            params = shapes.unstructure(lsp.CallHierarchyIncomingCallsParams(item=item))
            reply = await answer.follow(method, params)
            into: Sequence[lsp.CallHierarchyIncomingCall] | None = shapes.answer(
                reply.result, reply.server, method
            )
            await locator.prepare([item.uri, *(call.from_.uri for call in into or ())])
            found += calls.incoming(into, locator, answer.encoding)
        else:
            params = shapes.unstructure(lsp.CallHierarchyOutgoingCallsParams(item=item))
            reply = await answer.follow(method, params)
            out: Sequence[lsp.CallHierarchyOutgoingCall] | None = shapes.answer(
                reply.result, reply.server, method
            )
            await locator.prepare([item.uri, *(call.to.uri for call in out or ())])
            found += calls.outgoing(out, item, locator, answer.encoding)
    found = finish(found)
    target = items[0]
    where = locator.location(target.uri, target.selection_range, answer.encoding)
    return with_at(
        at,
        {
            "status": "found" if found else "not_found",
            "direction": args.direction,
            "item": {"name": locator.scrub(target.name), **(where or {})},
            "calls": found,
            "count": len(found),
            "partial": answer.partial,
        },
    )
