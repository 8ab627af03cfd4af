"""The edit tools on Go (gopls renames, formats) and C (clangd formats)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.intel_support import pos, write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

GO_FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "main.go": (
        'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/demo/lib"\n)\n\n'
        "func main() {\n\tfmt.Println(lib.Add(1, 2))\n}\n"
    ),
    "lib/lib.go": "package lib\n\n// Add sums.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
}


@needs("gopls")
async def test_gopls_rename_and_format(client: RpcClient, project: Path) -> None:
    write(project, GO_FILES)
    line, character = pos(project, "lib/lib.go", "Add(a")
    result = await client.tool(
        "rename_symbol", path="lib/lib.go", line=line, character=character, new_name="Sum"
    )
    assert result["applied"] and result["files_changed"] == ["lib/lib.go", "main.go"]
    assert result["edits"] == 3  # the declaration, the call and the doc comment
    assert "+\tfmt.Println(lib.Sum(1, 2))" in result["diff"]
    assert "// Sum sums.\nfunc Sum(a, b int) int {" in (project / "lib/lib.go").read_text()
    assert "lib.Sum(1, 2)" in (project / "main.go").read_text()
    # Nothing to rename on a blank line.
    with pytest.raises(RpcFailure) as info:
        await client.tool("rename_symbol", path="main.go", line=2, character=1, new_name="x")
    assert info.value.kind == "invalid_arguments"
    # gofmt through gopls.
    (project / "lib/lib.go").write_text("package lib\n\nfunc Sum(a, b int) int {\nreturn a+b\n}\n")
    result = await client.tool("format_code", path="lib/lib.go")
    assert result["changed"] and result["applied"]
    assert (project / "lib/lib.go").read_text().endswith("{\n\treturn a + b\n}\n")


@needs("clangd")
async def test_clangd_format(client: RpcClient, project: Path) -> None:
    ugly = "int  add(int a,int b){return a+b;}\n"
    write(project, {"x.c": ugly})
    result = await client.tool("format_code", path="x.c", apply=False)
    assert result["changed"] and not result["applied"]
    assert "-int  add(int a,int b){return a+b;}" in result["diff"]
    assert (project / "x.c").read_text() == ugly
    result = await client.tool("format_code", path="x.c", start_line=1, end_line=1)
    assert result["changed"] and result["applied"]
    assert (project / "x.c").read_text() == "int add(int a, int b) { return a + b; }\n"
    result = await client.tool("format_code", path="x.c")
    assert not result["changed"]
