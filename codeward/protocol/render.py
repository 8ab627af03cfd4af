"""Human output: pure functions from result dicts (shaped as docs/PROTOCOL.md says) to text.

Locations print as `path:line:col: text`, as compilers and grep do. Every renderer returns
the lines for stdout; `notes` gives the remarks for stderr (partial, truncated, ...).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from typing import Any


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _start(item: dict[str, Any]) -> tuple[int | None, int | None]:
    """1-based line and column of an item: `line` + `character`/`column`, else `range`."""
    line = _int(item.get("line"))
    col = _int(item.get("character", item.get("column")))
    rng = item.get("range")
    if line is None and isinstance(rng, dict):
        start = rng.get("start", rng)
        if isinstance(start, dict):
            line = _int(start.get("line"))
            col = _int(start.get("character", start.get("column")))
    return line, col


def location(item: dict[str, Any], path: str | None = None) -> str:
    """`path:line:col` (the parts that are known)."""
    where = item.get("path") or item.get("file") or item.get("uri") or path or "?"
    line, col = _start(item)
    text = str(where)
    if line is not None:
        text += f":{line}"
        if col is not None:
            text += f":{col}"
    return text


def location_line(item: dict[str, Any], text: str | None = None) -> str:
    """`path:line:col: text`, where text defaults to the item's `preview`."""
    body = item.get("preview") if text is None else text
    head = location(item)
    return f"{head}: {body}" if body else head


def locations(items: Iterable[Any]) -> list[str]:
    return [location_line(item) for item in items if isinstance(item, dict)]


def _list(result: dict[str, Any], plural: str, singular: str | None = None) -> list[Any]:
    """The list under `plural`, else the one item under `singular`, else []."""
    many = result.get(plural)
    if isinstance(many, list):
        return many
    one = result.get(singular) if singular else None
    return [one] if isinstance(one, dict) else []


# -- daemon --------------------------------------------------------------------------------


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "?"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def status(result: dict[str, Any]) -> list[str]:
    return [
        f"codeward {result.get('version', '?')} (pid {result.get('pid', '?')}), "
        f"up {_duration(result.get('uptime'))}",
        f"sessions: {result.get('sessions', 0)}, connections: {result.get('connections', 0)}",
        f"socket: {result.get('socket', '?')}",
    ]


def sessions(result: dict[str, Any]) -> list[str]:
    items = [s for s in result.get("sessions") or [] if isinstance(s, dict)]
    if not items:
        return ["no sessions"]
    lines: list[str] = []
    shared: dict[tuple[str, Any], dict[str, Any]] = {}  # a process several roots use, once
    for session in items:
        trust = "trusted" if session.get("trusted") else "restricted"
        lines.append(
            f"{session.get('id', '?')}  {session.get('root', '?')}  {trust}  "
            f"clients: {session.get('clients', 0)}  idle: {_duration(session.get('idle_seconds'))}"
        )
        for server in session.get("servers") or []:
            if not isinstance(server, dict):
                continue
            name, pid = server.get("name", "?"), server.get("pid")
            if len(server.get("roots") or []) > 1:
                shared.setdefault((name, pid or id(server)), server)
                lines.append(f"  {name}: shared" + (f", pid {pid}" if pid else ""))
            else:
                lines.append(_server_line(server))
    if shared:
        lines.append("shared by the roots of one repository:")
        for server in shared.values():
            lines.append(_server_line(server))
            lines.extend(f"    {root}" for root in server.get("roots") or [])
    return lines


def _server_line(server: dict[str, Any]) -> str:
    pid = server.get("pid")
    return (
        f"  {server.get('name', '?')} ({server.get('language', '?')}): "
        f"{server.get('state', '?')}"
        + (f", pid {pid}" if pid else "")
        + f", restarts {server.get('restarts', 0)}"
    )


def trust_list(result: dict[str, Any]) -> list[str]:
    roots = [str(r) for r in result.get("roots") or []]
    return roots or ["no trusted roots"]


def trust_set(result: dict[str, Any]) -> list[str]:
    root, trusted = result.get("root", "?"), bool(result.get("trusted"))
    if trusted and result.get("inherited"):
        line = f"{root} is trusted through a trusted directory above it"
    elif trusted:
        line = f"{root} is trusted" + ("" if result.get("changed") else " (it already was)")
    else:
        line = f"{root} is not trusted" + ("" if result.get("changed") else " (it was not)")
    restarted = len(result.get("restarted") or [])
    if restarted:
        line += f"; the servers of {restarted} session{'s' if restarted != 1 else ''} restarted"
    return [line]


def tools(result: dict[str, Any]) -> list[str]:
    lines = []
    for item in result.get("tools") or []:
        if isinstance(item, dict):
            summary = str(item.get("description") or "").strip().splitlines()
            lines.append(f"{item.get('name', '?')}: {summary[0] if summary else ''}".rstrip(": "))
    return lines


# -- tools ---------------------------------------------------------------------------------


def diagnostics(result: dict[str, Any]) -> list[str]:
    """`path:line:col: severity: message [code]`, one line each (as compilers print); with
    `since`, the delta (of each changed file, for a revision)."""
    if "files" in result:
        return change_lines(result)
    if "since" in result:
        return delta_lines(result, f"since {str(result['since'])[:19]}")
    return [
        _diagnostic_line(diag) for diag in result.get("diagnostics") or [] if isinstance(diag, dict)
    ]


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


def _symbol_text(symbol: dict[str, Any], indent: int) -> str:
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
                lines.append(f"{location(symbol, path)}: {_symbol_text(symbol, indent)}")
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
            files = ", ".join(str(f) for f in scope.get("files") or [])
            count = _int(scope.get("count")) or 0
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


def _diagnostic_line(diag: dict[str, Any]) -> str:
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
    return [line, *(f"+ {_diagnostic_line(d)}" for d in introduced)] + [
        f"- {_diagnostic_line(d)}" for d in gone
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
    count = _int(refs.get("count")) or 0
    head += f": {count} reference{'s' if count != 1 else ''} outside the change"
    if refs.get("partial"):
        head += " (partial)"
    lines = [head]
    for group in refs.get("files") or []:
        if not isinstance(group, dict):
            continue
        shown = [str(n) for n in group.get("lines") or []]
        more = (_int(group.get("count")) or 0) - len(shown)
        lines.append(
            f"      {group.get('file')}: {group.get('count')} ({', '.join(shown)}"
            f"{f', +{more}' if more > 0 else ''})"
        )
    if refs.get("truncated"):
        lines.append("      (more files)")
    return lines


def diagnostics_after(reports: Any) -> list[str]:
    lines: list[str] = []
    for report in reports if isinstance(reports, list) else []:
        if isinstance(report, dict):
            lines += delta_lines(report, f"diagnostics of {report.get('file', '?')}")
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


def lua(result: dict[str, Any]) -> list[str]:
    """A string result prints as is; anything else as JSON."""
    value = result.get("result")
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines() or [""]
    return to_json(value).splitlines()


def script(result: dict[str, Any]) -> list[str]:
    """run_lua's text: its value (a string as is, anything else as compact JSON), then its
    log lines."""
    value, logs = result.get("result"), result.get("logs")
    if value is None:
        lines = []
    elif isinstance(value, str):
        lines = value.splitlines() or [""]
    else:
        lines = [json.dumps(value, ensure_ascii=False, separators=(",", ":"))]
    return [*lines, *(f"log: {line}" for line in logs or [] if isinstance(line, str))]


# -- stderr remarks --------------------------------------------------------------------------

RESTRICTED = (
    "restricted: the root is not trusted (codeward trust), so its servers run without project code"
)


def restricted_remark(effects: dict[str, Any]) -> str:
    """The restricted remark, with what the restriction took from each server asked."""
    if not effects:
        return RESTRICTED
    said = "; ".join(f"{server} {what}" for server, what in effects.items())
    return f"restricted: the root is not trusted (codeward trust), so {said}"


def _count(value: Any) -> int | None:
    if isinstance(value, list):
        return len(value)
    return _int(value)


_STOPPED = {"memory": " (near its memory cap)"}  # why a server's batches stopped


def _checked(servers: Any) -> str | None:
    """What each server checked of a folder: `basedpyright: 300 of 1,603 files; ruff: all`."""
    if not isinstance(servers, list) or not servers:
        return None
    parts: list[str] = []
    rest = False
    for server in servers:
        if not isinstance(server, dict):
            continue
        checked, total = _int(server.get("files_checked")), _int(server.get("files_total"))
        if server.get("complete"):
            parts.append(f"{server.get('name')}: all")
        else:
            rest = True
            why = _STOPPED.get(str(server.get("stopped")), "")
            parts.append(f"{server.get('name')}: {checked or 0:,} of {total or 0:,} files{why}")
    again = " (ask again to check the rest)" if rest else ""
    return "checked: " + "; ".join(parts) + again if parts else None


_BY = {
    "inside": "the identifier the character given is inside",
    "nearest": "the identifier nearest the character given",
    "name": "the name given",
    "symbol": "the symbol given",
}


def at_remark(at: Any) -> str | None:
    """`at write src/x.py:184:9 (the identifier nearest the character given)`: what a
    position tool answered for, when it is not plainly the position given."""
    if not isinstance(at, dict) or at.get("by") not in _BY:
        return None
    return f"at {at.get('name')} {location(at)} ({_BY[at['by']]})"


def editor_remarks(result: dict[str, Any]) -> list[str]:
    """What the answer owes to editors: unsaved buffers read, edits sent to editors."""
    out: list[str] = []
    if result.get("source") == "editor":
        files = result.get("editor_files") or []
        shown = ", ".join(
            f"{f.get('path')} (version {f.get('version')} in {f.get('holder')})"
            for f in files
            if isinstance(f, dict)
        )
        out.append(f"answered on an editor's unsaved text: {shown}")
    for followed in result.get("editors") or []:
        if not isinstance(followed, dict):
            continue
        files = ", ".join(str(f) for f in followed.get("files") or [])
        if followed.get("applied"):
            out.append(f"{followed.get('holder')} applied the edit of {files} in its buffer")
        else:
            out.append(f"{followed.get('holder')}: {followed.get('reason')}")
    return out


def notes(command: str, result: dict[str, Any]) -> list[str]:
    """Remarks for stderr: what a position named, nothing found, partial or truncated
    results, what an edit did."""
    out: list[str] = []
    resolved = at_remark(result.get("at"))
    if resolved:
        out.append(resolved)
    if command == "hover":
        if not hover(result):
            out.append("no hover information")
    elif result.get("status") == "not_found":
        out.append(f"no {command.replace('-', ' ')} found")
    if result.get("partial") and not (command == "diagnostics" and result.get("unchecked_files")):
        out.append("partial result: a language server was still loading; try again shortly")
    if result.get("truncated"):
        out.append("output truncated")
    if result.get("restricted"):
        out.append(RESTRICTED)
    out += editor_remarks(result)
    if command in ("diagnostics", "actions"):
        what = "code actions" if command == "actions" else command
        for error in result.get("errors") or []:
            if isinstance(error, dict):
                out.append(f"no {what} from {error.get('server')}: {error.get('message')}")
    if command == "diagnostics":
        unchecked = _count(result.get("unchecked_files"))
        checked = _checked(result.get("servers"))
        if checked:
            out.append(checked)
        elif unchecked:
            out.append(
                f"{unchecked} file{'s' if unchecked != 1 else ''} not checked by a server that "
                "reports only open files (raise lsp.folder_diagnostics_files, or ask for a "
                "smaller folder)"
            )
        count = _count(result.get("count"))
        if count is None:
            count = len(result.get("diagnostics") or [])
        if "since" not in result:
            out.append(f"{count} diagnostic{'s' if count != 1 else ''}")
    if command in ("edit", "edit-symbol"):
        if result.get("refused"):
            out.append("refused: nothing written")
        elif not result.get("changed"):
            out.append("no change")
        elif not result.get("written"):
            out.append("preview: nothing written")
    if command == "move":
        where = f"{result.get('path')} -> {result.get('new_path')}"
        files = _count(result.get("files_changed")) or 0
        updated = f"{files} file{'s' if files != 1 else ''} updated"
        if result.get("moved"):
            out.append(f"moved {where}; {updated}")
        else:
            out.append(f"preview: nothing moved ({where}; {updated} when applied)")
        if result.get("warning"):
            out.append(str(result["warning"]))
        elif result.get("not_updated_by"):
            names = ", ".join(str(s) for s in result["not_updated_by"])
            out.append(f"not updated by {names} (no workspace/willRenameFiles)")
    if command == "format":
        if result.get("formatter"):
            out.append(f"formatted with {result['formatter']}")
        if not result.get("changed"):
            out.append("already formatted")
        elif not result.get("applied"):
            out.append("a dry run: not applied")
    if command == "rename" or (command == "actions" and "applied" in result):
        files = _count(result.get("files_changed"))
        if files is not None:
            done = "changed" if result.get("applied", True) else "would change"
            out.append(f"{done} {files} file{'s' if files != 1 else ''}")
    return out


# -- tool results as an agent reads them (MCP `content` text) -------------------------------

# The CLI command whose renderer and remarks a tool's text reuses.
_COMMANDS = {
    "get_diagnostics": "diagnostics",
    "get_hover_info": "hover",
    "go_to_definition": "definition",
    "get_type_definition": "type-definition",
    "find_implementations": "implementations",
    "find_references": "references",
    "get_symbols": "symbols",
    "call_hierarchy": "calls",
    "type_hierarchy": "types",
    "signature_help": "signature",
    "format_code": "format",
    "get_code_actions": "actions",
    "rename_symbol": "rename",
    "edit_file": "edit",
    "review_changes": "review",
    "edit_symbol": "edit-symbol",
    "move_file": "move",
}


# Short words for the commonest symbol kinds in an outline (the rest keep their name).
_SHORT_KINDS = {
    "function": "fn",
    "method": "fn",
    "constructor": "fn",
    "variable": "var",
    "constant": "const",
    "property": "prop",
    "enum_member": "member",
    "type_parameter": "type",
}
# A name printed bare: no space, quote or colon at its end, and not a number (which would
# read as a line); any other is printed as a JSON string.
_BARE_NAME = re.compile(r"[^\s\"]*[^\s\":]")


def _kind_word(symbol: dict[str, Any]) -> str:
    kind = symbol.get("kind")
    return _SHORT_KINDS.get(kind, kind) if isinstance(kind, str) and kind else "?"


def _name(symbol: dict[str, Any]) -> str:
    name = str(symbol.get("name", "?"))
    if _BARE_NAME.fullmatch(name) and not name.isdigit():
        return name
    return json.dumps(name, ensure_ascii=False)


def _groups(items: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    """Runs of siblings of one kind (and container, in a flat list); a symbol with children
    stands alone (they follow it)."""
    group: list[dict[str, Any]] = []
    for symbol in items:
        if group and (
            symbol.get("children")
            or group[-1].get("children")
            or _kind_word(symbol) != _kind_word(group[0])
            or symbol.get("container") != group[0].get("container")
        ):
            yield group
            group = []
        group.append(symbol)
    if group:
        yield group


def _group_line(group: list[dict[str, Any]], indent: int) -> str:
    """`kind@col name:line name:line` when the names share their column, else
    `kind name:line:col ...`; a name without a position is printed alone; `(in C)` after
    the symbols of container C in a flat list."""
    starts = [_start(symbol) for symbol in group]
    columns = {col for line, col in starts if line is not None}
    shared = columns.pop() if len(columns) == 1 and None not in columns else None
    head = _kind_word(group[0]) + (f"@{shared}" if shared is not None else "")
    names = []
    for symbol, (line, col) in zip(group, starts, strict=True):
        text = _name(symbol)
        if line is not None:
            text += f":{line}" + (f":{col}" if shared is None and col is not None else "")
        names.append(text)
    container = group[0].get("container")  # a flat list's nesting
    tail = f" (in {container})" if container else ""
    return " " * indent + head + " " + " ".join(names) + tail


def outline(result: dict[str, Any]) -> list[str]:
    """Document symbols as an indented outline, one line per run of siblings of one kind:
    `fn@9 area:5 size:8` is two functions whose names stand at column 9 of lines 5 and 8
    (the line and character the position tools take); children follow their parent, one
    space deeper. Workspace matches print as `path:line:col: kind name (in container)`."""
    if result.get("scope") == "workspace":
        return [
            f"{location(s)}: {_symbol_text(s, 0)}"
            for s in result.get("symbols") or []
            if isinstance(s, dict)
        ]
    lines: list[str] = []

    def walk(items: Any, indent: int) -> None:
        symbols = [s for s in items if isinstance(s, dict)] if isinstance(items, list) else []
        for group in _groups(symbols):
            lines.append(_group_line(group, indent))
            walk(group[-1].get("children"), indent + 1)

    walk(result.get("symbols"), 0)
    return lines


def git(result: dict[str, Any]) -> list[str]:
    """git's own output, then its stderr."""
    out = [str(result.get(key) or "").rstrip("\n") for key in ("output", "stderr")]
    return "\n".join(part for part in out if part).splitlines()


def _count_line(tool: str, result: dict[str, Any]) -> list[str]:
    if tool not in ("find_references", "find_implementations", "call_hierarchy", "type_hierarchy"):
        return []
    count = _count(result.get("count"))
    if not count:
        return []
    noun = {"find_references": "reference", "find_implementations": "implementation"}.get(
        tool, "call"
    )
    if tool == "type_hierarchy":
        noun = "supertype" if result.get("direction") == "supertypes" else "subtype"
    line = f"{count} {noun}{'s' if count != 1 else ''}"
    item = result.get("item")
    way = {"incoming": "to", "outgoing": "from", "supertypes": "of", "subtypes": "of"}.get(
        str(result.get("direction"))
    )
    if isinstance(item, dict) and item.get("name") and way:  # `3 calls to compute`
        line += f" {way} {item['name']}"
    return [line]


_TEXT = {
    "git_command": git,
    "get_diagnostics": diagnostics,
    "get_hover_info": hover,
    "go_to_definition": definition,
    "get_type_definition": type_definition,
    "find_implementations": implementations,
    "find_references": references,
    "get_symbols": outline,
    "call_hierarchy": calls,
    "type_hierarchy": types,
    "signature_help": signatures,
    "format_code": edit,
    "get_code_actions": actions,
    "rename_symbol": edit,
    "edit_file": edit,
    "run_lua": script,
    "review_changes": review,
    "edit_symbol": edit,
    "move_file": edit,
}
# What a result without a line says.
_EMPTY = {"git_command": "no output", "run_lua": "no result"}


def tool_text(tool: str, result: Any, *, told_restricted: bool = False) -> str:
    """A tool's result as compact text, the way compilers and grep print: one location a
    line, an outline as an indented list, diffs as diffs; a tool without a renderer gets
    compact JSON (never pretty-printed). Remarks (the content hash of a file's diagnostics or
    edit, partial, truncated, counts) come last; `told_restricted`: the reader already knows
    the servers run restricted (not said again)."""
    if not isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    shape = _TEXT.get(tool)
    if shape is None:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    lines = [*_count_line(tool, result), *shape(result)]
    command = _COMMANDS.get(tool)
    remarks = notes(command, result) if command else editor_remarks(result)
    if told_restricted and RESTRICTED in remarks:
        remarks.remove(RESTRICTED)
    if tool == "git_command" and result.get("truncated"):
        remarks.append("output truncated")
    if isinstance(result.get("content_hash"), str):  # what `since` and `expected_hash` take
        remarks.insert(0, f"content_hash: {result['content_hash']}")
    elif isinstance(result.get("unchanged_hash"), str):  # a refused edit: the file's own
        remarks.insert(0, f"unchanged, content_hash: {result['unchanged_hash']}")
    if not lines and not remarks:
        remarks.append(_EMPTY.get(tool, "nothing found"))
    return "\n".join([*lines, *(f"({r})" for r in remarks)])


def error_text(message: str, kind: str | None, details: dict[str, Any] | None = None) -> str:
    """A tool error as the agent reads it: the sentence, its kind, git's own words and a
    script's logs."""
    text = f"{message} [{kind}]" if kind else message
    for key in ("stderr", "output"):
        value = (details or {}).get(key)
        if isinstance(value, str) and value.strip():
            text += "\n" + value.rstrip("\n")
    logs = (details or {}).get("logs")  # what a script logged before it failed
    if isinstance(logs, list):
        text += "".join(f"\nlog: {line}" for line in logs if isinstance(line, str))
    return text
