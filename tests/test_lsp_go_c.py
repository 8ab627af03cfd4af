"""Real gopls and clangd diagnostics (fresh, with non-ASCII positions)."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from tests.lsp_support import needs, real_config, running


def root_of(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "proj"))
    root.mkdir()
    return root


@needs("gopls")
async def test_gopls_diagnostics(tmp_path: Path) -> None:
    root = root_of(tmp_path)
    (root / "go.mod").write_text("module example.com/demo\n\ngo 1.19\n")
    line = '\tvar s = "é😀中"; fmt.Println(s, missing)\n'
    (root / "main.go").write_text(f'package main\n\nimport "fmt"\n\nfunc main() {{\n{line}}}\n')
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            found = await manager.diagnostics(root / "main.go")
        assert not found.partial
        hits = [d for d in found.diagnostics if "missing" in d.message]
        assert hits and hits[0].file == "main.go" and hits[0].line == 6
        assert hits[0].column == line.index("missing") + 1
        (root / "main.go").write_text("package main\n\nfunc main() {\n\tundefinedCall()\n}\n")
        with trio.fail_after(30):
            again = await manager.diagnostics(root / "main.go")
        assert [d.line for d in again.diagnostics if "undefinedCall" in d.message] == [4]
        assert not any("missing" in d.message for d in again.diagnostics)


@needs("clangd")
async def test_clangd_diagnostics_in_utf8(tmp_path: Path) -> None:
    root = root_of(tmp_path)
    line = 'const char *s = "é😀中"; int x = missing_var;\n'
    (root / "main.c").write_text(f"int main(void) {{\n{line}return 0;\n}}\n")
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(30):
            found = await manager.diagnostics(root / "main.c")
        server = manager.pool.servers["clangd"]
        assert server.encoding == "utf-8"
        hits = [d for d in found.diagnostics if "missing_var" in d.message]
        assert [(d.line, d.column, d.severity) for d in hits] == [
            (2, line.index("missing_var") + 1, 1)
        ]
        (root / "main.c").write_text("int main(void) {\n  return 0;\n}\n")
        with trio.fail_after(30):
            again = await manager.diagnostics(root / "main.c")
        assert again.diagnostics == [] and again.content_hash != found.content_hash
