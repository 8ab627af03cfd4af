"""The remarks for stderr: what a position named, nothing found, partial or truncated
results, the restriction, what an edit did."""

from __future__ import annotations

from typing import Any

from codeward.protocol.render.intel import hover
from codeward.protocol.render.locations import location
from codeward.protocol.render.values import as_int, how_many

RESTRICTED = (
    "restricted: the root is not trusted (codeward trust), so its servers run without project code"
)


def restricted_remark(effects: dict[str, Any]) -> str:
    """The restricted remark, with what the restriction took from each server asked."""
    if not effects:
        return RESTRICTED
    said = "; ".join(f"{server} {what}" for server, what in effects.items())
    return f"restricted: the root is not trusted (codeward trust), so {said}"


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
        checked, total = as_int(server.get("files_checked")), as_int(server.get("files_total"))
        if server.get("complete"):
            part = f"{server.get('name')}: all"
        else:
            rest = True
            why = _STOPPED.get(str(server.get("stopped")), "")
            part = f"{server.get('name')}: {checked or 0:,} of {total or 0:,} files{why}"
        parts.append(part + _left_out(server))
    again = " (ask again to check the rest)" if rest else ""
    return "checked: " + "; ".join(parts) + again if parts else None


def _left_out(server: dict[str, Any]) -> str:
    """` (12 files excluded, 3 ignored by pyproject.toml)`: what a server's configuration
    leaves out of its project (a configuration it could not read: its defaults)."""
    said: list[str] = []
    excluded, ignored = as_int(server.get("files_excluded")), as_int(server.get("files_ignored"))
    if excluded:
        said.append(f"{excluded:,} file{'s' if excluded != 1 else ''} excluded")
    if ignored:
        said.append(f"{ignored:,}{'' if said else ' file' + ('s' if ignored != 1 else '')} ignored")
    error = server.get("config_error")
    by = f" by {server['config']}" if server.get("config") and said and not error else ""
    if error:
        said.append(f"{server['config_error']}: the whole root taken")
    return f" ({', '.join(said)}{by})" if said else ""


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
        unchecked = how_many(result.get("unchecked_files"))
        checked = _checked(result.get("servers"))
        if checked:
            out.append(checked)
        elif unchecked:
            out.append(
                f"{unchecked} file{'s' if unchecked != 1 else ''} not checked by a server that "
                "reports only open files (raise lsp.folder_diagnostics_files, or ask for a "
                "smaller folder)"
            )
        count = how_many(result.get("count"))
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
        files = how_many(result.get("files_changed")) or 0
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
        files = how_many(result.get("files_changed"))
        if files is not None:
            done = "changed" if result.get("applied", True) else "would change"
            out.append(f"{done} {files} file{'s' if files != 1 else ''}")
    return out
