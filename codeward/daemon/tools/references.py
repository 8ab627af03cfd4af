"""The references tool: every use of the symbol at a position across the project, its
declaration sites left out unless asked for."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import trio
from lsprotocol import types as lsp

from codeward.daemon.intel.locations import Locator, bounds, targets
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import Answer, LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.tools.positions import PositionArgs, locate, position_params, with_at
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ToolError, find_tool_error


class ReferencesArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
    include_declaration: Annotated[
        bool, msgspec.Meta(description="Also list the symbol's declaration site(s).")
    ] = False


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Let a `ToolError` out of a nursery as itself, not wrapped in an exception group."""
    try:
        yield
    except ExceptionGroup as group:
        error = find_tool_error(group)
        if error is None:
            raise
        raise error from None


@tool(
    "find_references",
    "Find every use of the symbol at a position across the project, semantically (not a text "
    "search): before renaming or changing a function, to see who depends on it. The "
    "declaration itself is left out unless include_declaration is true.",
    ReferencesArgs,
    title="Find references",
)
async def find_references(ctx: ToolContext, args: ReferencesArgs) -> dict[str, Any]:
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    declarations: list[Answer] = []

    async def declared(method: str) -> None:
        with contextlib.suppress(ToolError):  # a server without it: the other one counts
            declarations.append(
                await manager.request(source.path, method, position_params(method, line, character))
            )

    references = _references_params(line, character, include_declaration=True)
    if args.include_declaration:  # nothing beside it: no nursery (its exit is a checkpoint)
        answer = await manager.request(
            source.path, "textDocument/references", references, result_type=list[LspLocation] | None
        )
    else:
        with _tool_errors():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(declared, "textDocument/definition")
                nursery.start_soon(declared, "textDocument/declaration")
                answer = await manager.request(
                    source.path,
                    "textDocument/references",
                    references,
                    result_type=list[LspLocation] | None,
                )
    if not args.include_declaration and not declarations:
        # No definitions to leave out: fall back on the server's own reading of the flag.
        answer = await manager.request(
            source.path,
            "textDocument/references",
            _references_params(line, character, include_declaration=False),
            result_type=list[LspLocation] | None,
        )
    items: list[LspLocation] = answer.result or []
    locator = Locator(manager)
    if declarations:
        sites = DeclarationSites(manager, declarations, locator)
        items = [item for item in items if not sites.holds(item, answer.encoding)]
    await locator.prepare({item.uri for item in items})
    found = locator.locations(items, answer.encoding)
    return with_at(
        at,
        {
            "status": "found" if found else "not_found",
            "references": found,
            "count": len(found),
            "partial": answer.partial,
        },
    )


def _references_params(line: int, character: int, *, include_declaration: bool) -> Any:
    context = lsp.ReferenceContext(include_declaration=include_declaration)
    return position_params("textDocument/references", line, character, context=context)


class DeclarationSites:
    """The definition and declaration sites of a symbol (a stub's `.pyi` declaration and the
    `.py` definition alike), each in its own real file: a reference is one of them when it
    starts inside one's name range in the same file, never in another file that happens to
    show under the same indicator."""

    def __init__(self, manager: LanguageService, answers: list[Answer], locator: Locator) -> None:
        self.manager = manager
        self.locator = locator
        self.sites: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
        self._uris: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}  # by URI
        for answer in answers:
            for uri, rng in targets(answer.result):
                start, end = bounds(rng)
                self.sites.setdefault(self.file(uri), []).append(
                    (answer.point(uri, start), answer.point(uri, end))
                )

    def file(self, uri: str) -> str:
        """The real path of `uri` (through symlinks), remembered."""
        return self.locator.real(uri) or uri

    def holds(self, item: LspLocation, encoding: Encoding) -> bool:
        spans = self._uris.get(item.uri)
        if spans is None:  # asked of thousands of references in a few hundred files
            spans = self._uris[item.uri] = self.sites.get(self.file(item.uri), [])
        if not spans:
            return False
        start = self.manager.to_client(item.uri, item.range.start, encoding)
        return any(start == first or first <= start < last for first, last in spans)
