"""PHP end to end on the real intelephense (one server start): diagnostics (only once its
indexing ended: the `[]` it publishes before is no answer; fresh after an edit on disk),
hover, definition across files, references, symbols and formatting, with non-ASCII text
before the symbols (utf-16); rename and code actions are its paid features, so they are
`unsupported_by_server` errors naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.langs_support import at, failure, open_project, patient_config, places
from tests.lsp_support import needs

pytestmark = needs("intelephense")

UTIL = """\
<?php

namespace App;

class Util
{
    /** Doubles x. */
    public static function twice(int $x): int
    {
        return $x * 2;
    }
}
"""

INDEX = """\
<?php

require __DIR__ . "/src/Util.php";

use App\\Util;

$s = "é😀中"; $n = Util::twice(2); $bad = undefined_fn();
echo $s, $n, Util::twice(3), $bad;
"""

DOCUMENTED = """\
<?php

namespace App;

/**
 * Documented: its docblock comes before its name.
 */
final class Documented
{
    /**
     * Halves x.
     */
    public static function halve(int $x): int
    {
        return intdiv($x, 2);
    }
}
"""

FILES = {
    "src/Util.php": UTIL,
    "src/Documented.php": DOCUMENTED,
    "index.php": INDEX,
    "src/Ugly.php": "<?php\nfunction  ugly( $a ){return $a;}\n",
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


async def test_php(open_client: OpenClient, project: Path) -> None:
    client = await open_project(open_client, project, FILES)
    # The deliberate error, once indexed (not the `[]` published at didOpen).
    result = await client.tool("get_diagnostics", path="index.php")
    call = at(project, "index.php", "undefined_fn")
    assert [(d["line"], d["column"], d["message"]) for d in result["diagnostics"]] == [
        (call["line"], call["character"], "Undefined function 'undefined_fn'.")
    ]
    # Fresh after an edit on disk.
    (project / "index.php").write_text(INDEX.replace("undefined_fn()", "Util::twice(4)"))
    result = await client.tool("get_diagnostics", path="index.php")
    assert result["diagnostics"] == []

    # Hover and definition across files.
    twice = at(project, "index.php", "twice(2")
    shown = await client.tool("get_hover_info", **twice)
    assert shown["signature"] == "public static function twice(int $x): int"
    assert (shown["kind"], shown["module"]) == ("method", "App\\Util")
    assert shown["docs"].startswith("Doubles x.") and not shown["partial"]
    definition = await client.tool("go_to_definition", **twice)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == (
        "src/Util.php",
        8,
    )

    # References, with the declaration.
    refs = await client.tool("find_references", **twice, include_declaration=True)
    assert places(refs["references"]) == [
        ("index.php", 7),
        ("index.php", 7),
        ("index.php", 8),
        ("src/Util.php", 8),
    ]

    # Symbols: the file's outline, and the workspace.
    outline = await client.tool("get_symbols", path="src/Util.php")
    flat = [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]]
    assert ("App\\Util", "class", 5) in flat or ("Util", "class", 5) in flat
    found = await client.tool("get_symbols", scope="workspace", query="Util")  # no members
    assert [(s["name"], s["container"], s["path"], s["line"]) for s in found["symbols"]] == [
        ("Util", "App", "src/Util.php", 5)
    ]
    # A docblock before a name hides neither a class nor a method: shown at the name.
    for query, container, preview in (
        ("Documented", "App", "final class Documented"),
        ("halve", "App\\Documented", "public static function halve(int $x): int"),
    ):
        found = await client.tool("get_symbols", scope="workspace", query=query)
        named = at(project, "src/Documented.php", preview, offset=preview.index(query))
        assert [
            (s["name"], s["container"], s["line"], s["character"], s["preview"])
            for s in found["symbols"]
        ] == [(query, container, named["line"], named["character"], preview)]

    # Formatting, shown and not applied.
    formatted = await client.tool("format_code", path="src/Ugly.php", apply=False)
    assert formatted["changed"] and "+    return $a;" in formatted["diff"]

    # Rename and code actions are paid features: errors naming the server, not nothing.
    for tool, arguments in (
        ("rename_symbol", {**twice, "new_name": "double"}),
        ("get_code_actions", {"path": "index.php", "line": twice["line"]}),
    ):
        refused = await failure(client, tool, **arguments)
        assert refused.kind == "unsupported_by_server", refused.message
        assert "intelephense" in refused.message
    assert (project / "src/Util.php").read_text() == UTIL
