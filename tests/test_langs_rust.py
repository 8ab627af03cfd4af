"""Rust end to end on the real rust-analyzer (one server start): diagnostics (fresh after an
edit on disk), hover, definition across files, references, symbols, formatting, code
actions and rename, with a non-ASCII line before the symbols (rust-analyzer takes utf-8
positions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.langs_support import at, open_project, patient_config, places
from tests.lsp_support import needs

pytestmark = needs("rust-analyzer")

MAIN = """\
mod util;

fn main() {
    let s = "é😀中"; let n = util::twice(2); let bad: i32 = "no";
    let m = n + util::twice(3);
    println!("{} {} {}", s, m, bad);
}
"""

UTIL = """\
/// Doubles x.
pub fn twice(x: i32) -> i32 {
    x * 2
}

pub struct Point {
    pub x: f64,
}

pub fn   spaced( )->i32{ 1 }
"""

FILES = {
    "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/main.rs": MAIN,
    "src/util.rs": UTIL,
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


async def test_rust(open_client: OpenClient, project: Path) -> None:
    client = await open_project(open_client, project, FILES)
    # Workspace symbols as the session's first call: answered once it is quiescent, not
    # not_found from a cold index.
    found = await client.tool(
        "get_symbols", path="src/main.rs", scope="workspace", query="twice"
    )  # Rust's servers only (Cargo.toml is TOML)
    assert [(s["name"], s["path"], s["line"]) for s in found["symbols"]] == [
        ("twice", "src/util.rs", 2)
    ]
    assert not found["partial"]

    # Diagnostics of the deliberate error, its column in code points after "é😀中".
    result = await client.tool("get_diagnostics", path="src/main.rs")
    wrong = [d for d in result["diagnostics"] if "expected i32" in d["message"]]
    where = at(project, "src/main.rs", '"no"')
    assert [(d["line"], d["column"], d["severity"]) for d in wrong] == [
        (where["line"], where["character"], "error")
    ]
    assert "partial" not in result
    # Fresh after an edit on disk.
    (project / "src/main.rs").write_text(MAIN.replace('"no"', "7"))
    result = await client.tool("get_diagnostics", path="src/main.rs")
    assert not [d for d in result["diagnostics"] if d["severity"] == "error"]

    # Hover across files: the declaration, not the module path shown before it.
    call = at(project, "src/main.rs", "twice(2")
    shown = await client.tool("get_hover_info", **call)
    assert shown["signature"] == "pub fn twice(x: i32) -> i32"
    assert (shown["kind"], shown["module"], shown["docs"]) == (
        "function",
        "demo::util",
        "Doubles x.",
    )
    assert not shown["partial"]

    # Definition across files, and references (with the declaration).
    definition = await client.tool("go_to_definition", **call)
    assert (definition["definition"]["path"], definition["definition"]["line"]) == (
        "src/util.rs",
        2,
    )
    assert definition["definition"]["character"] == at(project, "src/util.rs", "twice")["character"]
    refs = await client.tool("find_references", **call, include_declaration=True)
    assert places(refs["references"]) == [
        ("src/main.rs", 4),
        ("src/main.rs", 5),
        ("src/util.rs", 2),
    ]

    # Document symbols.
    outline = await client.tool("get_symbols", path="src/util.rs")
    assert [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]] == [
        ("twice", "function", 2),
        ("Point", "struct", 6),
        ("spaced", "function", 10),
    ]

    # Formatting (rustfmt through rust-analyzer), shown and not applied.
    formatted = await client.tool("format_code", path="src/util.rs", apply=False)
    assert formatted["changed"] and not formatted["applied"]
    assert "+pub fn spaced() -> i32 {" in formatted["diff"]
    assert (project / "src/util.rs").read_text() == UTIL

    # Code actions at the call, and a rename across both files.
    actions = await client.tool("get_code_actions", path="src/main.rs", line=call["line"])
    assert actions["actions"], "rust-analyzer offers assists at a call"
    renamed = await client.tool("rename_symbol", **call, new_name="double")
    assert sorted(renamed["files_changed"]) == ["src/main.rs", "src/util.rs"]
    assert "pub fn double(x: i32)" in (project / "src/util.rs").read_text()
    assert (project / "src/main.rs").read_text().count("util::double(") == 2
