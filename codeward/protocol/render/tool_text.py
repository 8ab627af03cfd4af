"""Tool results as an agent reads them (MCP `content` text): a family's lines and remarks,
in the way compilers and grep print."""

from __future__ import annotations

import json
from typing import Any

from codeward.protocol.render import diagnostics, edits, intel, outline, passthrough, review
from codeward.protocol.render.notes import RESTRICTED, editor_remarks, notes
from codeward.protocol.render.values import how_many

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


def _count_line(tool: str, result: dict[str, Any]) -> list[str]:
    if tool not in ("find_references", "find_implementations", "call_hierarchy", "type_hierarchy"):
        return []
    count = how_many(result.get("count"))
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
    "git_command": passthrough.git,
    "get_diagnostics": diagnostics.diagnostics,
    "get_hover_info": intel.hover,
    "go_to_definition": intel.definition,
    "get_type_definition": intel.type_definition,
    "find_implementations": intel.implementations,
    "find_references": intel.references,
    "get_symbols": outline.outline,
    "call_hierarchy": intel.calls,
    "type_hierarchy": intel.types,
    "signature_help": intel.signatures,
    "format_code": edits.edit,
    "get_code_actions": edits.actions,
    "rename_symbol": edits.edit,
    "edit_file": edits.edit,
    "run_lua": passthrough.script,
    "review_changes": review.review,
    "edit_symbol": edits.edit,
    "move_file": edits.edit,
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
