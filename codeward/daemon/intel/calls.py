"""Call hierarchy answers as `calls` [{name, kind, path, line, character, preview}].

Names are free text from the server: paths in them are shown as the tools show paths.

Incoming: one entry per call site, at the call, named after the calling function.
Outgoing: one entry per callee, at its definition, with the `call_sites` in the asked item.
"""

from __future__ import annotations

from typing import Any

from codeward.daemon.intel.locations import Locator, finish
from codeward.daemon.intel.symbols import kind_name
from codeward.daemon.lsp.positions import Encoding


def _item(value: Any) -> dict[str, Any] | None:
    if (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("uri"), str)
        and isinstance(value.get("selectionRange") or value.get("range"), dict)
    ):
        return value
    return None


def incoming(result: Any, locator: Locator, encoding: Encoding) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for call in result if isinstance(result, list) else []:
        caller = _item(call.get("from")) if isinstance(call, dict) else None
        if caller is None:
            continue
        ranges = [r for r in call.get("fromRanges") or [] if isinstance(r, dict)]
        for rng in ranges or [caller.get("selectionRange") or caller["range"]]:
            where = locator.location(caller["uri"], rng, encoding)
            if where is not None:
                name = locator.scrub(caller["name"])  # a module-level caller: its file
                calls.append({"name": name, "kind": kind_name(caller.get("kind")), **where})
    return finish(calls)


def outgoing(
    result: Any, origin: dict[str, Any], locator: Locator, encoding: Encoding
) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for call in result if isinstance(result, list) else []:
        callee = _item(call.get("to")) if isinstance(call, dict) else None
        if callee is None:
            continue
        where = locator.location(
            callee["uri"], callee.get("selectionRange") or callee["range"], encoding
        )
        if where is None:
            continue
        sites = finish(
            locator.location(origin["uri"], rng, encoding)
            for rng in call.get("fromRanges") or []
            if isinstance(rng, dict)
        )
        calls.append(
            {
                "name": locator.scrub(callee["name"]),
                "kind": kind_name(callee.get("kind")),
                **where,
                "call_sites": [
                    {"path": s["path"], "line": s["line"], "character": s["character"]}
                    for s in sites
                ],
            }
        )
    return finish(calls)
