"""tsserver's diagnostics in LSP terms (the real server: tests/test_langs_typescript.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import trio
from lsprotocol import types as lsp

from codeward.daemon.lsp import tsserver
from tests.lsp_support import fake_config, fake_server, running


def test_tsserver_diagnostics_become_lsp_ones() -> None:
    body = b"""{"seq": 0, "type": "response", "success": true, "body": [
        {"start": {"line": 3, "offset": 55}, "end": {"line": 3, "offset": 58},
         "text": "Type 'string' is not assignable to type 'number'.", "code": 2322,
         "category": "error"},
        {"start": {"line": 3, "offset": 55}, "end": {"line": 3, "offset": 58},
         "text": "'bad' is declared but its value is never read.", "code": 6133,
         "category": "suggestion", "reportsUnnecessary": true},
        {"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 4},
         "text": "old", "category": "warning", "reportsDeprecated": {}}]}"""
    response = msgspec.json.decode(body, type=tsserver.Response)
    assert response.success and response.body is not None
    found = [tsserver.to_lsp(item) for item in response.body]
    where = lsp.Range(lsp.Position(2, 54), lsp.Position(2, 57))
    source = "typescript"
    assert found == [
        lsp.Diagnostic(
            where, "Type 'string' is not assignable to type 'number'.", 1, 2322, source=source
        ),
        lsp.Diagnostic(
            where,
            "'bad' is declared but its value is never read.",
            4,
            6133,
            source=source,
            tags=[lsp.DiagnosticTag.Unnecessary],
        ),
        lsp.Diagnostic(
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 3)),
            "old",
            2,
            source=source,
            tags=[lsp.DiagnosticTag.Deprecated],
        ),
    ]
    refused = msgspec.json.decode(
        b'{"success": false, "message": "No Project."}', type=tsserver.Response
    )
    assert not refused.success and refused.body is None


async def test_a_server_without_the_command_falls_back_to_its_pushes(tmp_path: Path) -> None:
    doc = tmp_path / "a.fake"
    doc.write_text("good\nbad line\n")
    server = msgspec.structs.replace(fake_server("ok"), diagnostics_from="tsserver")
    async with running(tmp_path, fake_config({"fake": server})) as (manager, _):
        with trio.fail_after(10):
            found = await manager.diagnostics(doc)
    assert [d.message for d in found.diagnostics] == ["bad line 2"] and not found.partial
