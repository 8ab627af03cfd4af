"""TypeScript and JavaScript end to end on the real typescript-language-server (typescript
5; one server start): diagnostics (fresh after an edit on disk), hover, definition across
files, references, symbols, formatting, code actions and rename, with non-ASCII text
before the symbols (tsserver takes utf-16 positions: 😀 is two units)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.langs_support import at, open_project, patient_config, places
from tests.lsp_support import needs

pytestmark = needs("typescript-language-server")

UTIL = """\
/** Doubles x, as text. */
export function twice(x: number): string {
  return String(x * 2);
}

export class Counter {
  count = 0;
  bump(): number {
    return ++this.count;
  }
}
"""

MAIN = """\
import { twice } from "./util";

const s = "é😀中"; const out: string = twice(2); const bad: number = "no";
const c = new Counter();
console.log(s, out, c.bump(), twice(3), bad);
"""

SEALED = """\
function frozen(target: Function, context: ClassDecoratorContext): void {
  console.log(target, context);
}

/** A counter that nothing extends: its JSDoc and its decorator come before its name. */
@frozen
export class Sealed {
  /** Its count. */
  count = 0;
}
"""

FILES = {
    "tsconfig.json": (
        '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs",'
        ' "allowJs": true, "checkJs": true, "noEmit": true}, "include": ["src"]}\n'
    ),
    "src/util.ts": UTIL,
    "src/main.ts": MAIN,
    "src/lib.js": "/** @param {number} a */\nexport function half(a) {\n  return a / 2;\n}\n",
    "src/use.js": (
        'import { half } from "./lib";\n\nconst t = "é😀"; console.log(t, half(4), half("x"));\n'
    ),
    "src/ugly.ts": "export  const   y=1\n",
    "src/sealed.ts": SEALED,
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


async def test_typescript_and_javascript(open_client: OpenClient, project: Path) -> None:
    client = await open_project(open_client, project, FILES)
    # Workspace symbols as the session's first call: tsserver has no project until a file
    # is open ("No Project"); one is opened and loaded first.
    found = await client.tool(
        "get_symbols", path="src/main.ts", scope="workspace", query="twice"
    )  # TypeScript's server only (tsconfig.json is JSON)
    assert [(s["name"], s["path"], s["line"]) for s in found["symbols"]] == [
        ("twice", "src/util.ts", 2)
    ]
    assert not found["partial"]
    # tsserver's range of a class begins at its decorator: the class is shown at its name.
    found = await client.tool("get_symbols", scope="workspace", query="Sealed")
    assert [
        (s["name"], s["kind"], s["path"], s["line"], s["character"]) for s in found["symbols"]
    ] == [
        (
            "Sealed",
            "class",
            "src/sealed.ts",
            7,
            at(project, "src/sealed.ts", "Sealed {")["character"],
        )
    ]

    # Diagnostics, columns in code points after "é😀中".
    result = await client.tool("get_diagnostics", path="src/main.ts")
    shown = sorted((d["line"], d["column"], d["message"]) for d in result["diagnostics"])
    bad, counter = at(project, "src/main.ts", "bad"), at(project, "src/main.ts", "Counter")
    assert shown == [
        (bad["line"], bad["character"], "Type 'string' is not assignable to type 'number'."),
        (counter["line"], counter["character"], "Cannot find name 'Counter'."),
    ]
    # JavaScript, checked through JSDoc.
    result = await client.tool("get_diagnostics", path="src/use.js")
    wrong = at(project, "src/use.js", '"x"')
    assert [(d["line"], d["column"]) for d in result["diagnostics"]] == [
        (wrong["line"], wrong["character"])
    ]
    # Fresh after an edit on disk.
    (project / "src/use.js").write_text(FILES["src/use.js"].replace('half("x")', "half(8)"))
    result = await client.tool("get_diagnostics", path="src/use.js")
    assert result["diagnostics"] == []

    # Hover and definition across files, in TypeScript and in JavaScript.
    call = at(project, "src/main.ts", "twice(2")
    shown = await client.tool("get_hover_info", **call)
    assert (shown["signature"], shown["kind"]) == ("twice(x: number): string", "alias")
    assert shown["docs"] == "Doubles x, as text." and not shown["partial"]
    definition = await client.tool("go_to_definition", **call)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == (
        "src/util.ts",
        2,
    )
    assert definition["definition"]["character"] == at(project, "src/util.ts", "twice")["character"]
    half = at(project, "src/use.js", "half(4")
    shown = await client.tool("get_hover_info", **half)
    assert shown["signature"] == "half(a: number): number"
    definition = await client.tool("go_to_definition", **half)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == ("src/lib.js", 2)

    # References, with the declaration.
    refs = await client.tool("find_references", **call, include_declaration=True)
    assert places(refs["references"]) == [
        ("src/main.ts", 1),
        ("src/main.ts", 3),
        ("src/main.ts", 5),
        ("src/util.ts", 2),
    ]

    # Document symbols: the outline.
    outline = await client.tool("get_symbols", path="src/util.ts")
    assert [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]] == [
        ("Counter", "class", 6),
        ("twice", "function", 2),
    ] or [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]] == [
        ("twice", "function", 2),
        ("Counter", "class", 6),
    ]

    # Formatting, shown and not applied.
    formatted = await client.tool("format_code", path="src/ugly.ts", apply=False)
    assert formatted["changed"] and "+export const y = 1" in formatted["diff"]
    assert (project / "src/ugly.ts").read_text() == FILES["src/ugly.ts"]

    # A quick fix: the missing import, applied.
    actions = await client.tool("get_code_actions", path="src/main.ts", line=counter["line"])
    titles = [a["title"] for a in actions["actions"]]
    fix = next(t for t in titles if "import" in t.lower() and "./util" in t)
    applied = await client.tool(
        "get_code_actions", path="src/main.ts", line=counter["line"], apply=fix
    )
    assert applied["files_changed"] == ["src/main.ts"]
    assert "Counter" in (project / "src/main.ts").read_text().splitlines()[0]

    # Rename across files, from the declaration (at an import, tsserver renames the alias).
    declared = at(project, "src/util.ts", "twice")
    renamed = await client.tool("rename_symbol", **declared, new_name="double")
    assert sorted(renamed["files_changed"]) == ["src/main.ts", "src/util.ts"]
    assert "export function double(x: number)" in (project / "src/util.ts").read_text()
    assert (project / "src/main.ts").read_text().count("double(") == 2
