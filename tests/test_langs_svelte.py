"""Svelte end to end on the real svelte-language-server (typescript 5; one server start):
diagnostics of a component's TypeScript (fresh after an edit on disk), hover, definition
into a .ts module, references, symbols, formatting, code actions and rename, with
non-ASCII text before the symbols (utf-16 positions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.langs_support import at, open_project, patient_config
from tests.lsp_support import needs

pytestmark = needs("svelte-language-server")

APP = """\
<script lang="ts">
  import { twice } from "./lib";
  let s = "é😀中"; let n: number = twice(2); let bad: string = 5;
</script>

<p>{s} {n} {bad} {twice(3)}</p>
"""

FIX = """\
<script lang="ts">
  const m = Math.flor(2.5);
</script>

<p>{m}</p>
"""

FILES = {
    "package.json": '{"name": "demo", "private": true, "type": "module"}\n',
    "tsconfig.json": (
        '{"compilerOptions": {"strict": true, "module": "esnext", "target": "es2020",'
        ' "moduleResolution": "bundler", "verbatimModuleSyntax": true}}\n'
    ),
    "src/lib.ts": (
        "/** Doubles x. */\nexport function twice(x: number): number {\n  return x * 2;\n}\n"
    ),
    "src/App.svelte": APP,
    "src/Ugly.svelte": "<script>\nlet   a=1\n</script>\n<p>{a}</p>\n",
    "src/Fix.svelte": FIX,
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


async def test_svelte(open_client: OpenClient, project: Path) -> None:
    client = await open_project(open_client, project, FILES)
    # Diagnostics of the component's script, in code points after "é😀中".
    result = await client.tool("get_diagnostics", path="src/App.svelte")
    bad = at(project, "src/App.svelte", "bad")
    errors = [
        (d["line"], d["column"], d["message"])
        for d in result["diagnostics"]
        if d["severity"] == "error"
    ]
    assert errors == [
        (bad["line"], bad["character"], "Type 'number' is not assignable to type 'string'.")
    ]
    assert "partial" not in result
    # Fresh after an edit on disk.
    (project / "src/App.svelte").write_text(APP.replace("string = 5", 'string = "5"'))
    result = await client.tool("get_diagnostics", path="src/App.svelte")
    assert [d for d in result["diagnostics"] if d["severity"] == "error"] == []

    # Hover and definition into the .ts module.
    call = at(project, "src/App.svelte", "twice(2")
    shown = await client.tool("get_hover_info", **call)
    assert (shown["signature"], shown["kind"]) == ("twice(x: number): number", "alias")
    assert shown["docs"] == "Doubles x." and not shown["partial"]
    definition = await client.tool("go_to_definition", **call)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == ("src/lib.ts", 2)

    # References within the component (the import, the script, the markup).
    refs = await client.tool("find_references", **call, include_declaration=True)
    lines = sorted(r["line"] for r in refs["references"] if r["path"] == "src/App.svelte")
    assert lines == [2, 3, 6]

    # Workspace symbols reach the TypeScript module.
    found = await client.tool(
        "get_symbols", path="src/App.svelte", scope="workspace", query="twice"
    )
    assert {(s["path"], s["line"]) for s in found["symbols"]} == {("src/lib.ts", 2)}

    # Document symbols of the component: its script's names, in code points.
    outline = await client.tool("get_symbols", path="src/App.svelte", all=True)
    assert [(s["name"], s["line"]) for s in outline["symbols"]] == [("script", 1), ("p", 6)]
    inside = [(c["name"], c["line"], c["character"]) for c in outline["symbols"][0]["children"]]
    expected = [at(project, "src/App.svelte", name) for name in ("twice", "s =", "n:", "bad")]
    assert inside == [
        (name, e["line"], e["character"])
        for name, e in zip(("twice", "s", "n", "bad"), expected, strict=True)
    ]

    # Formatting (prettier's Svelte plugin), shown and not applied.
    formatted = await client.tool("format_code", path="src/Ugly.svelte", apply=False)
    assert formatted["changed"] and "+    let a = 1;" in formatted["diff"]
    assert (project / "src/Ugly.svelte").read_text() == FILES["src/Ugly.svelte"]

    # Code actions at the script, and a rename of a component's variable.
    actions = await client.tool("get_code_actions", path="src/App.svelte", line=call["line"])
    assert "Extract to function" in [a["title"] for a in actions["actions"]]
    # A diagnostic's quick fix: svelte-language-server offers it only when asked at the
    # diagnostic's own range, not the line's; listed, and applied.
    flor = at(project, "src/Fix.svelte", "flor")
    actions = await client.tool("get_code_actions", path="src/Fix.svelte", line=flor["line"])
    titles = [a["title"] for a in actions["actions"]]
    assert "Change spelling to 'floor'" in titles, titles
    await client.tool(
        "get_code_actions",
        path="src/Fix.svelte",
        line=flor["line"],
        apply="Change spelling to 'floor'",
    )
    assert (project / "src/Fix.svelte").read_text() == FIX.replace("flor", "floor")
    n = at(project, "src/App.svelte", "n:")
    renamed = await client.tool("rename_symbol", **n, new_name="total")
    assert renamed["files_changed"] == ["src/App.svelte"]
    text = (project / "src/App.svelte").read_text()
    assert "let total: number" in text and "{total}" in text
