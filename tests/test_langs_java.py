"""Java end to end on the real jdtls (one server start; slow: 5 to 36 s before it serves):
diagnostics (fresh after an edit on disk), hover, definition across files, references,
symbols, formatting, code actions and rename, in an Eclipse project (.project and
.classpath: no build tool to run), with non-ASCII text before the symbols (utf-16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.langs_support import at, open_project, patient_config, places
from tests.lsp_support import needs

pytestmark = [pytest.mark.slow, needs("jdtls")]

UTIL = """\
package demo;

public class Util {
    /** Doubles x. */
    public static int twice(int x) {
        return x * 2;
    }
}
"""

MAIN = """\
package demo;

public class Main {
    public static void main(String[] args) {
        String s = "é😀中"; int n = Util.twice(2); int bad = "no";
        System.out.println(s + n + Util.twice(3) + bad);
    }
}
"""

DOCUMENTED = """\
package demo;

/**
 * Documented: its javadoc comes before its name.
 */
public class Documented {
    /**
     * Halves x.
     */
    public static int halve(int x) {
        return x / 2;
    }
}
"""

FILES = {
    ".project": (
        '<?xml version="1.0" encoding="UTF-8"?>\n<projectDescription><name>demo</name>'
        "<comment></comment><projects></projects><buildSpec><buildCommand>"
        "<name>org.eclipse.jdt.core.javabuilder</name><arguments></arguments></buildCommand>"
        "</buildSpec><natures><nature>org.eclipse.jdt.core.javanature</nature></natures>"
        "</projectDescription>\n"
    ),
    ".classpath": (
        '<?xml version="1.0" encoding="UTF-8"?>\n<classpath>'
        '<classpathentry kind="src" path="src"/>'
        '<classpathentry kind="con" path="org.eclipse.jdt.launching.JRE_CONTAINER"/>'
        '<classpathentry kind="output" path="bin"/></classpath>\n'
    ),
    "src/demo/Util.java": UTIL,
    "src/demo/Main.java": MAIN,
    "src/demo/Ugly.java": "package demo;\nclass Ugly{int   a=1;}\n",
    "src/demo/Shape.java": "package demo;\n\npublic interface Shape {\n    int area();\n}\n",
    "src/demo/Square.java": (
        "package demo;\n\npublic class Square implements Shape {\n"
        "    public int area() {\n        return 4;\n    }\n}\n"
    ),
    "src/demo/Documented.java": DOCUMENTED,
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


async def test_java(open_client: OpenClient, project: Path) -> None:
    client = await open_project(open_client, project, FILES)
    # Diagnostics of the deliberate error, in code points after "é😀中".
    result = await client.tool("get_diagnostics", path="src/demo/Main.java")
    wrong = at(project, "src/demo/Main.java", '"no"')
    errors = [(d["line"], d["column"]) for d in result["diagnostics"] if d["severity"] == "error"]
    assert errors == [(wrong["line"], wrong["character"])]
    assert "String to int" in result["diagnostics"][0]["message"]
    # Fresh after an edit on disk.
    (project / "src/demo/Main.java").write_text(MAIN.replace('"no"', "4"))
    result = await client.tool("get_diagnostics", path="src/demo/Main.java")
    assert [d for d in result["diagnostics"] if d["severity"] == "error"] == []

    # Hover and definition across files.
    call = at(project, "src/demo/Main.java", "twice(2")
    shown = await client.tool("get_hover_info", **call)
    assert (shown["signature"], shown["kind"]) == ("int demo.Util.twice(int x)", "method")
    assert shown["module"] == "demo.Util"
    assert shown["docs"].startswith("Doubles x.") and not shown["partial"]
    definition = await client.tool("go_to_definition", **call)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == (
        "src/demo/Util.java",
        5,
    )

    # References, with the declaration.
    refs = await client.tool("find_references", **call, include_declaration=True)
    assert places(refs["references"]) == [
        ("src/demo/Main.java", 5),
        ("src/demo/Main.java", 6),
        ("src/demo/Util.java", 5),
    ]

    # Symbols: the file's outline, and the workspace.
    outline = await client.tool("get_symbols", path="src/demo/Util.java")
    top = [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]]
    assert ("Util", "class", 3) in top
    found = await client.tool("get_symbols", scope="workspace", query="Util")
    assert ("Util", "src/demo/Util.java", 3) in [
        (s["name"], s["path"], s["line"]) for s in found["symbols"]
    ]
    # Javadoc before a name hides neither a class nor a method (jdtls lists methods too).
    for query, kind, line in (("Documented", "class", 6), ("halve", "method", 10)):
        found = await client.tool("get_symbols", scope="workspace", query=query)
        assert [(s["name"], s["kind"], s["path"], s["line"]) for s in found["symbols"]] == [
            (query, kind, "src/demo/Documented.java", line)
        ]

    # Formatting, shown and not applied.
    formatted = await client.tool("format_code", path="src/demo/Ugly.java", apply=False)
    assert formatted["changed"] and "+    int a = 1;" in formatted["diff"]

    # Type hierarchy, both ways, and the signature of a call being written.
    square = at(project, "src/demo/Square.java", "Square")
    supers = await client.tool("type_hierarchy", **square)
    assert supers["item"]["name"] == "Square" and supers["direction"] == "supertypes"
    assert ("Shape", "src/demo/Shape.java", 3) in [
        (t["name"], t["path"], t["line"]) for t in supers["types"]
    ]
    shape = at(project, "src/demo/Shape.java", "Shape")
    subs = await client.tool("type_hierarchy", **shape, direction="subtypes")
    assert [(t["name"], t["path"], t["line"]) for t in subs["types"]] == [
        ("Square", "src/demo/Square.java", 3)
    ]
    assert subs["count"] == 1 and not subs["partial"]
    inside = at(project, "src/demo/Main.java", "twice(2", offset=len("twice("))
    helped = await client.tool("signature_help", **inside)
    assert helped["status"] == "found"
    (signature,) = helped["signatures"]
    assert "twice(int x)" in signature["label"] and helped["active_parameter"] == 0
    assert [p["label"] for p in signature["parameters"]] == ["int x"]

    # A quick fix at the error, then a rename across files.
    (project / "src/demo/Main.java").write_text(MAIN)
    actions = await client.tool("get_code_actions", path="src/demo/Main.java", line=wrong["line"])
    assert any("String" in a["title"] for a in actions["actions"])
    declared = at(project, "src/demo/Util.java", "twice")
    renamed = await client.tool("rename_symbol", **declared, new_name="doubled")
    assert sorted(renamed["files_changed"]) == ["src/demo/Main.java", "src/demo/Util.java"]
    assert (project / "src/demo/Main.java").read_text().count("Util.doubled(") == 2
