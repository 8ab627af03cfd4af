"""Git worktrees of one repository share one process per server, each a workspace folder of
it, while their answers, documents and diagnostics stay their own (real servers)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import Config
from codeward.daemon.lsp.server import LanguageServer
from codeward.daemon.lsp.shared import repository_of
from codeward.daemon.server import Daemon
from tests.conftest import OpenClient
from tests.git_repos import commit_all, git, make_repo, private_home
from tests.intel_support import pos, write
from tests.langs_support import patient_config
from tests.lsp_support import needs, require
from tests.rpc import RpcClient

PY_FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": 'def scale(x: int) -> int:\n    """Scale x."""\n    return x * 2\n',
    "pkg/use.py": "from pkg.core import scale\n\nvalue = scale(3)\n",
}


@pytest.fixture
def daemon_config() -> Config:
    return patient_config()


@pytest.fixture(autouse=True)
def git_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in private_home(tmp_path / "home").items():
        monkeypatch.setenv(name, value)


def repository(base: Path, files: dict[str, str], worktrees: int) -> list[Path]:
    """A committed repository with `files` and `worktrees` linked worktrees: their roots."""
    main = make_repo(base / "main")
    write(main, files)
    commit_all(main, "first")
    roots = [main]
    for n in range(worktrees):
        path = base / f"wt{n + 1}"
        git(main, "worktree", "add", "-q", "-b", f"task{n + 1}", str(path))
        roots.append(Path(os.path.realpath(path)))
    return roots


async def trusted_client(open_client: OpenClient, root: Path) -> RpcClient:
    client = await open_client()
    await client.call("trust/set", {"root": str(root)})
    await client.call("session/open", {"root": str(root)})
    return client


async def servers_of(client: RpcClient, root: Path) -> dict[str, dict[str, Any]]:
    """Server name -> its status in the session of `root`."""
    sessions = (await client.call("session/list"))["sessions"]
    (session,) = [s for s in sessions if s["root"] == str(root)]
    return {server["name"]: server for server in session["servers"]}


def shared_actor(daemon: Daemon, name: str) -> LanguageServer:
    """The one actor of server `name` every live session uses (fails if there are more)."""
    (actor,) = {
        id(server): server
        for session in daemon.sessions.sessions.values()
        if (server := session.lsp.pool.servers.get(name)) is not None
    }.values()
    return actor


async def hover(client: RpcClient, root: Path, path: str, needle: str) -> str:
    line, character = pos(root, path, needle)
    result = await client.tool("get_hover_info", path=path, line=line, character=character)
    assert "signature" in result, result
    return result["signature"]


@needs("basedpyright", "ruff")
async def test_python_worktrees_share_one_process_and_keep_their_answers(
    daemon: Daemon, open_client: OpenClient, tmp_path: Path
) -> None:
    roots = repository(tmp_path, PY_FILES, worktrees=3)
    clients = [await trusted_client(open_client, root) for root in roots]
    for client, root in zip(clients, roots, strict=True):
        assert "int" in await hover(client, root, "pkg/use.py", "scale(3")
        await client.tool("get_diagnostics", path="pkg/use.py")  # ruff too
    pids = set()
    for client, root in zip(clients, roots, strict=True):
        servers = await servers_of(client, root)
        pids.add((servers["basedpyright"]["pid"], servers["ruff"]["pid"]))
        assert sorted(servers["basedpyright"]["roots"]) == sorted(map(str, roots))
    assert len(pids) == 1  # one basedpyright and one ruff for the four roots

    # A signature changed in one worktree shows there only.
    changed = roots[2]
    actor = shared_actor(daemon, "basedpyright")
    world = actor.world
    (changed / "pkg/core.py").write_text(
        'def scale(x: str) -> str:\n    """Scale x."""\n    return x * 2\n'
    )
    with trio.fail_after(30):  # the watcher delivers the event; no sleeping
        await actor.wait_for(lambda: actor.world > world, 30)
    assert "str" in await hover(clients[2], changed, "pkg/use.py", "scale(3")
    assert "int" in await hover(clients[1], roots[1], "pkg/use.py", "scale(3")
    diagnostics = await clients[2].tool("get_diagnostics", path="pkg/use.py")
    assert any(d["source"] == "basedpyright" for d in diagnostics["diagnostics"])
    clean = await clients[1].tool("get_diagnostics", path="pkg/use.py")
    assert not [d for d in clean["diagnostics"] if d["source"] == "basedpyright"]
    # Definitions and references stay in the asking worktree.
    line, character = pos(changed, "pkg/use.py", "scale(3")
    found = await clients[2].tool(
        "go_to_definition", path="pkg/use.py", line=line, character=character
    )
    assert found["definition"]["path"] == "pkg/core.py"
    assert found["definition"]["preview"] == "def scale(x: str) -> str:"
    refs = await clients[1].tool(
        "find_references", path="pkg/core.py", line=1, character=5, include_declaration=True
    )
    assert sorted((r["path"], r["line"]) for r in refs["references"]) == [
        ("pkg/core.py", 1),
        ("pkg/use.py", 1),
        ("pkg/use.py", 3),
    ]
    assert str(tmp_path) not in str(refs)

    # An edit's diagnostics_after in one worktree is about that worktree's text only.
    edited = await clients[1].tool(
        "edit_file", path="pkg/use.py", content='from pkg.core import scale\n\nvalue = scale("a")\n'
    )
    after = {entry["file"]: entry for entry in edited["diagnostics_after"]}
    assert after["pkg/use.py"]["introduced"]
    assert str(tmp_path) not in str(edited)  # nothing of the other worktrees' open files

    # A session closing removes its folder; the others keep working on the same process.
    await clients[3].call("session/close", {"terminate": True})
    servers = await servers_of(clients[0], roots[0])
    assert (servers["basedpyright"]["pid"], servers["ruff"]["pid"]) in pids
    assert str(roots[3]) not in servers["basedpyright"]["roots"]
    assert "int" in await hover(clients[0], roots[0], "pkg/use.py", "scale(3")

    # The shared process killed: it restarts, and every worktree answers again.
    killed = servers["basedpyright"]["pid"]
    os.kill(killed, signal.SIGKILL)
    with trio.fail_after(120):
        await actor.wait_for(lambda: actor.running and actor.pid != killed, 120)
    assert "int" in await hover(clients[0], roots[0], "pkg/use.py", "scale(3")
    assert "str" in await hover(clients[2], changed, "pkg/use.py", "scale(3")
    assert "int" in await hover(clients[1], roots[1], "pkg/core.py", "scale")


@needs("basedpyright")
async def test_restricted_and_trusted_roots_never_share(
    open_client: OpenClient, tmp_path: Path
) -> None:
    main, first, second = repository(tmp_path, PY_FILES, worktrees=2)
    trusted = await trusted_client(open_client, main)
    untrusted = [await open_client(first), await open_client(second)]
    assert "int" in await hover(trusted, main, "pkg/use.py", "scale(3")
    for client, root in zip(untrusted, (first, second), strict=True):
        assert "int" in await hover(client, root, "pkg/use.py", "scale(3")
    pid_of = {
        root: (await servers_of(trusted, root))["basedpyright"]["pid"]
        for root in (main, first, second)
    }
    # the two untrusted worktrees share a restricted process; the trusted root has its own
    assert pid_of[first] == pid_of[second] != pid_of[main]
    restricted = await servers_of(trusted, first)
    assert sorted(restricted["basedpyright"]["roots"]) == sorted([str(first), str(second)])
    # Trusting one of them moves it to the trusted process, out of the restricted one.
    await untrusted[0].call("trust/set", {"root": str(first)})
    assert "int" in await hover(untrusted[0], first, "pkg/use.py", "scale(3")
    assert (await servers_of(trusted, first))["basedpyright"]["pid"] == pid_of[main]
    left = await servers_of(trusted, second)
    assert left["basedpyright"]["roots"] == [str(second)]
    assert left["basedpyright"]["pid"] == pid_of[second]


@needs("basedpyright")
async def test_a_nested_root_shares_with_its_parent(
    open_client: OpenClient, tmp_path: Path
) -> None:
    (main,) = repository(tmp_path, PY_FILES, worktrees=0)
    nested = main / "pkg"
    parent = await trusted_client(open_client, main)
    inner = await trusted_client(open_client, nested)
    assert "int" in await hover(parent, main, "pkg/use.py", "scale(3")
    # The nested root's files are the parent's project's: `pkg.core` resolves from the top.
    assert "int" in await hover(inner, nested, "use.py", "scale(3")
    outer, within = await servers_of(parent, main), await servers_of(parent, nested)
    assert outer["basedpyright"]["pid"] == within["basedpyright"]["pid"]
    assert "int" in await hover(parent, main, "pkg/use.py", "scale(3")
    # The nested session closing leaves the parent's documents open and answering.
    await inner.call("session/close", {"terminate": True})
    assert (await servers_of(parent, main))["basedpyright"]["roots"] == [str(main)]
    assert "int" in await hover(parent, main, "pkg/use.py", "scale(3")


def test_a_root_shares_only_through_a_real_worktree(tmp_path: Path) -> None:
    """The repository of a root is read from its `.git` as git made it; a `.git` file that
    does not point back (a hand-made gitfile into another repository) shares nothing."""
    main, linked = repository(tmp_path, PY_FILES, worktrees=1)
    common = os.path.realpath(main / ".git")
    assert repository_of(main) == repository_of(main / "pkg") == common
    assert repository_of(linked) == common
    other = tmp_path / "other"
    other.mkdir()
    assert repository_of(other) is None
    (other / ".git").write_text(f"gitdir: {main / '.git'}\n")
    assert repository_of(other) is None
    (other / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt1'}\n")
    assert repository_of(other) is None  # wt1's gitdir names linked's .git, not this one
    (other / ".git").write_text("not a gitfile\n")
    assert repository_of(other) is None


GO_FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "main.go": (
        'package main\n\nimport "example.com/demo/lib"\n\nfunc main() {\n\t_ = lib.Scale(3)\n}\n'
    ),
    "lib/lib.go": (
        "package lib\n\n// Scale doubles x.\nfunc Scale(x int) int {\n\treturn x * 2\n}\n"
    ),
}
GO_CHANGED = (
    "lib/lib.go",
    "package lib\n\n// Scale doubles x.\nfunc Scale(x int64) int64 {\n\treturn x * 2\n}\n",
)
C_MAIN = "\n\nint main(void) { return scale(3); }\n"
C_FILES = {"main.c": "static int scale(int x) { return x * 2; }" + C_MAIN}
C_CHANGED = (
    "main.c",
    "static long scale(long x) { return x * 2; }" + C_MAIN,
)
TS_FILES = {
    "tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n',
    "lib.ts": "export function scale(x: number): number {\n  return x * 2;\n}\n",
    "main.ts": 'import { scale } from "./lib";\n\nexport const value = scale(3);\n',
}
TS_CHANGED = ("lib.ts", "export function scale(x: string): string {\n  return x + x;\n}\n")

LANGUAGES = [
    pytest.param("gopls", GO_FILES, "main.go", "Scale(3", GO_CHANGED, ("int", "int64"), id="go"),
    pytest.param("clangd", C_FILES, "main.c", "scale(3", C_CHANGED, ("int", "long"), id="c"),
    pytest.param(
        "typescript-language-server",
        TS_FILES,
        "main.ts",
        "scale(3",
        TS_CHANGED,
        ("number", "string"),
        id="typescript",
    ),
]


@pytest.mark.parametrize(("server", "files", "path", "needle", "change", "types"), LANGUAGES)
async def test_other_servers_share_worktrees_too(
    daemon: Daemon,
    open_client: OpenClient,
    tmp_path: Path,
    server: str,
    files: dict[str, str],
    path: str,
    needle: str,
    change: tuple[str, str],
    types: tuple[str, str],
) -> None:
    require(server)
    roots = repository(tmp_path, files, worktrees=2)
    clients = [await trusted_client(open_client, root) for root in roots]
    before, after = types
    for client, root in zip(clients, roots, strict=True):
        assert before in await hover(client, root, path, needle)
    pids = {(await servers_of(clients[0], root))[server]["pid"] for root in roots}
    assert len(pids) == 1
    actor = shared_actor(daemon, server)
    assert sorted(actor.roots) == sorted(roots)
    # One worktree changes the signature: only its answers change.
    name, text = change
    world = actor.world
    (roots[1] / name).write_text(text)
    with trio.fail_after(30):  # the watcher delivers the event; no sleeping
        await actor.wait_for(lambda: actor.world > world, 30)
    assert after in await hover(clients[1], roots[1], path, needle)
    unchanged = await hover(clients[2], roots[2], path, needle)
    assert before in unchanged and after not in unchanged
