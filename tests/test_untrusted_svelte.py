"""svelte-language-server loads none of the project's code in an untrusted root, on the real
server: a `svelte.config.js` and a `.prettierrc.cjs` that are canaries (a marker when
loaded), `format_code` and `get_code_actions` (its TypeScript quick fixes resolve the
prettier config) untrusted: no marker, and format_code says why it does not format. Then
trusted (the control): the same requests load both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from codeward.daemon.config import Config
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.langs_support import at, patient_config
from tests.lsp_support import needs
from tests.rpc import RpcFailure

pytestmark = needs("svelte-language-server")

APP = """\
<script lang="ts">
  let n: number = 2;
  let missing = nothere;
</script>

<p>{n} {missing}</p>
"""


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


def canary(marker: Path, module: str) -> str:
    return (
        f"require('fs').appendFileSync({json.dumps(str(marker))}, 'ran\\n');\n"
        f"module.exports = {module};\n"
    )


async def test_svelte_loads_no_project_config_untrusted(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    svelte_marker, prettier_marker = tmp_path / "svelte-config", tmp_path / "prettier-config"
    write(
        project,
        {
            "package.json": '{"name": "demo", "private": true}\n',
            "tsconfig.json": '{"compilerOptions": {"strict": true}}\n',
            "svelte.config.js": canary(svelte_marker, "{}"),
            ".prettierrc.cjs": canary(prettier_marker, "{semi: false}"),
            "src/App.svelte": APP,
            "src/Ugly.svelte": "<script>\nlet   a=1\n</script>\n<p>{a}</p>\n",
        },
    )
    client = await open_client(project)
    missing = at(project, "src/App.svelte", "nothere")
    with trio.fail_after(120):
        found = await client.tool("get_diagnostics", path="src/App.svelte")
        assert found["restricted"] is True and found["diagnostics"]
        # a quick fix listing, then organize imports: each resolves the prettier config
        listed = await client.tool("get_code_actions", path="src/App.svelte", line=missing["line"])
        assert listed["restricted"] is True
        assert not prettier_marker.exists(), "a code-action listing ran the prettier config"
        kinds = ["source.organizeImports"]
        await client.tool("get_code_actions", path="src/App.svelte", kinds=kinds)
        assert not prettier_marker.exists(), "organize imports ran the prettier config"
        with pytest.raises(RpcFailure) as info:
            await client.tool("format_code", path="src/Ugly.svelte", apply=False)
    assert info.value.kind == "lsp_unavailable" and info.value.data["restricted"] is True
    assert "prettier" in info.value.message and "trust the root" in info.value.message
    assert not prettier_marker.exists(), "the project's prettier config ran untrusted"
    assert not svelte_marker.exists(), "the project's svelte.config.js ran untrusted"

    # the control: trusted, the same requests load the project's configs
    await client.call("trust/set", {"root": str(project)})
    with trio.fail_after(120):
        await client.tool("get_code_actions", path="src/App.svelte", line=missing["line"])
        assert prettier_marker.exists() and svelte_marker.exists()
        formatted = await client.tool("format_code", path="src/Ugly.svelte", apply=False)
    assert formatted["changed"] and "let a = 1\n" in formatted["diff"]  # semi: false
