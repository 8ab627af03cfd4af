"""The hover tool: what the symbol at a position is (signature, docs, module), from the
server's hover and, when that names no module, its definition."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.intel import hover
from codeward.daemon.intel.locations import Locator, targets
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.uris import path_to_uri
from codeward.daemon.tools.positions import PositionArgs, locate, position_params, with_at
from codeward.daemon.tools.registry import ToolContext, tool
from codeward.protocol.errors import ToolError


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
            ("textDocument/hover", position_params("textDocument/hover", line, character), Any),
            (
                "textDocument/definition",
                position_params("textDocument/definition", line, character),
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
