"""The code-intelligence tools: hover, definition, references, implementations, type
definition, symbols and call hierarchy, answered by the session's warm language servers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

import msgspec
import trio

from codeward.daemon.intel import calls, hover
from codeward.daemon.intel.inputs import SourceFile, check_position, source_file
from codeward.daemon.intel.locations import Location, Locator, finish, targets
from codeward.daemon.intel.symbols import Budget, document_symbols, information, rank
from codeward.daemon.lsp.manager import Answer, DocumentContext, LspManager
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ErrorKind, ToolError, find_tool_error

Path_ = Annotated[
    str, msgspec.Meta(description="The file: relative to the project root, or absolute inside it.")
]
Line = Annotated[
    int,
    msgspec.Meta(
        description="1-based line number, as an editor shows it.",
        extra_json_schema={"minimum": 1},
    ),
]
Character = Annotated[
    int,
    msgspec.Meta(
        description="1-based column in characters (Unicode code points), as an editor shows it.",
        extra_json_schema={"minimum": 1},
    ),
]


class PositionArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Path_
    line: Line
    character: Character


class ReferencesArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Path_
    line: Line
    character: Character
    include_declaration: Annotated[
        bool, msgspec.Meta(description="Also list the symbol's declaration site(s).")
    ] = False


class SymbolsArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str | None,
        msgspec.Meta(
            description="The file (document scope, required); in workspace scope it picks the "
            "language to search."
        ),
    ] = None
    scope: Annotated[
        Literal["document", "workspace"],
        msgspec.Meta(description="`document`: the file's outline; `workspace`: search by name."),
    ] = "document"
    query: Annotated[
        str, msgspec.Meta(description="Workspace scope: the (partial) symbol name to look for.")
    ] = ""
    limit: Annotated[
        int,
        msgspec.Meta(
            description="The most symbols to return.",
            extra_json_schema={"minimum": 1, "maximum": 10000},
        ),
    ] = 200


class CallsArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Path_
    line: Line
    character: Character
    direction: Annotated[
        Literal["incoming", "outgoing"],
        msgspec.Meta(description="`incoming`: who calls it; `outgoing`: what it calls."),
    ] = "incoming"


# -- shared steps --------------------------------------------------------------------------


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


def _at(ctx: ToolContext, path: str, line: int, character: int) -> tuple[LspManager, SourceFile]:
    manager = ctx.session.lsp
    source = source_file(manager, path)
    check_position(source, line, character)
    return manager, source


def _position_params(line: int, character: int, **extra: Any) -> Any:
    def build(doc: DocumentContext) -> dict[str, Any]:
        return {
            "textDocument": doc.text_document,
            "position": doc.position(line, character),
            **extra,
        }

    return build


async def _targets(
    manager: LspManager, source: SourceFile, method: str, line: int, character: int
) -> tuple[list[Location], bool]:
    """The shaped, sorted, de-duplicated locations of a definition-style request."""
    answer = await manager.request(source.path, method, _position_params(line, character))
    found = targets(answer.result)
    locator = Locator(manager)
    await locator.prepare(uri for uri, _ in found)
    return finish(locator.location(uri, rng, answer.encoding) for uri, rng in found), answer.partial


def _one_or_many(locations: list[Location], partial: bool, one: str, many: str) -> dict[str, Any]:
    result: dict[str, Any] = {"status": "found" if locations else "not_found"}
    if len(locations) == 1:
        result[one] = locations[0]
    elif locations:
        result[many] = locations
    result["count"] = len(locations)
    result["partial"] = partial
    return result


# -- hover ---------------------------------------------------------------------------------


@tool(
    "get_hover_info",
    "Show what the symbol at a position is: its signature or type, its documentation and its "
    "module, as the language server's hover shows it. Use it to learn what a name means before "
    "reading its source; a position with nothing to show answers status not_found.",
    PositionArgs,
)
async def get_hover_info(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    answers: dict[str, Answer] = {}

    async def definition() -> None:
        with contextlib.suppress(ToolError):  # the module is then unknown
            answers["definition"] = await manager.request(
                source.path,
                "textDocument/definition",
                _position_params(args.line, args.character),
            )

    with _tool_errors():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(definition)
            answer: Answer = await manager.request(
                source.path, "textDocument/hover", _position_params(args.line, args.character)
            )
            if not isinstance(answer.result, dict):
                nursery.cancel_scope.cancel()
    result = answer.result if isinstance(answer.result, dict) else {}
    locator = Locator(manager)
    parsed = hover.parse(locator.scrub(hover.markdown_of(result.get("contents"))))
    if parsed is None:
        return {"status": "not_found", "partial": answer.partial}
    module = parsed.module
    if module is None and "definition" in answers:
        # The server's first definition, in its own order (the likeliest one).
        found = targets(answers["definition"].result)
        await locator.prepare(uri for uri, _ in found)
        places = [p for p in (locator.place(uri) for uri, _ in found) if p is not None]
        module = module_of(places[0][0], source.language) if places else None
    rng = result.get("range")
    span = None
    if isinstance(rng, dict):
        line, char, end_line, end_char = locator.span(source.path.as_uri(), rng, answer.encoding)
        span = {"line": line, "character": char, "end_line": end_line, "end_character": end_char}
    return {
        "status": "found",
        "signature": parsed.signature,
        "kind": parsed.kind,
        "type": parsed.type,
        "docs": parsed.docs,
        "module": module,
        "markdown": parsed.markdown,
        "range": span,
        "partial": answer.partial,
    }


def module_of(shown: str, language: str) -> str | None:
    """The module a shown definition path belongs to: `os.path`, `pkg.mod`, `fmt`, `dir/x.c`."""
    head, sep, rest = shown.partition(":")
    if sep and head in ("python", "go", "elixir", "erlang", "c", "cpp"):
        return rest
    path = PurePosixPath(shown)
    if language == "python" and path.suffix in (".py", ".pyi"):
        parts = [*path.parent.parts, path.stem]
        if parts[-1] == "__init__":
            parts.pop()
        for marker in ("site-packages", "dist-packages"):
            if marker in parts:
                parts = parts[len(parts) - parts[::-1].index(marker) :]
        return ".".join(parts) or None
    if language == "go":
        return path.parent.as_posix()
    return shown


# -- locations -----------------------------------------------------------------------------


@tool(
    "go_to_definition",
    "Find where the symbol at a position is defined (function, class, variable, module, "
    "import). Use it to jump from a use to the source instead of searching by name; each "
    "location has a preview of its line. Outside the project, the standard library and "
    "installed packages show as indicators such as python:os.path or go:fmt.",
    PositionArgs,
)
async def go_to_definition(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    found, partial = await _targets(
        manager, source, "textDocument/definition", args.line, args.character
    )
    return _one_or_many(found, partial, "definition", "definitions")


@tool(
    "get_type_definition",
    "Find the definition of the type of the symbol at a position (the class of a variable, "
    "the struct of a field). Use it when you know a value and want to see its type's source.",
    PositionArgs,
)
async def get_type_definition(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    found, partial = await _targets(
        manager, source, "textDocument/typeDefinition", args.line, args.character
    )
    return _one_or_many(found, partial, "type_definition", "type_definitions")


@tool(
    "find_implementations",
    "Find the implementations of the interface, abstract method or virtual method at a "
    "position: the concrete classes or overriding methods. Use it to go from an abstraction "
    "to the code that runs.",
    PositionArgs,
)
async def find_implementations(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    found, partial = await _targets(
        manager, source, "textDocument/implementation", args.line, args.character
    )
    return {
        "status": "found" if found else "not_found",
        "implementations": found,
        "count": len(found),
        "partial": partial,
    }


@tool(
    "find_references",
    "Find every use of the symbol at a position across the project, semantically (not a text "
    "search): before renaming or changing a function, to see who depends on it. The "
    "declaration itself is left out unless include_declaration is true.",
    ReferencesArgs,
)
async def find_references(ctx: ToolContext, args: ReferencesArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    declarations: list[Location] | None = None

    async def find_declarations() -> None:
        nonlocal declarations
        try:
            declarations, _ = await _targets(
                manager, source, "textDocument/definition", args.line, args.character
            )
        except ToolError:
            declarations = None

    with _tool_errors():
        async with trio.open_nursery() as nursery:
            if not args.include_declaration:
                nursery.start_soon(find_declarations)
            answer = await manager.request(
                source.path,
                "textDocument/references",
                _position_params(args.line, args.character, context={"includeDeclaration": True}),
                result_type=list[LspLocation] | None,
            )
    if not args.include_declaration and declarations is None:
        # No definitions to leave out: fall back on the server's own reading of the flag.
        answer = await manager.request(
            source.path,
            "textDocument/references",
            _position_params(args.line, args.character, context={"includeDeclaration": False}),
            result_type=list[LspLocation] | None,
        )
    items: list[LspLocation] = answer.result or []
    locator = Locator(manager)
    await locator.prepare({item.uri for item in items})
    found = finish(locator.location(item.uri, item.range, answer.encoding) for item in items)
    if declarations:
        found = [loc for loc in found if not any(_within(loc, d) for d in declarations)]
    return {
        "status": "found" if found else "not_found",
        "references": found,
        "count": len(found),
        "partial": answer.partial,
    }


def _within(loc: Location, declaration: Location) -> bool:
    """Whether `loc` starts inside the `declaration`'s (name) range."""
    if loc["path"] != declaration["path"]:
        return False
    start = (loc["line"], loc["character"])
    first = (declaration["line"], declaration["character"])
    last = (declaration["end_line"], declaration["end_character"])
    return start == first or first <= start < last


# -- symbols -------------------------------------------------------------------------------


@tool(
    "get_symbols",
    "List symbols. Document scope (give path): the file's outline as a tree of classes, "
    "functions, methods and variables with kinds and line ranges, to understand a file "
    "without reading it all. Workspace scope (give query): find definitions by name across "
    "the project, each with its path and container.",
    SymbolsArgs,
)
async def get_symbols(ctx: ToolContext, args: SymbolsArgs) -> dict[str, Any]:
    if not 1 <= args.limit <= 10000:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `limit` from 1 to 10000.")
    manager: LspManager = ctx.session.lsp
    if args.scope == "document":
        if args.path is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "Document scope needs `path`; give a file, or use scope workspace with a query.",
            )
        return await _document_symbols(manager, source_file(manager, args.path), args.limit)
    source = source_file(manager, args.path) if args.path is not None else None
    return await _workspace_symbols(manager, source, args.query, args.limit)


async def _document_symbols(manager: LspManager, source: SourceFile, limit: int) -> dict[str, Any]:
    answer = await manager.request(
        source.path,
        "textDocument/documentSymbol",
        lambda doc: {"textDocument": doc.text_document},
        wait_ready=False,
    )
    locator = Locator(manager)
    budget = Budget(limit)
    symbols = document_symbols(
        answer.result, source.path.as_uri(), locator, answer.encoding, budget
    )
    count = limit - budget.left
    return {
        "status": "found" if symbols else "not_found",
        "scope": "document",
        "path": source.shown,
        "symbols": symbols,
        "count": count,
        "truncated": budget.truncated,
        "partial": answer.partial,
    }


async def _workspace_symbols(
    manager: LspManager, source: SourceFile | None, query: str, limit: int
) -> dict[str, Any]:
    languages = [source.language] if source is not None else manager.project_languages()
    partial = not await _servers_idle(manager, languages)
    answers = (
        await manager.workspace_request("workspace/symbol", {"query": query}, languages=languages)
        if languages
        else []
    )
    locator = Locator(manager)
    items = [
        (answer, item)
        for answer in answers
        for item in (answer.result if isinstance(answer.result, list) else [])
        if isinstance(item, dict)
    ]
    await locator.prepare(
        item["location"]["uri"]
        for _, item in items
        if isinstance(item.get("location"), dict) and isinstance(item["location"].get("uri"), str)
    )
    shaped = [information(item, locator, answer.encoding) for answer, item in items]
    symbols = [s for s in shaped if s is not None and isinstance(s.get("name"), str)]
    symbols.sort(
        key=lambda s: (
            rank(query, s["name"]),
            s["path"],
            s.get("line", 0),
            s.get("character", 0),
            s["name"],
        )
    )
    unique: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for symbol in symbols:
        key = (symbol["name"], symbol["kind"], symbol["path"], symbol.get("line"))
        if key not in seen:
            seen.add(key)
            unique.append(symbol)
    return {
        "status": "found" if unique else "not_found",
        "scope": "workspace",
        "query": query,
        "symbols": unique[:limit],
        "count": min(len(unique), limit),
        "truncated": len(unique) > limit,
        "partial": partial,
    }


async def _servers_idle(manager: LspManager, languages: list[str]) -> bool:
    """Start the servers of `languages` and wait until none reports work in progress."""
    idle = True
    for language in languages:
        for name in manager.languages[language].servers:
            try:
                server = manager.server_for(name, language)
                await server.connection()
            except ToolError:
                continue
            idle = await server.wait_idle(manager.config.lsp.ready_timeout) and idle
    return idle


# -- call hierarchy ------------------------------------------------------------------------


@tool(
    "call_hierarchy",
    "List the callers (direction incoming) or the callees (direction outgoing) of the "
    "function at a position, one level deep, each with its location and a preview. Use it "
    "to trace how code is reached or what it depends on.",
    CallsArgs,
)
async def call_hierarchy(ctx: ToolContext, args: CallsArgs) -> dict[str, Any]:
    manager, source = _at(ctx, args.path, args.line, args.character)
    answer = await manager.request(
        source.path,
        "textDocument/prepareCallHierarchy",
        _position_params(args.line, args.character),
    )
    items = [
        item
        for item in (answer.result if isinstance(answer.result, list) else [])
        if isinstance(item, dict) and isinstance(item.get("uri"), str)
    ]
    if not items:
        return {
            "status": "not_found",
            "direction": args.direction,
            "calls": [],
            "count": 0,
            "partial": answer.partial,
        }
    server = manager.server_for(answer.server)
    method = f"callHierarchy/{args.direction}Calls"
    locator = Locator(manager)
    found: list[dict[str, Any]] = []
    for item in items:
        result = await server.request(method, {"item": item})
        uris = [item["uri"]]
        for call in result if isinstance(result, list) else []:
            party = (
                call.get("from" if args.direction == "incoming" else "to")
                if isinstance(call, dict)
                else None
            )
            if isinstance(party, dict) and isinstance(party.get("uri"), str):
                uris.append(party["uri"])
        await locator.prepare(uris)
        if args.direction == "incoming":
            found += calls.incoming(result, locator, answer.encoding)
        else:
            found += calls.outgoing(result, item, locator, answer.encoding)
    found = finish(found)
    target = items[0]
    where = (
        locator.location(
            target["uri"],
            target.get("selectionRange") or target.get("range") or {},
            answer.encoding,
        )
        if isinstance(target.get("selectionRange") or target.get("range"), dict)
        else None
    )
    return {
        "status": "found" if found else "not_found",
        "direction": args.direction,
        "item": {"name": target.get("name"), **(where or {})},
        "calls": found,
        "count": len(found),
        "partial": answer.partial,
    }
