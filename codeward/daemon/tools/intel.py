"""The code-intelligence tools: hover, definition, references, implementations, type
definition, symbols and call hierarchy, answered by the session's warm language servers."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import msgspec
import trio
from lsprotocol import types as lsp

from codeward.daemon.caches import keyed_by_paths
from codeward.daemon.intel import calls, hover
from codeward.daemon.intel.addressing import SNAP, Address, Resolved, resolve
from codeward.daemon.intel.inputs import SourceFile, source_file
from codeward.daemon.intel.locations import Location, Locator, bounds, finish, targets
from codeward.daemon.intel.outlines import OUTLINES
from codeward.daemon.intel.symbols import (
    Budget,
    DocumentSymbols,
    Outline,
    SymbolKind,
    at_name,
    document_symbols,
    information,
    inside_callable,
    rank,
)
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import Answer, DocumentContext, LanguageService
from codeward.daemon.lsp.types import Location as LspLocation
from codeward.daemon.lsp.uris import path_to_uri, real_path, uri_to_path
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


OptionalLine = Annotated[
    int | None,
    msgspec.Meta(
        description="1-based line number, as an editor shows it; with `character` or `name`.",
        extra_json_schema={"minimum": 1},
    ),
]
OptionalCharacter = Annotated[
    int | None,
    msgspec.Meta(
        description="1-based column in characters (Unicode code points), as an editor shows "
        f"it. On no identifier (a space, a keyword such as `def`), the nearest identifier "
        f"within {SNAP} characters is taken (the answer's `at` names it); farther, an error "
        "names the nearest ones.",
        extra_json_schema={"minimum": 1},
    ),
]
Name = Annotated[
    str | None,
    msgspec.Meta(
        description="The identifier on `line` to ask about, instead of counting characters "
        "(with `character`: its occurrence nearest it)."
    ),
]
Symbol = Annotated[
    str | None,
    msgspec.Meta(
        description="A name path instead of a position: `Class.method`, a top-level "
        "`main`. With `path`, found in that file's symbols; without, across the project "
        "(several matches: an error listing them)."
    ),
]
OptionalPath = Annotated[
    str | None,
    msgspec.Meta(
        description="The file: relative to the project root, or absolute inside it "
        "(optional with `symbol`)."
    ),
]


class PositionArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Where a position tool asks: `path` + `line` + `character` or `name`, or `symbol`."""

    path: OptionalPath = None
    line: OptionalLine = None
    character: OptionalCharacter = None
    name: Name = None
    symbol: Symbol = None

    @property
    def address(self) -> Address:
        return Address(self.path, self.line, self.character, self.name, self.symbol)


class ReferencesArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
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
    all: Annotated[
        bool,
        msgspec.Meta(
            description="Every symbol, the parameters and local variables of functions too; "
            "by default only the outline: classes, functions, methods, module and class names."
        ),
    ] = False
    kinds: Annotated[
        list[SymbolKind] | None,
        msgspec.Meta(
            description="Only symbols of these kinds (document scope: with the containers on "
            'the way to them), e.g. ["class", "function", "method"].'
        ),
    ] = None
    depth: Annotated[
        int | None,
        msgspec.Meta(
            description="Document scope: how many levels of the tree to show (1: top level).",
            extra_json_schema={"minimum": 1},
        ),
    ] = None
    language: Annotated[
        str | None,
        msgspec.Meta(
            description="Workspace scope: search this language's servers only (e.g. `python`; "
            "by default the languages whose servers run and the project's main languages, "
            "configuration files' never)."
        ),
    ] = None


class CallsArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
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


async def locate(ctx: ToolContext, args: PositionArgs) -> tuple[LanguageService, Resolved]:
    """The position the arguments name (see `intel.addressing`), on the session's servers."""
    manager: LanguageService = ctx.session.lsp

    async def document(source: SourceFile) -> list[dict[str, Any]]:
        found = await _document_symbols(manager, source, 10000, Outline(all=True))
        return found["symbols"]

    async def workspace(query: str) -> list[dict[str, Any]]:
        files, _ = await trio.to_thread.run_sync(manager.project_files)
        languages = manager.workspace_languages(files)
        found = await _workspace_symbols(manager, languages, files, query, 1000, Outline())
        return found["symbols"]

    opened = functools.partial(source_file, manager)
    return manager, await resolve(args.address, opened, document, workspace)


def with_at(at: Resolved, result: dict[str, Any]) -> dict[str, Any]:
    """A position tool's result, with `at` (what it answered for) when that is not plainly
    the identifier at the position given."""
    if at.by != "position":
        result["at"] = at.public()
    return result


def _position_params(method: str, line: int, character: int, **extra: Any) -> Any:
    """The params builder of a request at a position, as the method's lsprotocol type."""

    def build(doc: DocumentContext) -> Any:
        at = doc.position(line, character)
        if not extra:
            return _at_position(method, doc.uri, at["line"], at["character"])
        position = lsp.Position(**at)
        return shapes.document_params(method, doc.uri, position=position, **extra)

    return build


@keyed_by_paths
@functools.lru_cache(maxsize=1024)
def _at_position(method: str, uri: str, line: int, character: int) -> Any:
    """The params of `method` at a server position (the same for the same place, so
    remembered; the frame encoder only reads them)."""
    position = lsp.Position(line=line, character=character)
    return shapes.document_params(method, uri, position=position)


def _document_params(method: str) -> Any:
    return lambda doc: shapes.document_params(method, doc.uri)


async def _targets(
    manager: LanguageService, source: SourceFile, method: str, line: int, character: int
) -> tuple[list[Location], bool]:
    """The shaped, sorted, de-duplicated locations of a definition-style request."""
    answer = await manager.request(source.path, method, _position_params(method, line, character))
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
    title="Hover info",
)
async def get_hover_info(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    locator = Locator(manager)
    read: list[tuple[Any, lsp.Hover | None, hover.HoverText | None]] = []

    def enough(result: Any) -> bool:
        """Whether the hover shows nothing or names its module: no definition is needed."""
        try:
            hovered = shapes.answer(result, "", "textDocument/hover")
        except ToolError:
            return False  # off the spec: raised below, naming the server
        parsed = _hover_text(hovered, locator)
        read.append((result, hovered, parsed))
        return parsed is None or parsed.module is not None

    # The definition names the module when the hover does not: both are sent at once (the
    # server answers the second right after the first), so it costs no round trip; it is
    # not awaited (`$/cancelRequest`) when the hover shows nothing or names its module.
    answer, definition = await manager.request_together(
        source.path,
        [
            ("textDocument/hover", _position_params("textDocument/hover", line, character), Any),
            (
                "textDocument/definition",
                _position_params("textDocument/definition", line, character),
                Any,
            ),
        ],
        enough=enough,
    )
    assert isinstance(answer, Answer)  # the first request's error is raised
    if read and read[-1][0] is answer.result:  # (read by `enough` already)
        _, hovered, parsed = read[-1]
    else:
        hovered = shapes.answer(answer.result, answer.server, "textDocument/hover")
        parsed = _hover_text(hovered, locator)
    if parsed is None:
        return with_at(at, {"status": "not_found", "partial": answer.partial})
    module = parsed.module
    if module is None and isinstance(definition, Answer):  # a failed one: module unknown
        # The server's first definition, in its own order (the likeliest one).
        found = targets(definition.result)
        await locator.prepare(uri for uri, _ in found)
        places = [p for p in (locator.place(uri) for uri, _ in found) if p is not None]
        module = module_of(places[0][0], source.language, manager.root) if places else None
    rng = hovered.range if hovered is not None else None
    span = None
    if rng is not None:
        first, char, end_line, end_char = locator.span(
            path_to_uri(source.path), rng, answer.encoding
        )
        span = {"line": first, "character": char, "end_line": end_line, "end_character": end_char}
    return with_at(
        at,
        {
            "status": "found",
            "signature": parsed.signature,
            "kind": parsed.kind,
            "type": parsed.type,
            "docs": parsed.docs,
            "module": module,
            "markdown": parsed.markdown,
            "range": span,
            "partial": answer.partial,
        },
    )


def _hover_text(hovered: lsp.Hover | None, locator: Locator) -> hover.HoverText | None:
    """The parts of a hover (its paths shown as the tools show them), None when empty."""
    markdown = hover.markdown_of(hovered.contents) if hovered is not None else ""
    return hover.parse(locator.scrub(markdown))


def module_of(shown: str, language: str, root: Path | None = None) -> str | None:
    """The module a shown definition path belongs to: `os.path`, `pkg.mod`, `fmt`, `dir/x.c`.

    A Python file of the project is named by its package chain (the folders above it that
    hold an `__init__.py`), as Python imports it: `src/click/core.py` is `click.core`.
    """
    head, sep, rest = shown.partition(":")
    if sep and head in ("python", "go", "elixir", "erlang", "c", "cpp"):
        return rest
    if language == "python" and shown.endswith((".py", ".pyi")):
        # A shown path is plain (relative, no `.` or empty parts): split as a string.
        *folders, name = shown.split("/")
        stem = name.rsplit(".", 1)[0]
        if stem and all(folders):
            parts = [*folders, stem]
            for marker in ("site-packages", "dist-packages"):
                if marker in parts:
                    parts = parts[len(parts) - parts[::-1].index(marker) :]
                    return ".".join(p for p in parts if p != "__init__") or None
            if root is None:
                return ".".join(p for p in parts if p != "__init__") or None
            names = [] if stem == "__init__" else [stem]
            while folders and _is_package(root.joinpath(*folders)):
                names.insert(0, folders.pop())
            return ".".join(names) or None
    if language == "go":
        return PurePosixPath(shown).parent.as_posix()
    return shown


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() or (folder / "__init__.pyi").is_file()


# -- locations -----------------------------------------------------------------------------


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
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    found, partial = await _targets(manager, source, "textDocument/definition", line, character)
    return with_at(at, _one_or_many(found, partial, "definition", "definitions"))


@tool(
    "get_type_definition",
    "Find the definition of the type of the symbol at a position (the class of a variable, "
    "the struct of a field). Use it when you know a value and want to see its type's source.",
    PositionArgs,
    title="Go to type definition",
)
async def get_type_definition(ctx: ToolContext, args: PositionArgs) -> dict[str, Any]:
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    found, partial = await _targets(manager, source, "textDocument/typeDefinition", line, character)
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
    manager, at = await locate(ctx, args)
    source, line, character = at.source, at.line, at.character
    found, partial = await _targets(manager, source, "textDocument/implementation", line, character)
    return with_at(
        at,
        {
            "status": "found" if found else "not_found",
            "implementations": found,
            "count": len(found),
            "partial": partial,
        },
    )


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
                await manager.request(
                    source.path, method, _position_params(method, line, character)
                )
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
    if declarations:
        sites = DeclarationSites(manager, declarations)
        items = [item for item in items if not sites.holds(item, answer.encoding)]
    locator = Locator(manager)
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
    return _position_params("textDocument/references", line, character, context=context)


class DeclarationSites:
    """The definition and declaration sites of a symbol (a stub's `.pyi` declaration and the
    `.py` definition alike), each in its own real file: a reference is one of them when it
    starts inside one's name range in the same file, never in another file that happens to
    show under the same indicator."""

    def __init__(self, manager: LanguageService, answers: list[Answer]) -> None:
        self.manager = manager
        self._files: dict[str, str] = {}
        self.sites: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
        for answer in answers:
            for uri, rng in targets(answer.result):
                start, end = bounds(rng)
                self.sites.setdefault(self.file(uri), []).append(
                    (answer.point(uri, start), answer.point(uri, end))
                )

    def file(self, uri: str) -> str:
        """The real path of `uri` (through symlinks), remembered."""
        real = self._files.get(uri)
        if real is None:
            path = uri_to_path(uri)
            real = self._files[uri] = real_path(path) if path is not None else uri
        return real

    def holds(self, item: LspLocation, encoding: Encoding) -> bool:
        spans = self.sites.get(self.file(item.uri))
        if not spans:
            return False
        start = self.manager.to_client(item.uri, item.range.start, encoding)
        return any(start == first or first <= start < last for first, last in spans)


# -- symbols -------------------------------------------------------------------------------


@tool(
    "get_symbols",
    "List symbols. Document scope (give path): the file's outline as a tree of classes, "
    "functions, methods and module or class names with kinds and line ranges, to understand "
    "a file without reading it all. Workspace scope (give query): find definitions by name "
    "across the project, each with its path and container. Parameters and local variables "
    "appear only with all: true; kinds and depth narrow the answer. The outline's text puts "
    "each run of siblings of one kind on a line, children one space deeper: `fn@9 area:5 "
    "size:8` is two functions whose names start at character 9 of lines 5 and 8 (the "
    "position the other tools take); `name:line:char` where the characters differ.",
    SymbolsArgs,
    title="List symbols",
)
async def get_symbols(ctx: ToolContext, args: SymbolsArgs) -> dict[str, Any]:
    if not 1 <= args.limit <= 10000:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `limit` from 1 to 10000.")
    if args.depth is not None and args.depth < 1:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `depth` as 1 (top level) or more.")
    outline = Outline(
        all=args.all,
        kinds=frozenset(args.kinds) if args.kinds is not None else None,
        depth=args.depth,
    )
    manager: LanguageService = ctx.session.lsp
    if args.scope == "document":
        if args.path is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "Document scope needs `path`; give a file, or use scope workspace with a query.",
            )
        if args.language is not None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "`language` is for workspace scope; a document's language is its file's.",
            )
        source = source_file(manager, args.path)
        return await _document_symbols(manager, source, args.limit, outline)
    source = source_file(manager, args.path) if args.path is not None else None
    files, _ = await trio.to_thread.run_sync(manager.project_files)
    if args.language is not None:
        known = manager.configured_languages()
        if args.language not in known:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"No language named {args.language!r}; give one of: {', '.join(known)}.",
            )
        if source is not None and source.language != args.language:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"`path` is a {source.language} file, not {args.language}; give one of them.",
            )
        languages = [args.language]
    elif source is not None:
        languages = [source.language]
    else:
        languages = manager.workspace_languages(files)
    return await _workspace_symbols(manager, languages, files, args.query, args.limit, outline)


async def _document_symbols(
    manager: LanguageService, source: SourceFile, limit: int, outline: Outline
) -> dict[str, Any]:
    tree, answer = await _outline_of(manager, source)
    locator = Locator(manager)
    budget = Budget(limit)
    symbols = document_symbols(
        outline.select(tree), path_to_uri(source.path), locator, answer.encoding, budget
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
    manager: LanguageService,
    languages: list[str],
    files: Mapping[str, Sequence[Path]],
    query: str,
    limit: int,
    outline: Outline,
) -> dict[str, Any]:
    async def ask() -> list[Answer]:
        if not languages:
            return []
        params = shapes.unstructure(lsp.WorkspaceSymbolParams(query=query))
        return await manager.workspace_request("workspace/symbol", params, languages=languages)

    answers = await ask()  # a loaded server answers at once, whatever else it is doing
    partial = False
    if not _found_any(answers):
        # nothing: maybe a server that has not loaded its workspace yet; wait for that,
        # asking again meanwhile (as a user would): the first symbols end the wait
        servers = [a.server for a in answers]
        loaded: list[bool] = []
        async with trio.open_nursery() as nursery:

            async def settle() -> None:
                loaded.append(await _workspace_loaded(manager, languages, files, servers))
                nursery.cancel_scope.cancel()

            async def again() -> None:
                nonlocal answers
                delay = RETRY_FIRST
                while True:
                    await trio.sleep(delay)
                    try:
                        found = await ask()
                    except ToolError:
                        return  # the wait for the workspace (then one more ask) decides
                    if _found_any(found):
                        answers = found
                        nursery.cancel_scope.cancel()
                    delay = min(delay * 2, RETRY_MAX)

            nursery.start_soon(settle)
            nursery.start_soon(again)
        if loaded:  # the workspace loaded (or the settle timeout passed) with nothing yet
            partial = not loaded[0]
            answers = await ask()
    # an index still loading (not ready: its work-done progress, say) may have answered
    # with some files only
    partial = partial or any(a.partial or manager.indexing(a.server) for a in answers)
    locator = Locator(manager)
    items = [(answer, item) for answer, found in _workspace_found(answers) for item in found]
    await locator.prepare(item.location.uri for _, item in items)
    shaped = [
        (information(item, locator, answer.encoding), item.location.uri) for answer, item in items
    ]
    symbols = [s for s, uri in shaped if s is not None and at_name(locator, uri, s)]
    if outline.kinds is not None:
        symbols = [s for s in symbols if s["kind"] in outline.kinds]
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
    locals_ = _Locals(manager)
    for symbol in symbols:
        key = (symbol["name"], symbol["kind"], symbol["path"], symbol.get("line"))
        if key in seen:
            continue
        seen.add(key)
        if not outline.all and await locals_.holds(symbol):
            continue
        unique.append(symbol)
        if len(unique) > limit:
            break
    return {
        "status": "found" if unique else "not_found",
        "scope": "workspace",
        "query": query,
        "languages": languages,
        "symbols": unique[:limit],
        "count": min(len(unique), limit),
        "truncated": len(unique) > limit,
        "partial": partial,
    }


def _found_any(answers: list[Answer]) -> bool:
    return any(isinstance(a.result, list) and a.result for a in answers)


def _workspace_found(
    answers: list[Answer],
) -> list[tuple[Answer, Sequence[lsp.SymbolInformation] | Sequence[lsp.WorkspaceSymbol]]]:
    """Each answer's symbols; a server whose answer is off the LSP spec has its error
    raised only when no other server's answer could be read."""
    found: list[tuple[Answer, Any]] = []
    errors: list[ToolError] = []
    for answer in answers:
        try:
            found.append((answer, shapes.answer(answer.result, answer.server, "workspace/symbol")))
        except ToolError as exc:
            errors.append(exc)
    if errors and not found:
        raise errors[0]
    return [(answer, symbols or []) for answer, symbols in found]


class _Locals:
    """Which workspace symbols are parameters or locals of a function (hidden by default):
    asked of each file's document symbols, for symbols that have a container."""

    MAX_FILES = 50  # beyond, a contained variable is taken for a local without asking

    def __init__(self, manager: LanguageService) -> None:
        self.manager = manager
        self.trees: dict[str, tuple[DocumentSymbols, Answer] | None] = {}

    async def holds(self, symbol: dict[str, Any]) -> bool:
        if not symbol.get("container") or "line" not in symbol or symbol["kind"] in _OUTLINE:
            return False
        path: str = symbol["path"]
        if path not in self.trees:
            self.trees[path] = await self._tree(path) if len(self.trees) < self.MAX_FILES else None
        found = self.trees[path]
        if found is None:
            return symbol["kind"] in ("variable", "constant")
        tree, answer = found
        uri = (self.manager.root / path).as_uri()
        return inside_callable(
            (symbol["line"], symbol["character"]), tree, lambda p: answer.point(uri, p)
        )

    async def _tree(self, path: str) -> tuple[DocumentSymbols, Answer] | None:
        try:
            tree, answer = await _outline_of(self.manager, source_file(self.manager, path))
        except ToolError:
            return None
        return tree or [], answer


async def _outline_of(
    manager: LanguageService, source: SourceFile
) -> tuple[DocumentSymbols | None, Answer]:
    """The server's symbol tree of `source`, asked without waiting for its analysis (a
    parse is enough); an empty tree is asked again once the server has analysed the file:
    bash-language-server answers `[]` for a file opened before it has read its settings.
    A tree of the same text is used again (`outlines`)."""
    kept = OUTLINES.get(manager, source.path)
    if kept is not None:
        return kept
    params = _document_params("textDocument/documentSymbol")
    answer = await manager.request(
        source.path, "textDocument/documentSymbol", params, wait_ready=False
    )
    tree = shapes.answer(answer.result, answer.server, "textDocument/documentSymbol")
    if not tree:
        answer = await manager.request(source.path, "textDocument/documentSymbol", params)
        tree = shapes.answer(answer.result, answer.server, "textDocument/documentSymbol")
    if tree and not answer.partial:
        OUTLINES.put(manager, source.path, tree, answer)
    return tree, answer


# A workspace still loading is asked again after these many seconds, doubling up to the most
RETRY_FIRST, RETRY_MAX = 0.05, 0.2
_OUTLINE = frozenset({"class", "interface", "struct", "enum", "module", "namespace", "package"})


async def _workspace_loaded(
    manager: LanguageService,
    languages: list[str],
    files: Mapping[str, Sequence[Path]],
    servers: Sequence[str],
) -> bool:
    """Whether `servers` (those that answered) have loaded their workspace, which is what
    `workspace/symbol` needs (basedpyright answers it empty until then): per language, one
    of its files analysed by them, not the analysis of every file. False when that did not
    happen within the settle timeout."""
    loaded = True
    for language in languages:
        paths = sorted(files.get(language, ()))
        if not paths:
            continue
        try:
            answer = await manager.diagnostics(paths[0], servers)
        except ToolError:  # a server missing or failing: workspace_request says so
            continue
        loaded = loaded and not answer.partial
    return loaded


# -- call hierarchy ------------------------------------------------------------------------


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
    answer = await manager.request(source.path, prepare, _position_params(prepare, line, character))
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
