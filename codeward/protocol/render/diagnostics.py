"""Diagnostics: a line each, as compilers print them, and what a change did to them."""

from __future__ import annotations

from typing import Any

from codeward.protocol.render.locations import location_line


def diagnostics(result: dict[str, Any]) -> list[str]:
    """`path:line:col: severity: message [code]`, one line each (as compilers print); with
    `since`, the delta (of each changed file, for a revision)."""
    if "files" in result:
        return change_lines(result)
    if "since" in result:
        return delta_lines(result, f"since {str(result['since'])[:19]}")
    return [
        diagnostic_line(diag) for diag in result.get("diagnostics") or [] if isinstance(diag, dict)
    ]


def diagnostic_line(diag: dict[str, Any]) -> str:
    message = " ".join(part.strip() for part in str(diag.get("message", "")).splitlines())
    text = f"{diag.get('severity', 'error')}: {message.strip()}"
    code = diag.get("code")
    if code not in (None, ""):
        text += f" [{code}]"
    return location_line(diag, text)


def _counts(counts: Any) -> str:
    if not isinstance(counts, dict):
        return "?"
    shown = [f"{n} {name}{'s' if n != 1 else ''}" for name, n in counts.items() if n]
    return ", ".join(shown) or "none"


def delta_lines(report: dict[str, Any], head: str) -> list[str]:
    """`head: N introduced, M resolved; remaining: ...`, then `+ diagnostic` and `- diagnostic`."""
    introduced = [d for d in report.get("introduced") or [] if isinstance(d, dict)]
    resolved = report.get("resolved")
    resolved = resolved if isinstance(resolved, dict) else {}
    gone = [d for d in resolved.get("diagnostics") or [] if isinstance(d, dict)]
    line = (
        f"{head}: {len(introduced)} introduced, {resolved.get('count', len(gone))} resolved; "
        f"remaining: {_counts(report.get('remaining'))}"
    )
    if report.get("partial"):
        servers = ", ".join(str(s) for s in report.get("partial_servers") or []) or "a server"
        line += f" (partial: {servers} did not answer in time)"
    return [line, *(f"+ {diagnostic_line(d)}" for d in introduced)] + [
        f"- {diagnostic_line(d)}" for d in gone
    ]


def change_lines(result: dict[str, Any]) -> list[str]:
    """`since REV (commit): N introduced, M resolved in K files`, then each file's delta."""
    files = result.get("files")
    files = files if isinstance(files, list) else []
    commit = str(result.get("commit") or "")[:12]
    head = (
        f"since {result.get('since')} ({commit}): {result.get('introduced_count', 0)} "
        f"introduced, {result.get('resolved_count', 0)} resolved in {len(files)} "
        f"file{'s' if len(files) != 1 else ''}"
    )
    return [head, *diagnostics_after(files)]


def diagnostics_after(reports: Any) -> list[str]:
    lines: list[str] = []
    for report in reports if isinstance(reports, list) else []:
        if isinstance(report, dict):
            lines += delta_lines(report, f"diagnostics of {report.get('file', '?')}")
    return lines
