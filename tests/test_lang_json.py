"""JSON on the real vscode-json-language-server, with a schema from the project."""

from __future__ import annotations

from pathlib import Path

import trio

from tests.conftest import OpenClient
from tests.real_servers import ask, messages, require, schema_server, unsupported, write

SCHEMA = (
    '{"type": "object", "properties": {"name": {"type": "string", "description": "The '
    'name."}, "size": {"type": "number"}}}\n'
)
CONFIG = '{"$schema": "./schema.json", "name": 1, "size": 2}\n'
SERVER = "vscode-json-language-server"


async def test_json(open_client: OpenClient, project: Path, nursery: trio.Nursery) -> None:
    require(SERVER)
    port, connections = await schema_server(nursery)
    remote = f'{{"$schema": "http://127.0.0.1:{port}/schema.json", "a": 1}}\n'
    files = {"schema.json": SCHEMA, "config.json": CONFIG, "tsconfig.json": "{\n}\n"}
    write(project, {**files, "remote.json": remote})
    client = await open_client(project)

    # a schema named by URL is not fetched: the server asks codeward, which has no network
    found = await ask(client, "get_diagnostics", path="remote.json")
    assert connections == [], found

    # the schema in another file of the project: its type error, fresh after an edit
    found = await ask(client, "get_diagnostics", path="config.json")
    assert messages(found) == [(1, 'Incorrect type. Expected "string".')]
    assert found["diagnostics"][0]["column"] == CONFIG.index("1,") + 1
    (project / "config.json").write_text(CONFIG.replace('"name": 1', '"name": "x"') + "}")
    found = await ask(client, "get_diagnostics", path="config.json")
    assert messages(found) == [(2, "End of file expected.")]
    (project / "config.json").write_text(CONFIG)
    # JSON with comments: tsconfig.json may have them
    (project / "tsconfig.json").write_text("{\n  // a comment\n}\n")
    assert messages(await ask(client, "get_diagnostics", path="tsconfig.json")) == []

    hover = await ask(client, "get_hover_info", path="config.json", line=1, character=31)
    assert hover["docs"].startswith("The name")
    await unsupported(client, SERVER, "go_to_definition", path="config.json", line=1, character=31)
    await unsupported(client, SERVER, "find_references", path="config.json", line=1, character=31)

    outline = await ask(client, "get_symbols", path="config.json")
    assert [s["name"] for s in outline["symbols"]] == ["$schema", "name", "size"]
    await unsupported(client, SERVER, "get_symbols", path="config.json", scope="workspace")

    formatted = await ask(client, "format_code", path="config.json")
    assert formatted["applied"]
    assert (project / "config.json").read_text() == (
        '{\n    "$schema": "./schema.json",\n    "name": 1,\n    "size": 2\n}\n'
    )

    # its one action is a command VS Code itself carries out (it has no edit)
    actions = await ask(client, "get_code_actions", path="config.json", line=1)
    assert [(a["title"], a["kind"]) for a in actions["actions"]] == [
        ("Sort JSON", "source.sort.json")
    ]

    await unsupported(
        client, SERVER, "rename_symbol", path="config.json", line=3, character=6, new_name="n"
    )
