"""The code-intelligence tools end to end on Go (gopls) and C (clangd)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import OpenClient
from tests.intel_support import pos, where, write
from tests.lsp_support import needs

GO_FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "main.go": """\
package main

import (
\t"fmt"

\t"example.com/demo/lib"
)

func main() {
\ttotal := lib.Add(1, 2)
\tfmt.Println(total, lib.Twice(3))
}
""",
    "lib/lib.go": """\
package lib

// Add returns the sum of a and b.
func Add(a, b int) int {
\treturn a + b
}
""",
    "lib/more.go": """\
package lib

// Twice doubles a.
func Twice(a int) int {
\treturn Add(a, a)
}
""",
}


@needs("gopls")
async def test_go(open_client: OpenClient, project: Path) -> None:
    write(project, GO_FILES)
    client = await open_client(project)
    line, character = pos(project, "main.go", "Add(1")
    # Definition in another package of the module.
    result = await client.tool("go_to_definition", path="main.go", line=line, character=character)
    assert where(result["definition"]) == ("lib/lib.go", 4)
    assert result["definition"]["preview"] == "func Add(a, b int) int {"
    # The standard library becomes go:fmt.
    line, character = pos(project, "main.go", "Println")
    result = await client.tool("go_to_definition", path="main.go", line=line, character=character)
    assert result["definition"]["path"] == "go:fmt"
    assert result["definition"]["preview"].startswith("func Println(")
    hover = await client.tool("get_hover_info", path="main.go", line=line, character=character)
    assert hover["status"] == "found" and "Println" in hover["signature"]
    assert hover["module"] == "fmt" and hover["kind"] == "func"
    # References across files, without and with the declaration.
    line, character = pos(project, "lib/lib.go", "Add(a")
    result = await client.tool("find_references", path="lib/lib.go", line=line, character=character)
    assert [where(r) for r in result["references"]] == [("lib/more.go", 5), ("main.go", 10)]
    result = await client.tool(
        "find_references",
        path="lib/lib.go",
        line=line,
        character=character,
        include_declaration=True,
    )
    assert [where(r) for r in result["references"]] == [
        ("lib/lib.go", 4),
        ("lib/more.go", 5),
        ("main.go", 10),
    ]
    # Hover on a project function: its signature and doc comment.
    hover = await client.tool("get_hover_info", path="lib/lib.go", line=line, character=character)
    assert hover["signature"].startswith("func Add(a") and "sum of a and b" in hover["docs"]
    # Incoming calls.
    result = await client.tool("call_hierarchy", path="lib/lib.go", line=line, character=character)
    assert [(c["name"], c["path"], c["line"]) for c in result["calls"]] == [
        ("Twice", "lib/more.go", 5),
        ("main", "main.go", 10),
    ]
    # Document symbols.
    result = await client.tool("get_symbols", path="lib/more.go")
    assert [(s["name"], s["kind"], s["line"]) for s in result["symbols"]] == [
        ("Twice", "function", 4)
    ]


C_FILES = {
    "util.h": (
        "#ifndef UTIL_H\n#define UTIL_H\n/* Adds two numbers. */\nint add(int a, int b);\n#endif\n"
    ),
    "util.c": '#include "util.h"\n\nint add(int a, int b) { return a + b; }\n',
    "main.c": """\
#include <stdio.h>
#include "util.h"

int main(void) {
    int total = add(1, 2);
    printf("%d\\n", add(total, 3));
    return 0;
}
""",
}


@needs("clangd")
async def test_c(open_client: OpenClient, project: Path) -> None:
    write(project, C_FILES)
    (project / "compile_flags.txt").write_text("-I.\n")
    client = await open_client(project)
    # Workspace symbols as the session's first call: clangd (no background index) knows
    # the file opened for it and its headers, never util.c: partial, not a plain not_found.
    found = await client.tool("get_symbols", scope="workspace", query="add")
    assert [(s["name"], s["path"]) for s in found["symbols"]] == [("add", "util.h")]
    assert found["partial"] is True
    line, character = pos(project, "main.c", "add(1")
    result = await client.tool("go_to_definition", path="main.c", line=line, character=character)
    assert result["status"] == "found"
    assert {d["path"] for d in result.get("definitions") or [result["definition"]]} <= {
        "util.h",
        "util.c",
    }
    result = await client.tool("find_references", path="main.c", line=line, character=character)
    found = [where(r) for r in result["references"]]
    assert ("main.c", 5) in found and ("main.c", 6) in found
    assert ("util.h", 4) not in found
    # From the declaration in the header: left out unless asked for.
    line, character = pos(project, "util.h", "add")
    result = await client.tool("find_references", path="util.h", line=line, character=character)
    assert ("util.h", 4) not in [where(r) for r in result["references"]]
    assert {("main.c", 5), ("main.c", 6)} <= {where(r) for r in result["references"]}
    result = await client.tool(
        "find_references", path="util.h", line=line, character=character, include_declaration=True
    )
    assert ("util.h", 4) in [where(r) for r in result["references"]]
    line, character = pos(project, "main.c", "add(1")
    hover = await client.tool("get_hover_info", path="main.c", line=line, character=character)
    assert hover["status"] == "found" and hover["kind"] == "function"
    assert hover["signature"] == "int add(int a, int b)"
    assert "Adds two numbers." in (hover["docs"] or "")
    # A system header becomes an indicator.
    line, character = pos(project, "main.c", "printf")
    result = await client.tool("go_to_definition", path="main.c", line=line, character=character)
    assert {d["path"] for d in result.get("definitions") or [result["definition"]]} == {"c:stdio.h"}
    line, character = pos(project, "main.c", "total =")
    hover = await client.tool("get_hover_info", path="main.c", line=line, character=character)
    assert hover["kind"] == "variable" and hover["type"] == "int"
