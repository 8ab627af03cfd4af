"""move_file on real servers: typescript-language-server and basedpyright update the
importers of a moved module (workspace/willRenameFiles); gopls does not offer it, so a Go
move is `unsupported_by_server` unless forced; bad inputs move nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_client, shared_daemon
from tests.rpc import RpcClient, RpcFailure

__all__ = ["no_leaked_processes", "shared_client", "shared_daemon"]  # the module's fixtures
pytestmark = pytest.mark.servers("typescript-language-server", "basedpyright", "ruff", "gopls")

TS = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}\n',
    "src/util.ts": "export function twice(x: number): number {\n  return x * 2;\n}\n",
    "src/main.ts": 'import { twice } from "./util";\n\nconsole.log(twice(2));\n',
    "src/deep/use.ts": 'import { twice } from "../util";\n\nexport const four = twice(2);\n',
}


async def create(client: RpcClient, root: Path, files: dict[str, str]) -> None:
    """New files through edit_file, so the servers hear of them at once."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        result = await client.tool("edit_file", path=path, content=text, create=True)
        assert result["written"], result


async def failure(client: RpcClient, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool("move_file", **arguments)
    return info.value


def errors(result: dict[str, Any]) -> list[str]:
    return [d["message"] for f in result["diagnostics_after"] for d in f["introduced"]
            if d["severity"] == "error"]  # fmt: skip


def files_under(root: Path, folder: str) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if p.is_file()}


async def test_typescript_move_updates_importers(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, root = shared_client, shared_daemon.root
    await create(client, root, TS)
    assert (await client.tool("get_diagnostics", path="src/main.ts"))["diagnostics"] == []

    # preview: the importers' new imports, nothing written or moved
    preview = await client.tool(
        "move_file", path="src/util.ts", new_path="src/lib/math.ts", mode="preview"
    )
    assert not preview["moved"] and preview["servers"] == ["typescript-language-server"]
    assert '+import { twice } from "./lib/math";' in preview["diff"], preview
    assert (root / "src/util.ts").exists() and not (root / "src/lib").exists()

    # apply: the folder made, the file moved, both importers updated, nothing broken
    result = await client.tool("move_file", path="src/util.ts", new_path="src/lib/math.ts")
    assert result["moved"] and result["path"] == "src/util.ts", result
    assert result["new_path"] == "src/lib/math.ts"
    assert set(result["files_changed"]) == {"src/main.ts", "src/deep/use.ts"}
    assert not (root / "src/util.ts").exists()
    assert (root / "src/lib/math.ts").read_text() == TS["src/util.ts"]
    assert (root / "src/main.ts").read_text().startswith('import { twice } from "./lib/math";')
    assert (root / "src/deep/use.ts").read_text().startswith('import { twice } from "../lib/math";')
    assert errors(result) == []
    # the servers know the new place: no error on the importer, definition finds it
    assert (await client.tool("get_diagnostics", path="src/main.ts"))["diagnostics"] == []
    found = await client.tool("go_to_definition", path="src/main.ts", line=3, character=13)
    assert found["definition"]["path"] == "src/lib/math.ts", found

    # a moved module's own relative imports follow it
    result = await client.tool("move_file", path="src/deep/use.ts", new_path="src/use.ts")
    assert (root / "src/use.ts").read_text().startswith('import { twice } from "./lib/math";')
    assert "src/use.ts" in result["files_changed"] and errors(result) == []


async def test_python_move_updates_imports(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, root = shared_client, shared_daemon.root
    await create(client, root, {
        "pkg/__init__.py": "", "pkg/a.py": "def f() -> int:\n    return 1\n",
        "pkg/b.py": "from pkg.a import f\n\nprint(f())\n",
    })  # fmt: skip
    result = await client.tool("move_file", path="pkg/a.py", new_path="pkg/c.py")
    assert result["moved"] and result["servers"] == ["basedpyright"], result
    assert result["not_updated_by"] == ["ruff"]  # a linter: no references to update
    assert result["files_changed"] == ["pkg/b.py"]
    assert (root / "pkg/b.py").read_text() == "from pkg.c import f\n\nprint(f())\n"
    assert (root / "pkg/c.py").exists() and not (root / "pkg/a.py").exists()
    assert errors(result) == []

    # into another folder: basedpyright's edit names the module by its last part only
    # (`pkg.d`, not `pkg.sub.d`); whatever it writes, diagnostics_after shows what broke
    result = await client.tool("move_file", path="pkg/c.py", new_path="pkg/sub/d.py")
    assert result["moved"] and (root / "pkg/sub/d.py").exists()
    importer = (root / "pkg/b.py").read_text()
    if not importer.startswith("from pkg.sub.d import f"):
        broken = [f for f in result["diagnostics_after"] if f["file"] == "pkg/b.py"]
        assert broken and broken[0]["introduced"], result


async def test_unsupported_unless_forced(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, root = shared_client, shared_daemon.root
    await create(client, root, {
        "go.mod": "module example.com/m\n\ngo 1.19\n",
        "lib/lib.go": "package lib\n\nfunc One() int { return 1 }\n",
    })  # fmt: skip
    # gopls offers no workspace/willRenameFiles: named, and nothing moves
    err = await failure(client, path="lib/lib.go", new_path="lib/one.go")
    assert err.kind == "unsupported_by_server", err.message
    assert err.data["servers"] == ["gopls"] and "force" in err.message
    assert (root / "lib/lib.go").exists() and not (root / "lib/one.go").exists()
    result = await client.tool("move_file", path="lib/lib.go", new_path="lib/one.go", force=True)
    assert result["moved"] and result["files_changed"] == [] and result["servers"] == []
    assert "not updated" in result["warning"]
    assert (root / "lib/one.go").read_text() == "package lib\n\nfunc One() int { return 1 }\n"
    assert not (root / "lib/lib.go").exists()

    # a file no server knows needs force too
    await create(client, root, {"notes.txt": "hello\n"})
    err = await failure(client, path="notes.txt", new_path="docs/notes.txt")
    assert err.kind == "unsupported_by_server" and not (root / "docs").exists()
    result = await client.tool("move_file", path="notes.txt", new_path="docs/notes.txt", force=True)
    assert result["moved"] and (root / "docs/notes.txt").read_text() == "hello\n"


async def test_bad_inputs_move_nothing(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, root = shared_client, shared_daemon.root
    await create(
        client, root, {"bad/x.ts": "export const x = 1;\n", "bad/y.ts": "export const y = 2;\n"}
    )
    before = files_under(root, "bad")
    err = await failure(client, path="bad/x.ts", new_path="bad/y.ts")
    assert err.kind == "invalid_arguments" and "exists" in err.message
    err = await failure(client, path="bad/x.ts", new_path="../elsewhere.ts")
    assert err.kind == "path_outside_project"
    err = await failure(client, path="bad/x.ts", new_path=".git/x.ts")
    assert err.kind == "path_outside_project"
    err = await failure(client, path="bad/missing.ts", new_path="bad/z.ts")
    assert err.kind == "file_not_found"
    err = await failure(client, path="bad/x.ts", new_path="./bad/x.ts")
    assert err.kind == "invalid_arguments" and "already" in err.message
    err = await failure(client, path="bad", new_path="good")
    assert err.kind == "invalid_arguments" and "regular file" in err.message
    # a git directory known by what it holds, whatever its name
    for part in ("objects", "refs"):
        (root / "bad/vault" / part).mkdir(parents=True)
    (root / "bad/vault/HEAD").write_text("ref: refs/heads/main\n")
    err = await failure(client, path="bad/x.ts", new_path="bad/vault/sub/x.ts")
    assert err.kind == "path_outside_project" and "git directory" in err.message
    assert not (root / "bad/vault/sub").exists()
    before = files_under(root, "bad")
    # a folder in the way: the file y.ts cannot be a folder
    err = await failure(client, path="bad/x.ts", new_path="bad/y.ts/x.ts")
    assert err.kind == "invalid_arguments"
    assert files_under(root, "bad") == before


def test_cli_move(shared_daemon: SharedDaemon) -> None:
    env, root = shared_daemon.env, shared_daemon.root
    folder = root / "cli"
    folder.mkdir()
    (folder / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "noEmit": true}}\n')
    (folder / "a.ts").write_text("export const a = 1;\n")
    (folder / "b.ts").write_text('import { a } from "./a";\n\nexport const b = a;\n')

    def move(*args: str) -> subprocess.CompletedProcess[str]:
        return env.run("--root", str(root), "move", *args, cwd=folder)

    dry = move("a.ts", "sub/a.ts", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert '+import { a } from "./sub/a";' in dry.stdout and "nothing moved" in dry.stderr
    assert (folder / "a.ts").exists()
    done = move("a.ts", "sub/a.ts")
    assert done.returncode == 0, done.stderr
    assert "moved cli/a.ts -> cli/sub/a.ts; 1 file updated" in done.stderr
    assert (folder / "b.ts").read_text().startswith('import { a } from "./sub/a";')
    (folder / "x.go").write_text("package cli\n")
    refused = move("x.go", "y.go")
    assert refused.returncode == 1 and "[unsupported_by_server]" in refused.stderr
    forced = move("x.go", "y.go", "--force")
    assert forced.returncode == 0 and "references were not updated" in forced.stderr
    assert (folder / "y.go").exists() and not (folder / "x.go").exists()
