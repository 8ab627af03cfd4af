"""The JSON Schema of each tool's result (MCP `outputSchema`), by tool name.

Every key a tool always returns is required; keys present only sometimes are optional;
nested items list the fields an agent relies on and allow more.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
BOOL: Schema = {"type": "boolean"}
OBJ: Schema = {"type": "object"}


def null_or(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


STATUS: Schema = {"type": "string", "enum": ["found", "not_found"]}
LOCATION = obj(
    {"path": STR, "line": INT, "character": INT},
    {"end_line": INT, "end_character": INT, "preview": STR},
)
DIAGNOSTIC = obj(
    {"file": STR, "line": INT, "column": INT, "severity": STR, "message": STR},
    {"end_line": INT, "end_column": INT, "code": {"type": ["string", "integer", "null"]},
     "source": null_or(STR)},
)  # fmt: skip
SERVER_ERRORS = array(obj({"message": STR}, {"server": null_or(STR)}))
SYMBOL = obj({"name": STR}, {"kind": null_or(STR), "path": STR, "line": INT, "character": INT,
                             "detail": null_or(STR), "container": null_or(STR),
                             "children": array(OBJ)})  # fmt: skip
EDIT = {"files_changed": array(STR), "edits": INT, "diff": STR, "applied": BOOL}
SEVERITY_COUNTS = obj({"error": INT, "warning": INT, "information": INT, "hint": INT})
RESOLVED = obj({"count": INT, "diagnostics": array(DIAGNOSTIC)})
FILE_DELTA = obj(
    {
        "file": STR,
        "changed": BOOL,
        "introduced": array(DIAGNOSTIC),
        "resolved": RESOLVED,
        "remaining": SEVERITY_COUNTS,
    },
    {"partial": BOOL, "partial_servers": array(STR), "errors": array(STR)},
)
# A server that analyses only part of the project: its scope, and the files outside it.
UNANALYSED = {
    "unanalysed": array(
        obj(
            {"server": STR, "include": array(STR), "count": INT, "files": array(STR)},
            {"exclude": array(STR)},
        )
    )
}
AFTER = {"diagnostics_after": array(FILE_DELTA), **UNANALYSED}
MENTIONS = {"unanalysed_mentions": array(obj({"path": STR, "line": INT, "text": STR}))}
# What a position tool answered for, when it is not plainly the identifier at the position
# given: the one a character falls inside (not at its start), the nearest one to a character
# on no identifier, the `name` on the line, or the `symbol` name path's.
AT = {
    "at": obj(
        {
            "name": STR,
            "path": STR,
            "line": INT,
            "character": INT,
            "by": {"type": "string", "enum": ["inside", "nearest", "name", "symbol"]},
        }
    )
}


HUNK = obj({"old_start": INT, "old_lines": INT, "new_start": INT, "new_lines": INT})
REFERENCE_GROUPS = obj(
    {
        "count": INT,
        "files": array(obj({"file": STR, "count": INT, "lines": array(INT)})),
        "truncated": BOOL,
    },
    {"partial": BOOL},
)
TOUCHED = obj(
    {
        "name": STR,
        "kind": STR,
        "change": {"type": "string", "enum": ["added", "removed", "signature", "body"]},
        "file": STR,
        "line": INT,
        "character": INT,
        "end_line": INT,
    },
    {"references": REFERENCE_GROUPS},
)
CHANGED_FILE = obj(
    {"file": STR, "status": {"type": "string", "enum": ["added", "deleted", "modified"]}},
    {"hunks": array(HUNK), "binary": BOOL, "symbols": array(TOUCHED), "errors": array(STR)},
)


def _located(one: str, many: str) -> Schema:
    return obj(
        {"status": STATUS, "count": INT, "partial": BOOL},
        {one: LOCATION, many: array(LOCATION), **AT},
    )


OUTPUT_SCHEMAS: dict[str, Schema] = {
    "git_command": obj(
        {"exit_code": INT, "output": STR, "stderr": STR, "truncated": BOOL, "parsed": null_or(OBJ)},
    ),
    "get_diagnostics": obj(
        {},
        {
            "diagnostics": array(DIAGNOSTIC),
            "count": INT,
            "truncated": BOOL,
            "content_hash": STR,
            "partial": BOOL,
            "errors": SERVER_ERRORS,
            "unchecked_files": INT,
            "servers": array(
                obj(
                    {"name": STR, "files_checked": INT, "files_total": INT, "complete": BOOL},
                    {
                        "stopped": STR,
                        "files_excluded": INT,
                        "files_ignored": INT,
                        "config": STR,
                        "config_error": STR,
                    },
                )
            ),
            "since": STR,
            "introduced": array(DIAGNOSTIC),
            "resolved": RESOLVED,
            "remaining": SEVERITY_COUNTS,
            "partial_servers": array(STR),
            "commit": STR,
            "files": array(FILE_DELTA),
            "introduced_count": INT,
            "resolved_count": INT,
        },
    ),
    "get_hover_info": obj(
        {"status": STATUS, "partial": BOOL},
        {
            "signature": null_or(STR),
            "kind": null_or(STR),
            "type": null_or(STR),
            "docs": null_or(STR),
            "module": null_or(STR),
            "markdown": null_or(STR),
            "range": null_or(
                obj({"line": INT, "character": INT, "end_line": INT, "end_character": INT})
            ),
            **AT,
        },
    ),
    "go_to_definition": _located("definition", "definitions"),
    "get_type_definition": _located("type_definition", "type_definitions"),
    "find_implementations": obj(
        {"status": STATUS, "implementations": array(LOCATION), "count": INT, "partial": BOOL},
        AT,
    ),
    "find_references": obj(
        {"status": STATUS, "references": array(LOCATION), "count": INT, "partial": BOOL}, AT
    ),
    "get_symbols": obj(
        {
            "status": STATUS,
            "scope": {"type": "string", "enum": ["document", "workspace"]},
            "symbols": array(SYMBOL),
            "count": INT,
            "truncated": BOOL,
            "partial": BOOL,
        },
        {"path": STR, "query": STR, "languages": array(STR)},
    ),
    "call_hierarchy": obj(
        {
            "status": STATUS,
            "direction": {"type": "string", "enum": ["incoming", "outgoing"]},
            "calls": array(obj({"name": STR}, {"kind": null_or(STR), **LOCATION["properties"]})),
            "count": INT,
            "partial": BOOL,
        },
        {"item": OBJ, **AT},
    ),
    "type_hierarchy": obj(
        {
            "status": STATUS,
            "direction": {"type": "string", "enum": ["supertypes", "subtypes"]},
            "types": array(obj({"name": STR}, {"kind": null_or(STR), **LOCATION["properties"]})),
            "count": INT,
            "partial": BOOL,
        },
        {"item": OBJ, **AT},
    ),
    "signature_help": obj(
        {
            "status": STATUS,
            "signatures": array(
                obj(
                    {"label": STR},
                    {"docs": STR, "parameters": array(obj({"label": STR}, {"docs": STR}))},
                )
            ),
            "partial": BOOL,
        },
        {"active_signature": INT, "active_parameter": null_or(INT)},
    ),
    "format_code": obj(
        {"changed": BOOL, "diff": STR, "applied": BOOL}, {**AFTER, "formatter": STR}
    ),
    "get_code_actions": obj(
        {
            "actions": array(
                obj({"index": INT, "title": STR}, {"kind": null_or(STR), "preferred": BOOL})
            )
        },
        {
            "errors": SERVER_ERRORS,
            "action": obj({"index": INT, "title": STR}),
            "applied_actions": array(obj({"index": INT, "title": STR})),
            **EDIT,
            **AFTER,
        },
    ),
    "rename_symbol": obj(EDIT, {**AFTER, **MENTIONS, "partial": BOOL, **AT}),
    "run_lua": obj({"result": {}, "logs": array(STR)}),
    "review_changes": obj(
        {
            "since": STR,
            "commit": STR,
            "files": array(CHANGED_FILE),
            "diagnostics": obj(
                {"files": array(FILE_DELTA), "introduced_count": INT, "resolved_count": INT}
            ),
        },
        {"partial": BOOL, "unchecked_files": INT, "references_skipped": INT},
    ),
    "edit_file": obj(
        {
            "path": STR,
            "diff": STR,
            "written": BOOL,
            "changed": BOOL,
            "diagnostics_after": AFTER["diagnostics_after"],
        },
        # `content_hash` of what is on disk after it; a refused `safe` edit has none, but
        # the file's `unchanged_hash`
        {
            "content_hash": STR,
            "refused": BOOL,
            "reason": STR,
            "unchanged_hash": null_or(STR),
            **UNANALYSED,
        },
    ),
    "move_file": obj(
        {
            "moved": BOOL,
            "path": STR,
            "new_path": STR,
            "files_changed": array(STR),
            "edits": INT,
            "diff": STR,
            "servers": array(STR),
            "diagnostics_after": AFTER["diagnostics_after"],
        },
        {"not_updated_by": array(STR), "warning": STR, "partial": BOOL, **UNANALYSED},
    ),
    "edit_symbol": obj(
        {
            "symbol": obj({"name_path": STR, "kind": STR, "line": INT, "end_line": INT}),
            "path": STR,
            "diff": STR,
            "written": BOOL,
            "changed": BOOL,
            "diagnostics_after": AFTER["diagnostics_after"],
        },
        {
            "content_hash": STR,  # none when a `safe` edit was refused: `unchanged_hash`
            "refused": BOOL,
            "reason": STR,
            "unchanged_hash": null_or(STR),
            **UNANALYSED,
        },
    ),
}

# Any tool's result, beside its own keys: the editors' buffers it read instead of the disk
# (when one differs from the disk) and what became of its edits sent to editors.
EDITOR_FIELDS: dict[str, Schema] = {
    "source": {"type": "string", "enum": ["editor"]},
    "editor_version": INT,
    "editor_files": array(obj({"path": STR, "version": INT, "holder": STR})),
    "editors": array(obj({"holder": STR, "files": array(STR), "applied": BOOL}, {"reason": STR})),
}
for _schema in OUTPUT_SCHEMAS.values():
    _schema["properties"].update(EDITOR_FIELDS)
