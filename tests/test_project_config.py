"""A project's `.codeward.toml` may only narrow: stricter approvals, a choice among a
language's configured servers. It can never turn a language's servers off (which would
reach a fallback program), set the confirm timeout or another limit, or name a command;
and every time or count of the user's config is validated, an error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.config import ConfigError, PolicyConfig, load_config
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.rpc import RpcFailure

REFUSED = {  # .codeward.toml: what its error must say
    "[servers]\njson = []\n": "never turn them all off",
    "[servers]\njson = ['no-such-server']\n": "names none of the servers configured for json",
    "[servers]\nnot-a-language = ['ruff']\n": "no language 'not-a-language'",
    "[servers.json]\ncommand = ['/bin/sh', 'x']\n": "never name a command",
    "[policy]\nconfirm_timeout = -1\n": "policy.confirm_timeout is a limit",
    "[policy]\nconfirm_timeout = 3600\n": "policy.confirm_timeout is a limit",
    "[policy]\ngit_write = 'sometimes'\n": "$.policy.git_write",
    "[lsp]\nrequest_timeout = 0.001\n": "[lsp] is the user's to set",
    "[lua]\nmemory_mb = 100000\n": "[lua] is the user's to set",
    "[git]\ntimeout = -5\n": "[git] is the user's to set",
    "[daemon]\nidle_timeout = 1\n": "[daemon] is the user's to set",
    "[languages.json]\npatterns = ['*.json']\nservers = []\n": "[languages] is the user's",
    "trusted = true\n": "unknown field `trusted`",
}


@pytest.mark.parametrize("text", list(REFUSED))
async def test_a_project_config_that_would_widen_or_break_is_refused(
    text: str, open_client: OpenClient, project: Path
) -> None:
    (project / ".codeward.toml").write_text(text)
    client = await open_client()
    with pytest.raises(RpcFailure) as info:
        await client.call("session/open", {"root": str(project)})
    failure = info.value
    assert failure.code == -32000 and failure.kind == "invalid_arguments", failure.message
    assert ".codeward.toml" in failure.message and REFUSED[text] in failure.message
    assert str(project.parent) not in failure.message


async def test_stricter_approvals_and_a_choice_stay_allowed(
    open_client: OpenClient, project: Path, daemon: Daemon
) -> None:
    (project / ".codeward.toml").write_text(
        "[policy]\ngit_write = 'deny'\ngit_destructive = 'allow'\n"
        "[servers]\npython = ['ruff', 'not-configured']\n"
    )
    client = await open_client()
    await client.call("session/open", {"root": str(project)})
    (session,) = daemon.sessions.sessions.values()
    assert session.policy == PolicyConfig(git_write="deny", git_destructive="confirm")
    assert session.lsp.languages.servers("python") == ["ruff"]


def test_narrowing_keeps_the_users_confirm_timeout() -> None:
    user = PolicyConfig(confirm_timeout=300.0)
    narrowed = user.narrowed(PolicyConfig(git_write="deny", confirm_timeout=0.01))
    assert narrowed == PolicyConfig(git_write="deny", confirm_timeout=300.0)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[policy]\nconfirm_timeout = -1\n", "$.policy.confirm_timeout"),
        ("[policy]\nconfirm_timeout = 0\n", "$.policy.confirm_timeout"),
        ("[policy]\nconfirm_timeout = nan\n", "$.policy.confirm_timeout"),
        ("[daemon]\nidle_timeout = -600\n", "$.daemon.idle_timeout"),
        ("[daemon]\nmax_connections = 0\n", "$.daemon.max_connections"),
        ("[lua]\ncpu_seconds = -1.0\n", "$.lua.cpu_seconds"),
        ("[lua]\nmemory_mb = 0\n", "$.lua.memory_mb"),
        ("[git]\ntimeout = 0\n", "$.git.timeout"),
        ("[git]\noutput_bytes = -1\n", "$.git.output_bytes"),
        ("[lsp]\nrequest_timeout = -30\n", "$.lsp.request_timeout"),
        ("[lsp]\nsettle_timeout = -1\n", "$.lsp.settle_timeout"),
        ('[lsp.method_timeouts]\n"textDocument/hover" = -1\n', "$.lsp.method_timeouts"),
        ("[servers.x]\ncommand = ['x']\nmax_rss_mb = -1\n", "$.servers[...].max_rss_mb"),
    ],
)
def test_the_users_config_times_and_counts_are_validated(
    text: str, key: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value) and "config.toml" in str(info.value)


def test_zero_is_a_valid_grace(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[lsp]\nsettle_timeout = 0\nshutdown_timeout = 0\n[lua]\nhost_calls = 0\n")
    config = load_config(path)
    assert config.lsp.settle_timeout == 0 and config.lua.host_calls == 0


def test_the_users_method_timeouts_add_to_the_built_in_ones(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[lsp]\nrequest_timeout = 7\n[lsp.method_timeouts]\n"textDocument/hover" = 5\n')
    lsp = load_config(path).lsp
    assert lsp.timeout_for("textDocument/hover") == 5
    assert lsp.timeout_for("workspace/symbol") == 120  # the built-in one stays
    assert lsp.timeout_for("textDocument/definition") == 7
    path.write_text('[lsp.method_timeouts]\n"workspace/symbol" = 10\n')
    assert load_config(path).lsp.timeout_for("workspace/symbol") == 10
