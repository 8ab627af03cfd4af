"""Call hierarchy answers as `calls` [{name, kind, path, line, character, preview}].

The answers come structured as lsprotocol types (`lsp.shapes.answer`: one off the spec is
an `lsp_error` naming the server and the method). Names are free text from the server:
paths in them are shown as the tools show paths.

Incoming: one entry per call site, at the call, named after the calling function.
Outgoing: one entry per callee, at its definition, with the `call_sites` in the asked item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.intel.locations import Locator, finish
from codeward.daemon.intel.symbols import kind_name
from codeward.daemon.lsp.positions import Encoding


def incoming(
    result: Sequence[lsp.CallHierarchyIncomingCall] | None, locator: Locator, encoding: Encoding
) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for call in result or ():
        caller = call.from_
        for rng in call.from_ranges or [caller.selection_range]:
            where = locator.location(caller.uri, rng, encoding)
            if where is not None:
                name = locator.scrub(caller.name)  # a module-level caller: its file
                calls.append({"name": name, "kind": kind_name(caller.kind), **where})
    return finish(calls)


def outgoing(
    result: Sequence[lsp.CallHierarchyOutgoingCall] | None,
    origin: lsp.CallHierarchyItem,
    locator: Locator,
    encoding: Encoding,
) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for call in result or ():
        callee = call.to
        where = locator.location(callee.uri, callee.selection_range, encoding)
        if where is None:
            continue
        sites = finish(locator.location(origin.uri, rng, encoding) for rng in call.from_ranges)
        calls.append(
            {
                "name": locator.scrub(callee.name),
                "kind": kind_name(callee.kind),
                **where,
                "call_sites": [
                    {"path": s["path"], "line": s["line"], "character": s["character"]}
                    for s in sites
                ],
            }
        )
    return finish(calls)
