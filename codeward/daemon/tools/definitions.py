"""The definition-style tools: where the symbol at a position is defined, its type's
definition, its implementations."""

from __future__ import annotations

from typing import Any

from codeward.daemon.intel.addressing import Resolved
from codeward.daemon.intel.locations import Location, Locator, finish, targets
from codeward.daemon.tools.positions import PositionArgs, locate, position_params, with_at
from codeward.daemon.tools.registry import ToolContext, tool


async def _targets_at(
    ctx: ToolContext, args: PositionArgs, method: str
) -> tuple[Resolved, list[Location], bool]:
    """The position `args` name, and the shaped, sorted, de-duplicated locations of the
    definition-style request `method` there (and whether the answer is partial)."""
    manager, at = await locate(ctx, args)
    params = position_params(method, at.line, at.character)
    answer = await manager.request(at.source.path, method, params)
    found = targets(answer.result)
    locator = Locator(manager)
    await locator.prepare(uri for uri, _ in found)
    locations = finish(locator.location(uri, rng, answer.encoding) for uri, rng in found)
    return at, locations, answer.partial


def _one_or_many(locations: list[Location], partial: bool, one: str, many: str) -> dict[str, Any]:
    result: dict[str, Any] = {"status": "found" if locations else "not_found"}
    if len(locations) == 1:
        result[one] = locations[0]
    elif locations:
        result[many] = locations
    result["count"] = len(locations)
    result["partial"] = partial
    return result


@tool(
    "go_to_definition",
    "Find where the symbol at a position is defined (function, class, variable, module, "
    "import). Use it to jump from a use to the source instead of searching by name; each "
    "location has a preview of its line. Outside the project, the standard library and "
    "installed packages show as indicators such as python:os.path or go:fmt.",
    PositionArgs,
    title="Go to definition",
)
async def go_to_definition(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    at, found, partial = await _targets_at(ctx, args, "textDocument/definition")
    return with_at(at, _one_or_many(found, partial, "definition", "definitions"))


@tool(
    "get_type_definition",
    "Find the definition of the type of the symbol at a position (the class of a variable, "
    "the struct of a field). Use it when you know a value and want to see its type's source.",
    PositionArgs,
    title="Go to type definition",
)
async def get_type_definition(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    at, found, partial = await _targets_at(ctx, args, "textDocument/typeDefinition")
    return with_at(at, _one_or_many(found, partial, "type_definition", "type_definitions"))


@tool(
    "find_implementations",
    "Find the implementations of the interface, abstract method or virtual method at a "
    "position: the concrete classes or overriding methods. Use it to go from an abstraction "
    "to the code that runs.",
    PositionArgs,
    title="Find implementations",
)
async def find_implementations(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    at, found, partial = await _targets_at(ctx, args, "textDocument/implementation")
    return with_at(
        at,
        {
            "status": "found" if found else "not_found",
            "implementations": found,
            "count": len(found),
            "partial": partial,
        },
    )
