"""An editor (through the real `codeward lsp` pump) and an agent (the real CLI) on one root:
the agent's edit of the file the editor holds is written and applied in the editor's buffer
(`workspace/applyEdit`); while the buffer has unsaved changes the agent's edit is refused,
naming the editor."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.test_editor_lsp import MAIN, Project, editor, no_leaked_processes, project

pytestmark = pytest.mark.servers("basedpyright", "ruff")
__all__ = ["editor", "no_leaked_processes", "project"]  # the fixtures, shared

EDITED = MAIN.replace('open_account("ann")', 'open_account("eve")')


def test_an_agents_edit_follows_in_the_editor_and_waits_for_unsaved_work(
    project: Project, editor: Any
) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    editor.diagnostics(main)
    with ThreadPoolExecutor(1) as pool:
        agent = pool.submit(
            project.env.run, "--json", "edit", "main.py", "--mode", "apply",
            cwd=project.root, stdin=EDITED,
        )  # fmt: skip
        asked = editor.wait_for(lambda m: m.get("method") == "workspace/applyEdit")
        (change,) = asked["params"]["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": main, "version": 1}
        assert "main.py" in asked["params"]["label"]
        # the editor applied it (the test client answered): its didChange follows
        editor.notify("textDocument/didChange", {
            "textDocument": {"uri": main, "version": 2},
            "contentChanges": [{"text": EDITED}],
        })  # fmt: skip
        done = agent.result()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["written"] and project.main.read_text() == EDITED
    assert result["editors"] == [{"holder": "test-editor 1", "files": ["main.py"], "applied": True}]
    # unsaved work in the editor: the agent's edit is refused and nothing is written
    editor.notify("textDocument/didChange", {
        "textDocument": {"uri": main, "version": 3},
        "contentChanges": [{"text": EDITED + "unsaved = 1\n"}],
    })  # fmt: skip
    refused = project.env.run("edit", "main.py", "--mode", "apply", cwd=project.root, stdin=MAIN)
    assert refused.returncode != 0
    assert "unsaved changes" in refused.stderr and "test-editor 1" in refused.stderr
    assert project.main.read_text() == EDITED
    # the agent reads the editor's text, and is told so
    symbols = project.env.json("symbols", "main.py", cwd=project.root)
    assert symbols["source"] == "editor" and symbols["editor_version"] == 3
    assert "unsaved" in json.dumps(symbols["symbols"])
    assert editor.shutdown() == 0
    project.main.write_text(MAIN)
