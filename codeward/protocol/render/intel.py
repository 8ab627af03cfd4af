"""The code-intelligence results: hover, the locations of the position tools, symbols,
call and type hierarchies, signatures."""

from __future__ import annotations

import html
import re
from typing import Any

from codeward.protocol.render.locations import location, location_line, locations


def _list(result: dict[str, Any], plural: str, singular: str | None = None) -> list[Any]:
    """The list under `plural`, else the one item under `singular`, else []."""
    many = result.get(plural)
    if isinstance(many, list):
        return many
    one = result.get(singular) if singular else None
    return [one] if isinstance(one, dict) else []


def hover(result: dict[str, Any]) -> list[str]:
    """The signature, then the docs as plain text (see `plain`)."""
    signature = result.get("signature") or result.get("type")
    docs = result.get("docs")
    parts = [str(signature).strip()] if signature else []
    if docs:
        parts.append(plain(str(docs)).strip())
    if not parts and result.get("markdown"):
        parts = [plain(str(result["markdown"])).strip()]
    return "\n\n".join(parts).splitlines()


# A markdown backslash escape: `\_`, `\*`, `\[`... (CommonMark's escapable punctuation).
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_FENCE = re.compile(r"^\s*(```|~~~)")


def plain(markdown: str) -> str:
    r"""Markdown for a model to read: HTML entities decoded (`&nbsp;` a space, `&lt;` `<`)
    and backslash escapes dropped (`\_` -> `_`), outside code blocks and inline code,
    which keep their text as written."""
    out: list[str] = []
    fenced = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        pieces = line.split("`")
        for i in range(0, len(pieces), 2):  # the even pieces are outside inline code
            text = html.unescape(_ESCAPE.sub(r"\1", pieces[i]))
            pieces[i] = text.replace("\xa0", " ")
        out.append("`".join(pieces))
    return "\n".join(out)


def definition(result: dict[str, Any]) -> list[str]:
    return locations(_list(result, "definitions", "definition"))


def references(result: dict[str, Any]) -> list[str]:
    return locations(_list(result, "references"))


def implementations(result: dict[str, Any]) -> list[str]:
    return locations(_list(result, "implementations"))


def type_definition(result: dict[str, Any]) -> list[str]:
    return locations(_list(result, "type_definitions", "type_definition"))


def symbol_text(symbol: dict[str, Any], indent: int) -> str:
    """`kind name (in container): detail`, indented by `indent` levels."""
    kind = symbol.get("kind")
    name = str(symbol.get("name", "?"))
    text = "  " * indent + (f"{kind} {name}" if kind else name)
    container = symbol.get("container") or symbol.get("container_name")
    if container:
        text += f" (in {container})"
    detail = symbol.get("detail")
    if detail:
        text += f": {detail}"
    return text


def symbols(result: dict[str, Any], path: str | None = None) -> list[str]:
    """Document symbols as an indented tree, or workspace matches: `path:line:col: kind name`."""
    lines: list[str] = []

    def walk(items: Any, indent: int) -> None:
        for symbol in items if isinstance(items, list) else []:
            if isinstance(symbol, dict):
                lines.append(f"{location(symbol, path)}: {symbol_text(symbol, indent)}")
                walk(symbol.get("children"), indent + 1)

    walk(result.get("symbols"), 0)
    return lines


def calls(result: dict[str, Any]) -> list[str]:
    """`path:line:col: name: preview` for each caller or callee."""
    lines = []
    for call in result.get("calls") or []:
        if isinstance(call, dict):
            name = str(call.get("name", "?"))
            preview = call.get("preview")
            lines.append(location_line(call, f"{name}: {preview}" if preview else name))
    return lines


def types(result: dict[str, Any]) -> list[str]:
    """`path:line:col: kind name: preview` for each supertype or subtype."""
    lines = []
    for item in result.get("types") or []:
        if isinstance(item, dict):
            name = f"{item.get('kind') or 'type'} {item.get('name', '?')}"
            preview = item.get("preview")
            lines.append(location_line(item, f"{name}: {preview}" if preview else name))
    return lines


def signatures(result: dict[str, Any]) -> list[str]:
    """Each signature on a line (`>` before the active one), the active parameter named,
    then each signature's documentation."""
    lines: list[str] = []
    active = result.get("active_signature")
    parameter = result.get("active_parameter")
    for n, signature in enumerate(result.get("signatures") or []):
        if not isinstance(signature, dict):
            continue
        mark = "> " if n == active and len(result.get("signatures") or []) > 1 else ""
        lines.append(f"{mark}{signature.get('label', '?')}")
        params = signature.get("parameters") or []
        if n == active and isinstance(parameter, int) and 0 <= parameter < len(params):
            current = params[parameter]
            if isinstance(current, dict):
                docs = str(current.get("docs") or "")
                lines.append(f"  at parameter {parameter + 1}: {current.get('label', '?')}"
                             + (f": {docs}" if docs else ""))  # fmt: skip
        docs = str(signature.get("docs") or "")
        lines.extend(f"  {line}" for line in docs.splitlines() if line.strip())
    return lines
