"""A rename that would change nothing is an error, never "0 files changed": invalid names
(the language's identifier rules), the name the symbol already has, and an empty edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.config import Config
from codeward.daemon.edits.identifiers import invalid_reason
from tests.conftest import OpenClient
from tests.intel_support import pos, write
from tests.lsp_support import fake_config, fake_server, for_daemon, needs
from tests.rpc import RpcClient, RpcFailure

SOURCE = "def compute(x):\n    return x\n\n\nprint(compute(1))\n"


async def failure(client: RpcClient, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool("rename_symbol", **arguments)
    return info.value


@needs("basedpyright")
async def test_python_names_that_change_nothing(client: RpcClient, project: Path) -> None:
    write(project, {"a.py": SOURCE})
    line, character = pos(project, "a.py", "compute")
    at = {"path": "a.py", "line": line, "character": character}
    for name, says in [
        ("not valid", "'not valid' is not a python identifier"),
        ("1abc", "is not a python identifier"),
        ("a-b", "is not a python identifier"),
        ("class", "'class' is a reserved word in python"),
        ("None", "reserved word"),
        ("compute", "already named 'compute'"),
    ]:
        for apply in (True, False):
            err = await failure(client, **at, new_name=name, apply=apply)
            assert err.kind == "invalid_arguments" and says in err.message, (name, err.message)
    assert (project / "a.py").read_text() == SOURCE  # nothing was written
    done = await client.tool("rename_symbol", **at, new_name="ünïcode_ok", apply=False)
    assert done["files_changed"] == ["a.py"] and done["edits"] == 2


class TestServerThatRenamesNothing:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return for_daemon(fake_config({"fake": fake_server("empty-rename")}))

    async def test_an_empty_edit_is_an_error(self, open_client: OpenClient, project: Path) -> None:
        write(project, {"a.fake": "hello\n"})
        client = await open_client(project)
        err = await failure(client, path="a.fake", line=1, character=1, new_name="any thing")
        assert err.kind == "invalid_arguments"
        assert "fake language server renames nothing" in err.message
        assert err.data["server"] == "fake"


@pytest.mark.parametrize(
    ("language", "name", "valid"),
    [
        ("go", "Ωmega", True),
        ("go", "func", False),
        ("go", "9lives", False),
        ("c", "snake_case1", True),
        ("c", "ünï", False),
        ("c", "while", False),
        ("cpp", "namespace", False),
        ("cpp", "Widget", True),
        ("typescript", "$el", True),
        ("javascript", "_private", True),
        ("typescript", "a.b", False),
        ("javascript", "function", False),
        ("rust", "fn", False),
        ("rust", "r#type", False),  # a raw identifier is the server's to allow
        ("python", "match", True),  # soft keywords are names
        ("python", "x\u200b", False),
        ("toml", "any thing", True),  # no rules here: the server decides
    ],
)
def test_identifier_rules(language: str, name: str, valid: bool) -> None:
    assert (invalid_reason(language, name) is None) is valid
