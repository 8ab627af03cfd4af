"""The edit loop on gopls and clangd, from Lua and from the CLI, against one daemon process
for the whole module (its servers start once)."""

from __future__ import annotations

import json
from typing import Any

from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_client, shared_daemon
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient

__all__ = ["no_leaked_processes", "shared_client", "shared_daemon"]  # the module's fixtures

GO_MOD = "module example.com/loop\n\ngo 1.19\n"
LIB_GO = "package lib\n\n// Add sums.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
MAIN_GO = (
    'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/loop/lib"\n)\n\n'
    "func main() {\n\tfmt.Println(lib.Add(1, 2))\n}\n"
)
C_FILE = "int twice(int x) {\n    return 2 * x;\n}\n"


def by_file(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["file"]: f for f in result["diagnostics_after"]}


def insert(line: int, text: str) -> list[dict[str, Any]]:
    return [{"line": line, "character": 1, "end_line": line, "end_character": 1, "new_text": text}]


@needs("gopls")
async def test_gopls_introduce_move_resolve_and_break_another_file(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    """Every answer is whole: gopls's progress around its diagnosis of each change says
    when what it published stands, for the changed file (published in two passes) and for
    the other open files (sent again unchanged, not always published again), so none of
    them waits out the settle time or comes back partial."""
    root = shared_daemon.root
    apart = "package apart\n\n// Twice doubles.\nfunc Twice(x int) int {\n\treturn 2 * x\n}\n"
    write(
        root, {"go.mod": GO_MOD, "lib/lib.go": LIB_GO, "main.go": MAIN_GO, "apart/apart.go": apart}
    )
    client = shared_client
    for path in ("main.go", "apart/apart.go"):
        answer = await client.tool("get_diagnostics", path=path)
        assert answer["diagnostics"] == [] and not answer.get("partial"), answer
    broken = LIB_GO.replace("return a + b", 'return "no"')
    result = await client.tool("edit_file", path="lib/lib.go", content=broken)
    lib = by_file(result)["lib/lib.go"]
    assert [d["line"] for d in lib["introduced"]] == [5], result
    assert lib["introduced"][0]["source"] and lib["remaining"]["error"] == 1
    assert list(by_file(result)) == ["lib/lib.go"] and not result.get("partial"), result
    # only moved: a comment inserted above
    result = await client.tool(
        "edit_file", path="lib/lib.go", edits=insert(3, "// more\n// lines\n")
    )
    lib = by_file(result)["lib/lib.go"]
    assert lib["introduced"] == [] and lib["resolved"]["count"] == 0, result
    assert lib["remaining"]["error"] == 1
    # resolved
    fixed = (root / "lib/lib.go").read_text().replace('return "no"', "return a + b")
    result = await client.tool("edit_file", path="lib/lib.go", content=fixed)
    lib = by_file(result)["lib/lib.go"]
    assert lib["introduced"] == [] and lib["resolved"]["count"] == 1
    assert lib["resolved"]["diagnostics"][0]["line"] == 7  # where it was
    # a parameter dropped: main.go's call breaks, and the delta names main.go
    narrowed = fixed.replace("func Add(a, b int) int", "func Add(a int) int").replace(
        "return a + b", "return a"
    )
    result = await client.tool("edit_file", path="lib/lib.go", content=narrowed, mode="safe")
    assert result["refused"] and not result["written"], result
    assert (root / "lib/lib.go").read_text() == fixed
    main = by_file(result)["main.go"]
    assert not main["changed"] and main["introduced"][0]["line"] == 10
    result = await client.tool("edit_file", path="lib/lib.go", content=narrowed)
    assert by_file(result)["main.go"]["introduced"], result
    assert "apart/apart.go" not in by_file(result) and not result.get("partial"), result
    again = await client.tool("get_diagnostics", path="apart/apart.go")
    assert again["diagnostics"] == [] and not again.get("partial"), again


@needs("clangd")
async def test_clangd_introduce_move_resolve(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    write(shared_daemon.root, {"calc.c": C_FILE})
    client = shared_client
    first = await client.tool("get_diagnostics", path="calc.c")
    assert first["diagnostics"] == []
    result = await client.tool(
        "edit_file",
        path="calc.c",
        expected_hash=first["content_hash"],
        edits=[{"line": 2, "character": 12, "end_line": 2, "end_character": 13, "new_text": "y"}],
    )
    calc = by_file(result)["calc.c"]
    assert [(d["line"], d["severity"]) for d in calc["introduced"]] == [(2, "error")], result
    result = await client.tool("edit_file", path="calc.c", edits=insert(1, "\n\n/* moved */\n"))
    calc = by_file(result)["calc.c"]
    assert calc["introduced"] == [] and calc["remaining"]["error"] == 1, result
    result = await client.tool("get_diagnostics", path="calc.c", since=first["content_hash"])
    assert [d["line"] for d in result["introduced"]] == [5]
    text = (shared_daemon.root / "calc.c").read_text().replace("y * x", "2 * x")
    result = await client.tool("edit_file", path="calc.c", content=text)
    assert by_file(result)["calc.c"]["resolved"]["count"] == 1
    result = await client.tool("get_diagnostics", path="calc.c", since=first["content_hash"])
    assert result["introduced"] == [] and result["resolved"]["count"] == 0


@needs("clangd")
async def test_clangd_a_header_edit_reaches_the_files_that_include_it(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    """The other open C files are sent their unchanged text again: the one including the
    header is rebuilt and reports, the one that does not is taken quietly (clangd's file
    status), and neither waits out the settle time or comes back partial."""
    root = shared_daemon.root
    user = '#include "size.h"\nint twice(int x) {\n    return SIZE * x;\n}\n'
    write(root, {"size.h": "#define SIZE 2\n", "user.c": user, "apart.c": C_FILE})
    client = shared_client
    for path in ("user.c", "apart.c"):
        assert (await client.tool("get_diagnostics", path=path))["diagnostics"] == []
    result = await client.tool("edit_file", path="size.h", content="#define SIZE nope\n")
    files = by_file(result)
    assert [d["message"] for d in files["user.c"]["introduced"]] == [
        "Use of undeclared identifier 'nope'"
    ], result
    assert "apart.c" not in files and not result.get("partial"), result
    assert not any(f.get("partial") for f in files.values()), result
    result = await client.tool("edit_file", path="size.h", content="#define SIZE 2\n")
    assert by_file(result)["user.c"]["resolved"]["count"] == 1, result
    again = await client.tool("get_diagnostics", path="apart.c")
    assert again["diagnostics"] == [] and not again.get("partial"), again


LUA_BATCH = """
local kept, refused = {}, {}
for _, change in ipairs(args.changes) do
  local preview = codeward.call("edit_file", {path = change.path, content = change.content,
                                              mode = "preview"})
  local introduced = 0
  for _, file in ipairs(preview.diagnostics_after) do
    introduced = introduced + #file.introduced
  end
  if introduced == 0 then
    codeward.call("edit_file", {path = change.path, content = change.content})
    kept[#kept + 1] = change.path
  else
    refused[#refused + 1] = change.path
  end
end
return {kept = kept, refused = refused}
"""


@needs("clangd")
async def test_lua_previews_a_batch_and_applies_what_breaks_nothing(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    root = shared_daemon.root
    write(root, {"one.c": C_FILE, "two.c": C_FILE})
    changes = [
        {"path": "one.c", "content": C_FILE.replace("2 * x", "2 * missing")},
        {"path": "two.c", "content": "/* doubled */\n" + C_FILE},
    ]
    result = await shared_client.call(
        "lua/eval", {"source": LUA_BATCH, "args": {"changes": changes}}
    )
    assert result["result"] == {"kept": ["two.c"], "refused": ["one.c"]}
    assert (root / "one.c").read_text() == C_FILE
    assert (root / "two.c").read_text() == "/* doubled */\n" + C_FILE


@needs("basedpyright", "ruff")
def test_cli_edit_and_diagnostics_since(shared_daemon: SharedDaemon) -> None:
    root, env = shared_daemon.root, shared_daemon.env
    good = "def twice(x: int) -> int:\n    return 2 * x\n"
    write(root, {"cli.py": good})
    first = env.json("diagnostics", "cli.py", cwd=root)
    broken = good.replace("2 * x", "2 * nope")
    preview = env.run("edit", "cli.py", "--mode", "preview", cwd=root, stdin=broken)
    assert preview.returncode == 0, preview.stderr
    assert "-    return 2 * x" in preview.stdout and "+ cli.py:2:" in preview.stdout
    assert "preview: nothing written" in preview.stderr
    refused = env.run("edit", "cli.py", "--mode", "safe", cwd=root, stdin=broken)
    assert refused.returncode == 1 and "refused: nothing written" in refused.stderr
    assert refused.stdout.startswith("refused: the edit introduces ")
    assert (root / "cli.py").read_text() == good
    written = env.run(
        "--json", "edit", "cli.py", "--expected-hash", first["content_hash"], cwd=root, stdin=broken
    )
    assert written.returncode == 0 and json.loads(written.stdout)["written"]
    since = env.run("diagnostics", "cli.py", "--since", first["content_hash"], cwd=root)
    assert since.returncode == 0 and "+ cli.py:2:" in since.stdout, since.stdout
    stale = env.run("edit", "cli.py", "--expected-hash", first["content_hash"], cwd=root, stdin="")
    assert stale.returncode == 1 and "stale_edit" in stale.stderr
