"""A change as an agent reviews it: its files and hunks, the definitions it touched and
their uses, the diagnostics."""

from __future__ import annotations

from typing import Any

from codeward.protocol.render.diagnostics import diagnostics_after
from codeward.protocol.render.values import as_int

_STATUS_LETTERS = {"added": "A", "deleted": "D", "modified": "M"}
_CHANGE_MARKS = {"added": "+", "removed": "-", "signature": "~", "body": "~"}
HUNKS_SHOWN = 8


def review(result: dict[str, Any]) -> list[str]:
    """A change as an agent reads it: a head line; a line per file (its hunks as `-a,b
    +c,d`), a line per definition it touched, a line per file using it; the diagnostics."""
    files = [f for f in result.get("files") or [] if isinstance(f, dict)]
    symbols = sum(len(f.get("symbols") or []) for f in files)
    found = result.get("diagnostics")
    found = found if isinstance(found, dict) else {}
    commit = str(result.get("commit") or "")[:12]
    lines = [
        f"review since {result.get('since')} ({commit}): {len(files)} "
        f"file{'s' if len(files) != 1 else ''}, {symbols} definition"
        f"{'s' if symbols != 1 else ''} touched; diagnostics: "
        f"{found.get('introduced_count', 0)} introduced, {found.get('resolved_count', 0)} resolved"
    ]
    for file in files:
        lines.append(_file_line(file))
        for symbol in file.get("symbols") or []:
            if isinstance(symbol, dict):
                lines += _symbol_lines(symbol)
        lines += [f"  ! {error}" for error in file.get("errors") or []]
    return lines + diagnostics_after(found.get("files"))


def _file_line(file: dict[str, Any]) -> str:
    line = f"{_STATUS_LETTERS.get(str(file.get('status')), '?')} {file.get('file', '?')}"
    if file.get("binary"):
        return line + " (binary or too large)"
    hunks = [h for h in file.get("hunks") or [] if isinstance(h, dict)]
    shown = [
        f"-{h.get('old_start')},{h.get('old_lines')} +{h.get('new_start')},{h.get('new_lines')}"
        for h in hunks[:HUNKS_SHOWN]
    ]
    if len(hunks) > HUNKS_SHOWN:
        shown.append(f"(+{len(hunks) - HUNKS_SHOWN} hunks)")
    return " ".join([line, *shown])


def _symbol_lines(symbol: dict[str, Any]) -> list[str]:
    change = str(symbol.get("change"))
    head = (
        f"  {_CHANGE_MARKS.get(change, '~')} {symbol.get('kind')} {symbol.get('name')} "
        f"{symbol.get('file')}:{symbol.get('line')}:{symbol.get('character')} ({change})"
    )
    refs = symbol.get("references")
    if not isinstance(refs, dict):
        return [head]
    count = as_int(refs.get("count")) or 0
    head += f": {count} reference{'s' if count != 1 else ''} outside the change"
    if refs.get("partial"):
        head += " (partial)"
    lines = [head]
    for group in refs.get("files") or []:
        if not isinstance(group, dict):
            continue
        shown = [str(n) for n in group.get("lines") or []]
        more = (as_int(group.get("count")) or 0) - len(shown)
        lines.append(
            f"      {group.get('file')}: {group.get('count')} ({', '.join(shown)}"
            f"{f', +{more}' if more > 0 else ''})"
        )
    if refs.get("truncated"):
        lines.append("      (more files)")
    return lines
