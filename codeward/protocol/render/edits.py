"""The writes: an edit's diff and what it did to the diagnostics, code actions."""

from __future__ import annotations

from typing import Any

from codeward.protocol.render.diagnostics import diagnostics_after
from codeward.protocol.render.locations import location
from codeward.protocol.render.values import as_int


def edit(result: dict[str, Any]) -> list[str]:
    """The diff of a format, rename, applied code action or edit, then what it did to the
    diagnostics; a refused edit says so first."""
    diff = result.get("diff")
    lines = str(diff).rstrip("\n").splitlines() if diff else []
    head = [f"refused: {result.get('reason')}"] if result.get("refused") else []
    body = head + lines + diagnostics_after(result.get("diagnostics_after"))
    return body + left_out(result)


def left_out(result: dict[str, Any]) -> list[str]:
    """What a write's checks did not cover: files a server does not analyse, and the lines
    that still mention a renamed symbol's old name."""
    lines: list[str] = []
    for scope in result.get("unanalysed") or []:
        if isinstance(scope, dict):
            include = ", ".join(str(e) for e in scope.get("include") or [])
            if scope.get("exclude"):
                include += "; exclude: " + ", ".join(str(e) for e in scope["exclude"])
            files = ", ".join(str(f) for f in scope.get("files") or [])
            count = as_int(scope.get("count")) or 0
            lines.append(
                f"not analysed by {scope.get('server')} (include: {include}): {count} "
                f"file{'s' if count != 1 else ''}, neither checked nor renamed in: {files}"
                + (" ..." if count > len(scope.get("files") or []) else "")
            )
    mentioned = [m for m in result.get("unanalysed_mentions") or [] if isinstance(m, dict)]
    if mentioned:
        lines.append("still mentioned where the server's edit did not reach:")
        lines += [f"{location(m)}: {m.get('text', '')}" for m in mentioned]
    return lines


def actions(result: dict[str, Any]) -> list[str]:
    if "applied" in result:
        return edit(result)
    lines = []
    for action in result.get("actions") or []:
        if isinstance(action, dict):
            kind = action.get("kind")
            text = f"[{action.get('index', '?')}] {action.get('title', '?')}"
            if kind:
                text += f" ({kind})"
            if action.get("preferred"):
                text += " *"
            lines.append(text)
    return lines
