"""Where a position tool asks: its arguments (`path` + `line` + `character` or `name`, or
`symbol`), resolved on the session's warm language servers, and the params of a request
at the position."""

from __future__ import annotations

import functools
from typing import Annotated, Any

import msgspec
import trio
from lsprotocol import types as lsp

from codeward.daemon.caches import keyed_by_paths
from codeward.daemon.intel.addressing import SNAP, Address, Resolved, resolve
from codeward.daemon.intel.inputs import SourceFile, source_file
from codeward.daemon.intel.symbols import Outline
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import DocumentContext, LanguageService
from codeward.daemon.tools.registry import ToolContext
from codeward.daemon.tools.symbols import document_scope, workspace_scope

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


async def locate(ctx: ToolContext, args: PositionArgs) -> tuple[LanguageService, Resolved]:
    """The position the arguments name (see `intel.addressing`), on the session's servers."""
    manager: LanguageService = ctx.session.lsp

    async def document(source: SourceFile) -> list[dict[str, Any]]:
        found = await document_scope(manager, source, 10000, Outline(all=True))
        return found["symbols"]

    async def workspace(query: str) -> list[dict[str, Any]]:
        files, _ = await trio.to_thread.run_sync(manager.project_files)
        languages = manager.workspace_languages(files)
        found = await workspace_scope(manager, languages, files, query, 1000, Outline())
        return found["symbols"]

    opened = functools.partial(source_file, manager)
    return manager, await resolve(args.address, opened, document, workspace)


def with_at(at: Resolved, result: dict[str, Any]) -> dict[str, Any]:
    """A position tool's result, with `at` (what it answered for) when that is not plainly
    the identifier at the position given."""
    if at.by != "position":
        result["at"] = at.public()
    return result


def position_params(method: str, line: int, character: int, **extra: Any) -> Any:
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
