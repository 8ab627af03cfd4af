"""Bash on the real bash-language-server, with Debian's shellcheck and shfmt."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import OpenClient
from tests.real_servers import ask, messages, require, where, write

LIB = 'greet() {\n  echo "hi $1"\n}\n'
MAIN = "#!/bin/bash\nsource ./lib.sh\ngreet   world\necho $name\n"
# the two forms of a function, each a file of its own, asked for first
FORMS = {"plain.sh": "hello() {\n  echo hi\n}", "keyword.sh": "function bye {\n  echo bye\n}\n"}


async def test_bash(open_client: OpenClient, project: Path) -> None:
    require("bash-language-server")
    write(project, {"lib.sh": LIB, "main.sh": MAIN, **FORMS})
    client = await open_client(project)

    # The outline of a file opened before the server read its settings (it answers `[]`
    # until then): both forms of a function.
    for name, function in (("plain.sh", "hello"), ("keyword.sh", "bye")):
        outline = await ask(client, "get_symbols", path=name)
        assert [(s["name"], s["kind"], s["line"]) for s in outline["symbols"]] == [
            (function, "function", 1)
        ]

    # shellcheck's diagnostics, fresh after an edit on disk
    found = await ask(client, "get_diagnostics", path="main.sh")
    assert (4, "name is referenced but not assigned.") in messages(found)
    assert {d["source"] for d in found["diagnostics"]} == {"shellcheck"}
    quote = next(d for d in found["diagnostics"] if d["code"] == "SC2086")
    assert (quote["line"], quote["column"], quote["end_column"]) == (4, 6, 11)
    (project / "main.sh").write_text(MAIN.replace("echo $name", 'name=x\necho "$name"'))
    assert messages(await ask(client, "get_diagnostics", path="main.sh")) == []
    (project / "main.sh").write_text(MAIN)

    hover = await ask(client, "get_hover_info", path="main.sh", line=3, character=2)
    assert "greet" in hover["docs"] and "lib.sh" in hover["docs"]
    definition = await ask(client, "go_to_definition", path="main.sh", line=3, character=2)
    assert where(definition["definition"]) == ("lib.sh", 1, 1)
    refs = await ask(
        client, "find_references", path="lib.sh", line=1, character=1, include_declaration=True
    )
    assert sorted(where(r) for r in refs["references"]) == [("lib.sh", 1, 1), ("main.sh", 3, 1)]

    outline = await ask(client, "get_symbols", path="lib.sh")
    assert [(s["name"], s["kind"]) for s in outline["symbols"]] == [("greet", "function")]
    symbols = await ask(client, "get_symbols", path="main.sh", scope="workspace", query="gre")
    assert [(s["name"], s["path"]) for s in symbols["symbols"]] == [("greet", "lib.sh")]

    formatted = await ask(client, "format_code", path="main.sh", apply=False)
    assert "-greet   world\n+greet world\n" in formatted["diff"]

    actions = await ask(client, "get_code_actions", path="main.sh", line=4)
    titles = [a["title"] for a in actions["actions"]]
    assert any("SC2086" in title for title in titles), titles
    fixed = await ask(
        client,
        "get_code_actions",
        path="main.sh",
        line=4,
        apply=titles.index(next(t for t in titles if "SC2086" in t)),
    )
    assert fixed["applied"] and 'echo "$name"' in (project / "main.sh").read_text()

    renamed = await ask(
        client, "rename_symbol", path="main.sh", line=3, character=1, new_name="welcome"
    )
    assert sorted(renamed["files_changed"]) == ["lib.sh", "main.sh"]
    assert (project / "lib.sh").read_text().startswith("welcome() {")
    assert "welcome   world" in (project / "main.sh").read_text()
