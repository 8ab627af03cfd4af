"""The symbols tool: a file's outline (document scope) or a search by name across the
project (workspace scope), answered by the session's warm language servers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import trio
from lsprotocol import types as lsp

from codeward.daemon.intel.inputs import SourceFile, source_file
from codeward.daemon.intel.locations import Locator
from codeward.daemon.intel.outlines import OUTLINES
from codeward.daemon.intel.symbols import (
    Budget,
    Callables,
    DocumentSymbols,
    Outline,
    SymbolKind,
    best_first,
    document_symbols,
    workspace_symbols,
)
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import Answer, LanguageService
from codeward.daemon.lsp.types import Symbol as LspSymbol
from codeward.daemon.lsp.uris import path_to_uri
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ErrorKind, ToolError


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
        return await document_scope(manager, source, args.limit, outline)
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
    return await workspace_scope(manager, languages, files, args.query, args.limit, outline)


async def document_scope(
    manager: LanguageService, source: SourceFile, limit: int, outline: Outline
) -> dict[str, Any]:
    """get_symbols' answer in document scope: `source`'s outline."""
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


async def workspace_scope(
    manager: LanguageService,
    languages: list[str],
    files: Mapping[str, Sequence[Path]],
    query: str,
    limit: int,
    outline: Outline,
) -> dict[str, Any]:
    """get_symbols' answer in workspace scope: the symbols of `languages` matching `query`."""

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
    found: Iterator[tuple[LspSymbol, Encoding]] = ((i, a.encoding) for a, i in items)
    symbols = best_first(found, query, locator, outline.kinds)
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


def _workspace_found(answers: list[Answer]) -> list[tuple[Answer, list[LspSymbol]]]:
    """Each answer's symbols; a server whose answer is off the LSP spec has its error
    raised only when no other server's answer could be read."""
    found: list[tuple[Answer, list[LspSymbol]]] = []
    errors: list[ToolError] = []
    for answer in answers:
        try:
            found.append((answer, workspace_symbols(answer.result, answer.server)))
        except ToolError as exc:
            errors.append(exc)
    if errors and not found:
        raise errors[0]
    return found


class _Locals:
    """Which workspace symbols are parameters or locals of a function (hidden by default):
    asked of each file's document symbols, for symbols that have a container."""

    MAX_FILES = 50  # beyond, a contained variable is taken for a local without asking

    def __init__(self, manager: LanguageService) -> None:
        self.manager = manager
        self.trees: dict[str, Callables | None] = {}

    async def holds(self, symbol: dict[str, Any]) -> bool:
        if not symbol.get("container") or "line" not in symbol or symbol["kind"] in _OUTLINE:
            return False
        path: str = symbol["path"]
        if path not in self.trees:
            self.trees[path] = await self._tree(path) if len(self.trees) < self.MAX_FILES else None
        found = self.trees[path]
        if found is None:
            return symbol["kind"] in ("variable", "constant")
        return found.holds((symbol["line"], symbol["character"]))

    async def _tree(self, path: str) -> Callables | None:
        try:
            source = source_file(self.manager, path)
            tree, answer = await _outline_of(self.manager, source)
        except ToolError:
            return None
        return OUTLINES.callables(source.path, tree or [], answer)


def _document_params(method: str) -> Any:
    return lambda doc: shapes.document_params(method, doc.uri)


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
