"""Routing without servers: a path's language, servers in routing order, routing's errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import LanguageConfig, ServerConfig
from codeward.daemon.lsp.routing import Languages, missing, routed_language, unsupported
from codeward.protocol.errors import ErrorKind, ToolError

LANGUAGES = {
    "python": LanguageConfig(patterns=["*.py"], servers=["basedpyright", "ruff"]),
    "toml": LanguageConfig(patterns=["*.toml"], servers=["tombi"], language_id="toml"),
    "notebook": LanguageConfig(patterns=["*.ipynb"], servers=["ruff", "jupyter"]),
}
CONFIGS = {name: ServerConfig(command=[name], install_hint=f"pip install {name}")
           for name in ("basedpyright", "ruff", "tombi", "jupyter")}  # fmt: skip


def test_a_paths_language_and_its_servers(tmp_path: Path) -> None:
    assert routed_language(tmp_path / "pyproject.toml", tmp_path, LANGUAGES) == "toml"
    for own in (tmp_path / ".codeward.toml", tmp_path / "sub" / ".codeward.toml"):
        assert routed_language(own, tmp_path, LANGUAGES) is None
    languages = Languages(tmp_path, LANGUAGES)
    assert languages.of(tmp_path / "a.py") == "python" and languages.of(tmp_path / "x") is None
    with pytest.raises(ToolError) as info:
        languages.require(tmp_path / ".codeward.toml")
    assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE
    assert languages.language_id("toml") == "toml" and languages.language_id("python") == "python"
    assert languages.servers_of(["python", "notebook"]) == ["basedpyright", "ruff", "jupyter"]


def _absent(name: str, **details: object) -> ToolError:
    return ToolError(ErrorKind.LSP_UNAVAILABLE, f"{name} is missing", server=name, **details)


def test_missing_servers_are_named_in_routing_order() -> None:
    names = ["basedpyright", "ruff"]
    both = missing([_absent("ruff"), _absent("basedpyright")], names, CONFIGS)
    assert both.details["servers"] == names
    assert both.message == (
        "The basedpyright and ruff language servers are not installed; "
        "pip install basedpyright; pip install ruff."
    )
    refused = missing(
        [_absent("ruff", restricted=True), _absent("basedpyright", restricted=True)], names, CONFIGS
    )
    assert refused.details == {"server": "basedpyright", "servers": names, "restricted": True}
    assert "do not start in an untrusted root" in refused.message
    # one not installed, one refused: the first in routing order says its own reason
    mixed = missing([_absent("ruff", restricted=True), _absent("basedpyright")], names, CONFIGS)
    assert mixed.message == "basedpyright is missing"
    crashed = ToolError(ErrorKind.LSP_ERROR, "ruff crashed", server="ruff")
    assert missing([crashed, _absent("basedpyright")], names, CONFIGS).message == (
        "basedpyright is missing"
    )


def test_unsupported_names_the_servers_and_the_capability() -> None:
    one = unsupported("textDocument/codeAction", ["tombi"], "toml")
    assert one.kind is ErrorKind.UNSUPPORTED_BY_SERVER
    assert one.message.startswith(
        "The toml language server tombi does not offer textDocument/codeAction (codeActionProvider)"
    )
    two = unsupported("textDocument/prepareRename", ["basedpyright", "ruff"], "python")
    assert "servers basedpyright and ruff do not offer" in two.message
    assert two.details == {
        "server": "basedpyright",
        "servers": ["basedpyright", "ruff"],
        "method": "textDocument/prepareRename",
        "capability": "renameProvider.prepareProvider",
    }
    none = unsupported("textDocument/formatting", [], "go")
    assert none.kind is ErrorKind.LSP_UNAVAILABLE and "No go language server" in none.message
    custom = unsupported("experimental/thing", ["x"], "x")
    assert custom.details["capability"] == "experimental/thing"
