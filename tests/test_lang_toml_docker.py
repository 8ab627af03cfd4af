"""TOML on the real tombi (offline), Dockerfiles on the real dockerfile-language-server."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import OpenClient
from tests.real_servers import ask, messages, require, unsupported, where, write

CONF = '[server]\nhost =   "x"\nport = 80\n'
CARGO = {  # a Cargo workspace: tombi links a member's `workspace = true` to its root's entry
    "Cargo.toml": '[workspace]\nmembers = ["a"]\n\n[workspace.dependencies]\nserde = "1"\n',
    "a/Cargo.toml": (
        '[package]\nname = "a"\nversion = "0.1.0"\n\n[dependencies]\nserde = { workspace = true }\n'
    ),
}
DOCKERFILE = "FROM debian:12 AS base\n  run echo hi\nFROM base\nCOPY --from=base /a /b\n"
TOMBI, DOCKER = "tombi", "dockerfile-language-server"


async def test_toml(open_client: OpenClient, project: Path) -> None:
    require(TOMBI)
    write(project, {"conf.toml": CONF, **CARGO})
    client = await open_client(project)

    assert messages(await ask(client, "get_diagnostics", path="conf.toml")) == []
    (project / "conf.toml").write_text(CONF + "[server]\nbad =\n")
    found = await ask(client, "get_diagnostics", path="conf.toml")
    assert (5, "expected value") in messages(found)
    (project / "conf.toml").write_text(CONF)
    assert messages(await ask(client, "get_diagnostics", path="conf.toml")) == []

    hover = await ask(client, "get_hover_info", path="conf.toml", line=2, character=1)
    assert "server.host" in hover["docs"] and "String" in hover["docs"]
    outline = await ask(client, "get_symbols", path="conf.toml", all=True)
    (server,) = outline["symbols"]
    assert server["name"] == "server"
    assert [child["name"] for child in server["children"]] == ["host", "port"]
    await unsupported(client, TOMBI, "get_symbols", path="conf.toml", scope="workspace")
    await unsupported(client, TOMBI, "rename_symbol", path="conf.toml", line=2, character=1,
                      new_name="address")  # fmt: skip

    formatted = await ask(client, "format_code", path="conf.toml")
    assert formatted["applied"] and (project / "conf.toml").read_text() == CONF.replace(
        "=   ", "= "
    )
    # a plain key has no definition or references outside a schema or a Cargo workspace:
    # tombi answers null to both (as it does when driven directly), hence not_found
    definition = await ask(client, "go_to_definition", path="conf.toml", line=2, character=1)
    assert definition["status"] == "not_found"
    references = await ask(client, "find_references", path="conf.toml", line=2, character=1)
    assert (references["status"], references["count"]) == ("not_found", 0)
    # in a Cargo workspace, its answers as tombi gives them: a member's dependency to the
    # workspace's entry, that entry to the members using it, a member's name to its manifest
    definition = await ask(client, "go_to_definition", path="a/Cargo.toml", line=6, character=2)
    assert where(definition["definition"]) == ("Cargo.toml", 5, 1)
    references = await ask(client, "find_references", path="Cargo.toml", line=5, character=2)
    assert [where(r) for r in references["references"]] == [("a/Cargo.toml", 6, 1)]
    definition = await ask(client, "go_to_definition", path="Cargo.toml", line=2, character=13)
    assert where(definition["definition"]) == ("a/Cargo.toml", 2, 9)
    actions = await ask(client, "get_code_actions", path="conf.toml", line=2)
    assert actions["actions"] == []


async def test_dockerfile(open_client: OpenClient, project: Path) -> None:
    require(DOCKER)
    write(project, {"Dockerfile": DOCKERFILE})
    client = await open_client(project)

    found = await ask(client, "get_diagnostics", path="Dockerfile")
    assert messages(found) == [(2, "Instructions should be written in uppercase letters")]
    assert found["diagnostics"][0]["column"] == 3
    (project / "Dockerfile").write_text(DOCKERFILE + "FOOBAR x\n")
    found = await ask(client, "get_diagnostics", path="Dockerfile")
    assert (5, "Unknown instruction: FOOBAR") in messages(found)
    (project / "Dockerfile").write_text(DOCKERFILE)

    hover = await ask(client, "get_hover_info", path="Dockerfile", line=3, character=2)
    assert "`FROM` must be the first instruction" in hover["docs"]
    definition = await ask(client, "go_to_definition", path="Dockerfile", line=4, character=14)
    assert where(definition["definition"]) == ("Dockerfile", 1, 19)
    await unsupported(client, DOCKER, "find_references", path="Dockerfile", line=1, character=19)
    outline = await ask(client, "get_symbols", path="Dockerfile", all=True)
    assert [s["name"] for s in outline["symbols"]] == ["FROM", "run", "FROM", "COPY"]
    await unsupported(client, DOCKER, "get_symbols", path="Dockerfile", scope="workspace")

    formatted = await ask(client, "format_code", path="Dockerfile", apply=False)
    assert "-  run echo hi\n+run echo hi\n" in formatted["diff"]
    actions = await ask(client, "get_code_actions", path="Dockerfile", line=2)
    assert [a["title"] for a in actions["actions"]] == ["Convert instruction to uppercase"]
    await ask(client, "get_code_actions", path="Dockerfile", line=2, apply=0)
    assert "  RUN echo hi\n" in (project / "Dockerfile").read_text()
    renamed = await ask(client, "rename_symbol", path="Dockerfile", line=1, character=20,
                        new_name="builder")  # fmt: skip
    assert renamed["edits"] == 3
    assert (project / "Dockerfile").read_text().count("builder") == 3
