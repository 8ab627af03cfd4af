"""YAML on the real yaml-language-server (no schema store: nothing fetched)."""

from __future__ import annotations

from pathlib import Path

import trio

from tests.conftest import OpenClient
from tests.real_servers import ask, messages, require, schema_server, unsupported, where, write

CI = "name:   ci\nbase: &defaults\n  image: debian\njob:\n  <<: *defaults\n  run: make\n"
SERVER = "yaml-language-server"


async def test_yaml(open_client: OpenClient, project: Path, nursery: trio.Nursery) -> None:
    require(SERVER)
    port, connections = await schema_server(nursery)
    modeline = f"# yaml-language-server: $schema=http://127.0.0.1:{port}/schema.json\n"
    write(
        project,
        {
            "ci.yaml": CI,
            "other.yml": "a:\n\tb: 1\n",
            "remote.yaml": modeline + "key: value\n",
            "ports.yaml": "port: &port 8080\nserver:\n  listen: *port\n",
        },
    )
    client = await open_client(project)

    # a schema named by URL is not fetched (nothing goes to the network by default)
    found = await ask(client, "get_diagnostics", path="remote.yaml")
    assert any("Unable to load schema" in message for _, message in messages(found)), found
    assert connections == []

    assert messages(await ask(client, "get_diagnostics", path="ci.yaml")) == []
    found = await ask(client, "get_diagnostics", path="other.yml")
    assert messages(found) == [(2, "Tabs are not allowed as indentation")]
    (project / "ci.yaml").write_text(CI + "bad: [1, 2\n")
    (error,) = (await ask(client, "get_diagnostics", path="ci.yaml"))["diagnostics"]
    assert error["line"] == 8 and error["severity"] == "error"
    (project / "ci.yaml").write_text(CI)

    hover = await ask(client, "get_hover_info", path="ci.yaml", line=5, character=8)
    assert "image: debian" in hover["markdown"]
    # An alias's definition is the node its anchor names, as yaml-language-server answers
    # it (driven directly: targetSelectionRange 2:2 and 0:13, 0-based): a block mapping's
    # first key, on the line after its anchor; a scalar, on the anchor's line.
    definition = await ask(client, "go_to_definition", path="ci.yaml", line=5, character=8)
    assert where(definition["definition"]) == ("ci.yaml", 3, 3)
    assert definition["definition"]["preview"] == "image: debian"
    definition = await ask(client, "go_to_definition", path="ports.yaml", line=3, character=12)
    assert where(definition["definition"]) == ("ports.yaml", 1, 13)
    await unsupported(client, SERVER, "find_references", path="ci.yaml", line=2, character=8)

    outline = await ask(client, "get_symbols", path="ci.yaml")
    assert [s["name"] for s in outline["symbols"]] == ["name", "base", "job"]
    assert [s["name"] for s in outline["symbols"][2]["children"]] == ["<<", "run"]
    await unsupported(client, SERVER, "get_symbols", path="ci.yaml", scope="workspace", query="job")

    formatted = await ask(client, "format_code", path="ci.yaml", apply=False)
    assert "-name:   ci\n+name: ci\n" in formatted["diff"]

    actions = await ask(client, "get_code_actions", path="other.yml", line=2)
    assert [a["title"] for a in actions["actions"]][:1] == ["Convert Tab to Spaces"]
    await ask(client, "get_code_actions", path="other.yml", line=2, apply=0)
    assert (project / "other.yml").read_text() == "a:\n  b: 1\n"

    renamed = await ask(
        client, "rename_symbol", path="ci.yaml", line=2, character=8, new_name="base_job"
    )
    assert renamed["files_changed"] == ["ci.yaml"]
    assert "&base_job" in (project / "ci.yaml").read_text()
    assert "*base_job" in (project / "ci.yaml").read_text()
