"""HTML, CSS, SCSS and LESS on the real vscode-html- and vscode-css-language-server."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import OpenClient
from tests.real_servers import ask, messages, require, unsupported, where, write

PAGE = (
    "<html>\n<head><style>p { color: red; }</style></head>\n<body>\n<div>hi</div>\n"
    "<script>\nfunction total() { return 1; }\ntotal();\n</script>\n</body>\n</html>\n"
)
STYLE = ":root { --main: blue; }\n.box { color: var(--main); colr: red; }\n"
SCSS = "$accent: red;\n.a { color: $accent; }\n.b { border-color: $accent; }\n"
LESS = "@accent: red;\n.a { color: @accent; }\n"
HTML, CSS = "vscode-html-language-server", "vscode-css-language-server"


async def test_html(open_client: OpenClient, project: Path) -> None:
    require(HTML)
    write(project, {"index.html": PAGE})
    client = await open_client(project)

    # HTML itself is not validated; the embedded style and script are, fresh after an edit
    assert messages(await ask(client, "get_diagnostics", path="index.html")) == []
    (project / "index.html").write_text(PAGE.replace("total();", "total(;").replace("colo", "co"))
    broken = await ask(client, "get_diagnostics", path="index.html")
    assert sorted(messages(broken)) == [(2, "Unknown property: 'cor'"), (7, "')' expected.")]
    (project / "index.html").write_text(PAGE)
    assert messages(await ask(client, "get_diagnostics", path="index.html")) == []

    hover = await ask(client, "get_hover_info", path="index.html", line=4, character=2)
    assert "div element" in hover["docs"]
    definition = await ask(client, "go_to_definition", path="index.html", line=7, character=1)
    assert where(definition["definition"]) == ("index.html", 6, 10)
    refs = await ask(client, "find_references", path="index.html", line=6, character=10,
                     include_declaration=True)  # fmt: skip
    assert [where(r) for r in refs["references"]] == [("index.html", 6, 10), ("index.html", 7, 1)]
    outline = await ask(client, "get_symbols", path="index.html", all=True)
    names = [s["name"] for s in outline["symbols"]]
    assert "total" in names and "div" in names
    await unsupported(client, HTML, "get_symbols", path="index.html", scope="workspace")

    formatted = await ask(client, "format_code", path="index.html", apply=False)
    assert "+    <div>hi</div>\n" in formatted["diff"]
    renamed = await ask(client, "rename_symbol", path="index.html", line=4, character=2,
                        new_name="section")  # fmt: skip
    assert renamed["files_changed"] == ["index.html"]
    assert "<section>hi</section>" in (project / "index.html").read_text()
    await unsupported(client, HTML, "get_code_actions", path="index.html", line=4)


async def test_css_scss_less(open_client: OpenClient, project: Path) -> None:
    require(CSS)
    write(project, {"style.css": STYLE, "theme.scss": SCSS, "theme.less": LESS})
    client = await open_client(project)

    found = await ask(client, "get_diagnostics", path="style.css")
    assert messages(found) == [(2, "Unknown property: 'colr'")]
    assert found["diagnostics"][0]["column"] == STYLE.splitlines()[1].index("colr") + 1
    (project / "style.css").write_text(STYLE.replace("colr", "color"))
    assert messages(await ask(client, "get_diagnostics", path="style.css")) == []
    (project / "style.css").write_text(STYLE)
    (project / "theme.scss").write_text(SCSS.replace("$accent; }", "$accent;", 1))
    assert messages(await ask(client, "get_diagnostics", path="theme.scss")) == [(4, "} expected")]
    assert messages(await ask(client, "get_diagnostics", path="theme.less")) == []
    (project / "theme.scss").write_text(SCSS)

    hover = await ask(client, "get_hover_info", path="style.css", line=2, character=8)
    assert "color of an element" in hover["docs"]
    definition = await ask(client, "go_to_definition", path="style.css", line=2, character=23)
    assert where(definition["definition"]) == ("style.css", 1, 9)
    refs = await ask(client, "find_references", path="theme.scss", line=1, character=2,
                     include_declaration=True)  # fmt: skip
    assert [where(r)[1] for r in refs["references"]] == [1, 2, 3]
    less = await ask(client, "go_to_definition", path="theme.less", line=2, character=14)
    assert where(less["definition"]) == ("theme.less", 1, 1)

    outline = await ask(client, "get_symbols", path="style.css")
    assert [s["name"] for s in outline["symbols"]] == [":root", ".box"]
    await unsupported(client, CSS, "get_symbols", path="style.css", scope="workspace")

    formatted = await ask(client, "format_code", path="style.css", apply=False)
    assert "+.box {\n+    color: var(--main);\n" in formatted["diff"]
    # its quick fixes are commands VS Code itself carries out (they carry no edit)
    actions = await ask(client, "get_code_actions", path="style.css", line=2)
    assert actions["actions"][0]["title"] == "Rename to 'color'"
    renamed = await ask(client, "rename_symbol", path="theme.scss", line=1, character=2,
                        new_name="$brand")  # fmt: skip
    assert renamed["edits"] == 3 and (project / "theme.scss").read_text().count("$brand") == 3
