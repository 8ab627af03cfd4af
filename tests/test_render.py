"""Human output of every command, from result dicts shaped as docs/PROTOCOL.md says."""

from __future__ import annotations

from typing import Any

from codeward.protocol.render import (
    daemon,
    diagnostics,
    edits,
    intel,
    notes,
    outline,
    passthrough,
    values,
)
from codeward.protocol.render.locations import location, location_line
from codeward.protocol.render.tool_text import error_text, tool_text


def loc(path: str, line: int, character: int, preview: str = "") -> dict[str, Any]:
    item: dict[str, Any] = {"path": path, "line": line, "character": character}
    if preview:
        item["preview"] = preview
    return item


def test_location_forms() -> None:
    assert location(loc("a.py", 3, 7)) == "a.py:3:7"
    assert location({"file": "b.go", "line": 2, "column": 5}) == "b.go:2:5"
    assert location({"path": "c.c", "line": 4}) == "c.c:4"
    assert location({"range": {"start": {"line": 9, "character": 2}}}, "d.py") == "d.py:9:2"
    assert location({"line": True}) == "?"  # a bool is not a line number
    assert location_line(loc("a.py", 1, 1, "x = 1")) == "a.py:1:1: x = 1"
    assert location_line(loc("a.py", 1, 1)) == "a.py:1:1"
    assert location_line(loc("a.py", 1, 1, "x"), "custom") == "a.py:1:1: custom"


def test_diagnostics_lines_and_notes() -> None:
    result = {
        "diagnostics": [
            {"file": "a.py", "line": 3, "column": 5, "end_line": 3, "end_column": 9,
             "severity": "error", "message": "Undefined name", "code": "F821", "source": "ruff"},
            {"file": "a.py", "line": 7, "column": 1, "severity": "warning",
             "message": "Type mismatch\n  int is not str", "code": None, "source": "basedpyright"},
            "junk",
        ],
        "count": 2,
        "truncated": True,
    }  # fmt: skip
    assert diagnostics.diagnostics(result) == [
        "a.py:3:5: error: Undefined name [F821]",
        "a.py:7:1: warning: Type mismatch int is not str",
    ]
    assert notes.notes("diagnostics", result) == ["output truncated", "2 diagnostics"]
    assert notes.notes("diagnostics", {"diagnostics": [{}]}) == ["1 diagnostic"]


def test_hover() -> None:
    assert intel.hover({"signature": "def f(x: int) -> str", "docs": "Doc.\nMore."}) == [
        "def f(x: int) -> str", "", "Doc.", "More.",
    ]  # fmt: skip
    assert intel.hover({"type": "int"}) == ["int"]
    assert intel.hover({"markdown": "```python\nx\n```"}) == ["```python", "x", "```"]
    assert intel.hover({}) == []
    assert notes.notes("hover", {}) == ["no hover information"]
    assert notes.notes("hover", {"type": "int"}) == []


def test_navigation_results() -> None:
    one = {"status": "found", "definition": loc("m.py", 10, 5, "def f():")}
    many = {"status": "found", "definitions": [loc("a.py", 1, 1, "x"), loc("go:fmt", 2, 3)]}
    assert intel.definition(one) == ["m.py:10:5: def f():"]
    assert intel.definition(many) == ["a.py:1:1: x", "go:fmt:2:3"]
    assert intel.definition({"status": "not_found"}) == []
    assert notes.notes("definition", {"status": "not_found"}) == ["no definition found"]
    refs = {
        "status": "found",
        "references": [loc("a.py", 4, 2, "f()")],
        "count": 1,
        "partial": True,
    }
    assert intel.references(refs) == ["a.py:4:2: f()"]
    assert notes.notes("references", refs)[0].startswith("partial result")
    impls = {"implementations": [loc("i.go", 5, 6, "func (s S) M()")], "count": 1}
    assert intel.implementations(impls) == ["i.go:5:6: func (s S) M()"]
    assert intel.type_definition({"type_definition": loc("t.py", 1, 7, "class T:")}) == [
        "t.py:1:7: class T:"
    ]
    assert intel.type_definition({"type_definitions": [loc("t.py", 2, 1)]}) == ["t.py:2:1"]
    assert notes.notes("type-definition", {"status": "not_found"}) == ["no type definition found"]


def test_symbols_document_tree_and_workspace() -> None:
    document = {
        "symbols": [
            {"name": "C", "kind": "class", "line": 1, "character": 7,
             "children": [{"name": "m", "kind": "method", "line": 2, "character": 9,
                           "detail": "(self) -> None"}]},
            {"name": "f", "kind": "function", "line": 5, "character": 5, "children": []},
        ]
    }  # fmt: skip
    assert intel.symbols(document, "a.py") == [
        "a.py:1:7: class C",
        "a.py:2:9:   method m: (self) -> None",
        "a.py:5:5: function f",
    ]
    workspace = {
        "symbols": [{"name": "Handler", "kind": "struct", "path": "srv/h.go", "line": 8,
                     "character": 6, "container": "srv"}]
    }  # fmt: skip
    assert intel.symbols(workspace) == ["srv/h.go:8:6: struct Handler (in srv)"]
    assert intel.symbols({"symbols": "bad"}) == []


def test_calls() -> None:
    result = {
        "status": "found",
        "calls": [
            {"name": "main", "kind": "function", "path": "m.py", "line": 9, "character": 5,
             "preview": "run()"},
            {"name": "other", "kind": "function", "path": "o.py", "line": 1, "character": 1},
        ],
    }  # fmt: skip
    assert intel.calls(result) == ["m.py:9:5: main: run()", "o.py:1:1: other"]
    callers = {**result, "count": 2, "direction": "incoming", "item": {"name": "run"}}
    assert tool_text("call_hierarchy", callers).splitlines()[0] == "2 calls to run"
    callees = {**callers, "direction": "outgoing", "item": {"name": "main"}}
    assert tool_text("call_hierarchy", callees).splitlines()[0] == "2 calls from main"
    assert tool_text("call_hierarchy", {**callers, "count": 1, "item": None}) == (
        "1 call\nm.py:9:5: main: run()\no.py:1:1: other"
    )


def test_edits_and_actions() -> None:
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x=1\n+x = 1\n"
    assert edits.edit({"changed": True, "diff": diff, "applied": True}) == diff.splitlines()
    assert notes.notes("format", {"changed": True, "applied": True}) == []
    assert notes.notes("format", {"changed": False, "diff": ""}) == ["already formatted"]
    assert notes.notes("format", {"changed": True, "applied": False}) == ["a dry run: not applied"]
    listed = {
        "actions": [
            {"index": 0, "title": "Remove import", "kind": "quickfix", "preferred": True},
            {"index": 1, "title": "Organize imports", "kind": "source.organizeImports"},
            {"index": 2, "title": "Plain"},
        ]
    }
    assert edits.actions(listed) == [
        "[0] Remove import (quickfix) *",
        "[1] Organize imports (source.organizeImports)",
        "[2] Plain",
    ]
    applied = {"applied": True, "files_changed": ["a.py"], "diff": diff}
    assert edits.actions(applied) == diff.splitlines()
    assert notes.notes("actions", applied) == ["changed 1 file"]
    assert notes.notes("actions", listed) == []
    assert notes.notes("rename", {"files_changed": 3, "edits": 5, "diff": diff}) == [
        "changed 3 files"
    ]
    assert notes.notes("rename", {"files_changed": 2, "applied": False}) == ["would change 2 files"]


def test_daemon_views() -> None:
    status = {"version": "0.1.0", "pid": 42, "uptime": 3725.5, "sessions": 1, "connections": 2,
              "socket": "/run/user/1/codeward/codeward.sock"}  # fmt: skip
    assert daemon.status(status) == [
        "codeward 0.1.0 (pid 42), up 1h02m",
        "sessions: 1, connections: 2",
        "socket: /run/user/1/codeward/codeward.sock",
    ]
    assert daemon.status({"uptime": 65})[0].endswith("up 1m05s")
    assert daemon.status({"uptime": "x"})[0].endswith("up ?")
    sessions = {
        "sessions": [
            {"id": "ab12", "root": "/p", "trusted": True, "clients": 1, "idle_seconds": 4.2,
             "servers": [{"name": "basedpyright", "language": "python", "state": "ready",
                          "pid": 99, "restarts": 0},
                         {"name": "ruff", "language": "python", "state": "stopped",
                          "pid": None, "restarts": 2}, "junk"]}
        ]
    }  # fmt: skip
    assert daemon.sessions(sessions) == [
        "ab12  /p  trusted  clients: 1  idle: 4s",
        "  basedpyright (python): ready, pid 99, restarts 0",
        "  ruff (python): stopped, restarts 2",
    ]
    assert daemon.sessions({"sessions": []}) == ["no sessions"]
    # A process the worktrees of one repository share: once, with its roots.
    shared = {
        "name": "gopls",
        "language": "go",
        "state": "running",
        "pid": 7,
        "restarts": 1,
        "roots": ["/r/main", "/r/wt1"],
    }
    worktrees = {
        "sessions": [
            {"id": "a1", "root": "/r/main", "trusted": True, "clients": 1, "idle_seconds": 0,
             "servers": [shared]},
            {"id": "b2", "root": "/r/wt1", "trusted": True, "clients": 0, "idle_seconds": 61,
             "servers": [shared, {"name": "tombi", "language": "toml", "state": "running",
                                  "pid": 8, "restarts": 0, "roots": ["/r/wt1"]}]},
        ]
    }  # fmt: skip
    assert daemon.sessions(worktrees) == [
        "a1  /r/main  trusted  clients: 1  idle: 0s",
        "  gopls: shared, pid 7",
        "b2  /r/wt1  trusted  clients: 0  idle: 1m01s",
        "  gopls: shared, pid 7",
        "  tombi (toml): running, pid 8, restarts 0",
        "shared by the roots of one repository:",
        "  gopls (go): running, pid 7, restarts 1",
        "    /r/main",
        "    /r/wt1",
    ]
    tools = {"tools": [{"name": "git_command", "description": "Run git.\nMore."},
                       {"name": "bare", "description": ""}, 3]}  # fmt: skip
    assert daemon.tools(tools) == ["git_command: Run git.", "bare"]


def test_lua_results() -> None:
    assert passthrough.lua({"result": "hello\nworld"}) == ["hello", "world"]
    assert passthrough.lua({"result": ""}) == [""]
    assert passthrough.lua({"result": None}) == []
    assert passthrough.lua({"result": {"a": [1, 2]}}) == values.to_json({"a": [1, 2]}).splitlines()
    assert passthrough.lua({"result": 4}) == ["4"]


# -- MCP content text -------------------------------------------------------------------------


def sym(name: str, kind: str, line: int, character: int, *children: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "line": line, "character": character,
            "children": list(children)}  # fmt: skip


def test_outline_groups_siblings_of_a_kind_with_their_positions() -> None:
    result = {
        "scope": "document",
        "path": "lib.py",
        "symbols": [
            sym("Shape", "class", 3, 7, sym("area", "method", 4, 9), sym("size", "method", 7, 9),
                sym("SIDES", "constant", 9, 5)),
            sym("a", "function", 12, 5),
            sym("b", "function", 14, 11),  # `async def`: another character
            sym("c", "function", 16, 5),
            {"name": "odd", "kind": "enum_member"},  # no position
            sym("T", "type_parameter", 18, 1),
            "junk",
        ],
    }  # fmt: skip
    assert outline.outline(result) == [
        "class@7 Shape:3",
        " fn@9 area:4 size:7",
        " const@5 SIDES:9",
        "fn a:12:5 b:14:11 c:16:5",
        "member odd",
        "type@1 T:18",
    ]
    assert outline.outline({"scope": "document", "symbols": "bad"}) == []


def test_outline_quotes_names_that_would_not_read_as_one() -> None:
    result = {
        "symbols": [
            sym("adds two numbers", "function", 1, 4),
            sym("404", "key", 2, 1),
            sym("", "variable", 3, 1),
            sym('say "hi"', "string", 4, 1),
            sym("std::vector", "class", 5, 12),
            sym("label:", "key", 6, 1),
            sym("größe", "variable", 7, 1),
        ]
    }
    assert outline.outline(result) == [
        'fn@4 "adds two numbers":1',
        'key@1 "404":2',
        'var@1 "":3',
        'string@1 "say \\"hi\\"":4',
        "class@12 std::vector:5",
        'key@1 "label:":6',
        "var@1 größe:7",
    ]


def test_a_flat_outline_says_each_runs_container() -> None:
    def flat(name: str, kind: str, line: int, container: str | None) -> dict[str, Any]:
        return {"name": name, "kind": kind, "container": container, **loc("a.php", line, 5)}

    result = {
        "scope": "document",
        "symbols": [
            flat("Shape", "class", 2, None),
            flat("area", "method", 3, "Shape"),
            flat("size", "method", 5, "Shape"),
            flat("run", "method", 9, "Job"),
            flat("main", "function", 12, None),
        ],
    }
    assert outline.outline(result) == [
        "class@5 Shape:2",
        "fn@5 area:3 size:5 (in Shape)",
        "fn@5 run:9 (in Job)",
        "fn@5 main:12",
    ]


def test_outline_workspace_matches_print_as_locations() -> None:
    workspace = {
        "scope": "workspace",
        "symbols": [
            {"name": "area", "kind": "method", "container": "Shape", **loc("lib.py", 4, 9)}
        ],
    }
    assert outline.outline(workspace) == ["lib.py:4:9: method area (in Shape)"]


def test_restricted_is_said_unless_the_reader_was_told() -> None:
    result = {"status": "found", "symbols": [sym("f", "function", 1, 5)], "restricted": True}
    assert tool_text("get_symbols", result) == f"fn@5 f:1\n({notes.RESTRICTED})"
    assert tool_text("get_symbols", result, told_restricted=True) == "fn@5 f:1"


def test_tool_text_is_compact_never_json() -> None:
    refs = {"status": "found", "count": 2, "partial": True,
            "references": [loc("a.py", 1, 5, "f(x)"), loc("b.py", 9, 1, "g = f")]}  # fmt: skip
    assert tool_text("find_references", refs) == (
        "2 references\na.py:1:5: f(x)\nb.py:9:1: g = f\n"
        "(partial result: a language server was still loading; try again shortly)"
    )
    missing = {"status": "not_found", "count": 0, "partial": False}
    assert tool_text("go_to_definition", missing) == "(no definition found)"
    assert tool_text("get_hover_info", {"status": "not_found"}) == ("(no hover information)")
    git = {"exit_code": 0, "output": "", "stderr": "", "truncated": False, "parsed": None}
    assert tool_text("git_command", git) == "(no output)"
    long = {**git, "output": "a\nb\n", "stderr": "warning: x\n", "truncated": True}
    assert tool_text("git_command", long) == "a\nb\nwarning: x\n(output truncated)"
    diags = {"diagnostics": [], "count": 0, "truncated": False}
    assert tool_text("get_diagnostics", diags) == "(0 diagnostics)"
    assert tool_text("new_tool", {"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'
    assert tool_text("find_references", [1]) == "[1]"


def test_the_text_carries_what_an_agent_passes_back_and_what_failed() -> None:
    digest = "sha256:" + "0" * 64
    diags = {"diagnostics": [], "count": 0, "truncated": False, "content_hash": digest}
    assert tool_text("get_diagnostics", diags) == f"(content_hash: {digest})\n(0 diagnostics)"
    edited = {"path": "a.py", "content_hash": digest, "diff": "", "written": False,
              "changed": False, "diagnostics_after": []}  # fmt: skip
    assert tool_text("edit_file", edited) == f"(content_hash: {digest})\n(no change)"
    missing = {"actions": [], "errors": [{"server": "ruff", "message": "Not installed."}]}
    assert tool_text("get_code_actions", missing) == ("(no code actions from ruff: Not installed.)")
    listed = {**missing, "actions": [{"index": 0, "title": "Fix"}]}
    assert tool_text("get_code_actions", listed) == (
        "[0] Fix\n(no code actions from ruff: Not installed.)"
    )


def test_error_text_names_the_kind_and_adds_gits_words() -> None:
    assert error_text("Not allowed.", "subcommand_not_allowed") == (
        "Not allowed. [subcommand_not_allowed]"
    )
    details = {"exit_code": 128, "stderr": "fatal: bad\n", "output": " "}
    failed = error_text("git show failed.", "git_failed", details)
    assert failed == "git show failed. [git_failed]\nfatal: bad"
    assert error_text("Plain.", None) == "Plain."


def test_diagnostics_notes_say_what_was_not_checked() -> None:
    result = {
        "diagnostics": [],
        "count": 0,
        "partial": True,
        "unchecked_files": 3,
        "errors": [{"server": "ruff", "message": "The ruff language server is not installed."}],
    }
    said = notes.notes("diagnostics", result)
    assert not any(s.startswith("partial result") for s in said)  # the budget says why
    assert "no diagnostics from ruff: The ruff language server is not installed." in said
    assert any(s.startswith("3 files not checked") for s in said)
    assert said[-1] == "0 diagnostics"


def test_diagnostics_notes_say_what_each_server_checked() -> None:
    result = {
        "diagnostics": [],
        "count": 0,
        "partial": True,
        "unchecked_files": 1303,
        "servers": [
            {"name": "basedpyright", "files_checked": 300, "files_total": 1603, "complete": False},
            {"name": "ruff", "files_checked": 1603, "files_total": 1603, "complete": True},
        ],
    }
    said = notes.notes("diagnostics", result)
    assert said[0] == (
        "checked: basedpyright: 300 of 1,603 files; ruff: all (ask again to check the rest)"
    )
    assert not any("not checked" in s or s.startswith("partial result") for s in said)
    done = {**result, "partial": False, "servers": [result["servers"][1]]}
    assert notes.notes("diagnostics", done)[0] == "checked: ruff: all"
    assert "(checked: ruff: all)" in tool_text("get_diagnostics", done)
    capped = {**result, "servers": [{**result["servers"][0], "stopped": "memory"}]}
    assert notes.notes("diagnostics", capped)[0] == (
        "checked: basedpyright: 300 of 1,603 files (near its memory cap) (ask again to check "
        "the rest)"
    )
