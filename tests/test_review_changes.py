"""The working tree's change against a revision, on a real repository with real servers
(basedpyright and ruff for Python, gopls for Go): `get_diagnostics since: REV` and
`review_changes`; nothing is ever written to the working tree or the index."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.protocol.render.tool_text import tool_text
from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_client, shared_daemon
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

__all__ = ["no_leaked_processes", "shared_client", "shared_daemon"]  # the module's fixtures
pytestmark = needs("basedpyright", "ruff", "gopls")

GO_MOD = "module example.com/review\n\ngo 1.19\n"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.stdout


def write(root: Path, files: dict[str, str | None]) -> None:
    """Write (None: delete) files below `root`."""
    for name, text in files.items():
        path = root / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(root: Path, files: dict[str, str | None], message: str) -> None:
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def state(root: Path) -> dict[str, Any]:
    """Every byte of the working tree and of the index, with their change times (a file
    written and given its bytes back meanwhile has a new ctime)."""
    files: dict[str, Any] = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(directory, name)
            files[path.relative_to(root).as_posix()] = (path.read_bytes(), _times(path))
    index = root / ".git" / "index"
    files[".git/index"] = (index.read_bytes(), _times(index))
    return files


def _times(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_ctime_ns, st.st_ino


@pytest.fixture(scope="module")
def repo(shared_daemon: SharedDaemon) -> Iterator[Path]:
    """The module's project as a git repository on `main`, with a Go module."""
    root = shared_daemon.root
    git(root, "init", "-q", "-b", "main")
    commit(root, {"go.mod": GO_MOD, "README": "review tests\n"}, "start")
    yield root


async def unchanged(client: RpcClient, root: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's result, checking that the call wrote nothing to the tree or the index."""
    before = state(root)
    result = await client.tool(tool, **arguments)
    assert state(root) == before
    return result


def by_file(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["file"]: f for f in result["files"]}


def errors(report: dict[str, Any], key: str = "introduced") -> list[str]:
    found = report[key] if key == "introduced" else report[key]["diagnostics"]
    return [d["message"] for d in found if d["severity"] == "error"]


async def test_python_change_against_head(shared_client: RpcClient, repo: Path) -> None:
    commit(
        repo,
        {"t1/good.py": "def f() -> int:\n    return 1\n", "t1/bad.py": "x: int = 'text'\n"},
        "t1",
    )
    write(repo, {"t1/good.py": "def f() -> int:\n    return 'one'\n"})
    first = await unchanged(shared_client, repo, "get_diagnostics", since="HEAD", path="t1")
    assert [f["file"] for f in first["files"]] == ["t1/good.py"]
    write(repo, {"t1/bad.py": "x: int = 1\n"})  # the revision's state remembered: one more file
    result = await unchanged(shared_client, repo, "get_diagnostics", since="HEAD", path="t1")
    assert result["since"] == "HEAD"
    assert result["commit"] == git(repo, "rev-parse", "HEAD").strip()
    files = by_file(result)
    assert sorted(files) == ["t1/bad.py", "t1/good.py"]
    good, bad = files["t1/good.py"], files["t1/bad.py"]
    assert good["changed"] and bad["changed"]
    assert len(errors(good)) == 1 and good["introduced"][0]["line"] == 2, good
    assert errors(bad) == [] and len(errors(bad, "resolved")) == 1, bad
    assert bad["resolved"]["diagnostics"][0]["line"] == 1
    assert result["introduced_count"] >= 1 and result["resolved_count"] >= 1
    text = tool_text("get_diagnostics", result).splitlines()  # what an agent reads
    assert text[0].startswith("since HEAD (") and "in 2 files" in text[0]
    assert any(line.startswith("+ t1/good.py:2:") for line in text), text
    assert any(line.startswith("- t1/bad.py:1:") for line in text), text
    # `error` keeps the errors only; the content hash `since` still works
    only = await unchanged(
        shared_client, repo, "get_diagnostics", since="HEAD", path="t1", severity="error"
    )
    assert only["introduced_count"] == 1 and only["resolved_count"] == 1
    plain = await shared_client.tool("get_diagnostics", path="t1/good.py")
    again = await shared_client.tool(
        "get_diagnostics", path="t1/good.py", since=plain["content_hash"]
    )
    assert again["since"] == plain["content_hash"] and again["introduced"] == []
    commit(repo, {}, "t1 done")


async def test_go_change_against_head(shared_client: RpcClient, repo: Path) -> None:
    commit(
        repo,
        {
            "g1/a.go": "package g1\n\nfunc A() int {\n\treturn 1\n}\n",
            "g1/b.go": 'package g1\n\nfunc B() int {\n\treturn "b"\n}\n',
        },
        "g1",
    )
    write(
        repo,
        {
            "g1/a.go": 'package g1\n\nfunc A() int {\n\treturn "a"\n}\n',
            "g1/b.go": "package g1\n\nfunc B() int {\n\treturn 2\n}\n",
        },
    )
    result = await unchanged(shared_client, repo, "get_diagnostics", since="HEAD", path="g1")
    files = by_file(result)
    assert sorted(files) == ["g1/a.go", "g1/b.go"]
    assert [d["line"] for d in files["g1/a.go"]["introduced"]] == [4], files["g1/a.go"]
    assert files["g1/b.go"]["introduced"] == []
    assert [d["line"] for d in files["g1/b.go"]["resolved"]["diagnostics"]] == [4]
    commit(repo, {}, "g1 done")


async def test_added_and_deleted_files(shared_client: RpcClient, repo: Path) -> None:
    commit(repo, {"t3/gone.py": "y: str = 3\n", "t3/kept.py": "z = 1\n"}, "t3")
    write(repo, {"t3/gone.py": None, "t3/fresh.py": "w: int = 'w'\n"})  # fresh: untracked
    git(repo, "rm", "-q", "--cached", "t3/gone.py")  # a deletion staged, for good measure
    result = await unchanged(shared_client, repo, "get_diagnostics", since="HEAD", path="t3")
    files = by_file(result)
    assert sorted(files) == ["t3/fresh.py", "t3/gone.py"]
    assert len(errors(files["t3/fresh.py"])) == 1
    assert errors(files["t3/fresh.py"], "resolved") == []
    assert errors(files["t3/gone.py"]) == [] and len(errors(files["t3/gone.py"], "resolved")) == 1
    assert files["t3/gone.py"]["remaining"]["error"] == 0
    commit(repo, {}, "t3 done")


async def test_a_revision_that_does_not_exist(shared_client: RpcClient, repo: Path) -> None:
    for since in ("no-such-branch", "merge-base:no-such-branch", "HEAD~999", "--output=x"):
        before = state(repo)
        with pytest.raises(RpcFailure) as info:
            await shared_client.tool("get_diagnostics", since=since)
        assert state(repo) == before
        assert info.value.kind == "invalid_arguments", info.value
        assert "names no commit" in info.value.message and "merge-base:" in info.value.message
        assert str(repo) not in info.value.message
    with pytest.raises(RpcFailure) as info:  # a content hash (the prefix) never seen
        await shared_client.tool("get_diagnostics", path="README", since="sha256:00")
    assert "not a content hash" in info.value.message


GO_OK = "package g3\n\nfunc {name}() int {{\n\treturn 1\n}}\n"
GO_BROKEN = 'package g3\n\nfunc {name}() int {{\n\treturn "x"\n}}\n'


async def test_merge_base_of_a_branch(shared_client: RpcClient, repo: Path) -> None:
    """Python and Go: a file broken in a commit of the branch, another fixed in the working
    tree, both against the branch point."""
    commit(
        repo,
        {"t2/a.py": "A = 1\n", "t2/b.py": "B: int = 'b'\n",
         "g3/a.go": GO_OK.format(name="A"), "g3/b.go": GO_BROKEN.format(name="B")},
        "t2 base",
    )  # fmt: skip
    git(repo, "branch", "feature")
    commit(repo, {"t2/main_only.py": "M = 1\n"}, "main moves on")
    git(repo, "checkout", "-q", "feature")
    commit(  # committed on the branch
        repo, {"t2/a.py": "A: int = 'a'\n", "g3/a.go": GO_BROKEN.format(name="A")}, "breaks a"
    )
    write(repo, {"t2/b.py": "B: int = 2\n", "g3/b.go": GO_OK.format(name="B")})  # b fixed
    result = await unchanged(
        shared_client, repo, "get_diagnostics", since="merge-base:main", path="t2"
    )
    assert result["commit"] == git(repo, "merge-base", "HEAD", "main").strip()
    files = by_file(result)
    assert sorted(files) == ["t2/a.py", "t2/b.py"]
    assert len(errors(files["t2/a.py"])) == 1 and len(errors(files["t2/b.py"], "resolved")) == 1
    go = await unchanged(shared_client, repo, "get_diagnostics", since="merge-base:main", path="g3")
    assert go["commit"] == result["commit"]
    files = by_file(go)
    assert sorted(files) == ["g3/a.go", "g3/b.go"]
    assert [d["line"] for d in files["g3/a.go"]["introduced"]] == [4], files["g3/a.go"]
    assert files["g3/b.go"]["introduced"] == []
    assert [d["line"] for d in files["g3/b.go"]["resolved"]["diagnostics"]] == [4]
    against_main = await unchanged(shared_client, repo, "get_diagnostics", since="main", path="t2")
    assert "t2/main_only.py" not in by_file(against_main)  # no diagnostics: no report
    head = await unchanged(shared_client, repo, "get_diagnostics", since="HEAD", path="t2")
    assert sorted(by_file(head)) == ["t2/b.py"]
    git(repo, "checkout", "-q", "-f", "main")


async def test_review_of_a_go_rename_with_added_and_deleted_files(
    shared_client: RpcClient, repo: Path
) -> None:
    commit(
        repo,
        {
            "g2/lib.go": "package g2\n\n// Compute doubles.\nfunc Compute(x int) int {\n"
            "\treturn x * 2\n}\n",
            "g2/use.go": "package g2\n\nfunc Use() int {\n\treturn Compute(1) + Compute(2)\n}\n",
            "g2/old.go": 'package g2\n\nfunc Old() int {\n\treturn "3"\n}\n',  # broken
        },
        "g2",
    )
    write(
        repo,
        {
            "g2/lib.go": "package g2\n\n// Calculate doubles.\nfunc Calculate(x int) int {\n"
            "\treturn x * 2\n}\n",
            "g2/old.go": None,
            "g2/fresh.go": 'package g2\n\nfunc Fresh() int {\n\treturn "4"\n}\n',  # broken
        },
    )
    result = await unchanged(shared_client, repo, "review_changes", path="g2")
    assert [(f["file"], f["status"]) for f in result["files"]] == [
        ("g2/fresh.go", "added"), ("g2/lib.go", "modified"), ("g2/old.go", "deleted")
    ]  # fmt: skip
    assert by_file(result)["g2/fresh.go"]["hunks"] == [
        {"old_start": 0, "old_lines": 0, "new_start": 1, "new_lines": 5}
    ]
    assert symbols(result, "g2/fresh.go")["Fresh"]["change"] == "added"
    assert symbols(result, "g2/old.go")["Old"]["change"] == "removed"
    compute = symbols(result, "g2/lib.go")["Compute"]
    assert compute["change"] == "removed"
    assert compute["references"]["files"] == [{"file": "g2/use.go", "count": 2, "lines": [4]}]
    assert symbols(result, "g2/lib.go")["Calculate"]["change"] == "added"
    delta = {f["file"]: f for f in result["diagnostics"]["files"]}  # added: introduced
    assert [d["line"] for d in delta["g2/fresh.go"]["introduced"]] == [4], delta
    assert [d["line"] for d in delta["g2/old.go"]["resolved"]["diagnostics"]] == [4], delta
    with pytest.raises(RpcFailure) as info:
        await shared_client.tool("review_changes", since="nope")
    assert info.value.kind == "invalid_arguments" and "names no commit" in info.value.message
    with pytest.raises(RpcFailure) as info:  # a content hash is get_diagnostics' business
        await shared_client.tool("review_changes", since="sha256:" + "0" * 64)
    assert info.value.kind == "invalid_arguments" and "get_diagnostics" in info.value.message
    commit(repo, {}, "g2 done")


LIB_PY = (
    "def compute(x: int) -> int:\n    return x * 2\n\n\n"
    "def other() -> int:\n    return 1\n\n\n"
    "def third(a: int) -> int:\n    return a\n"
)
USE_PY = (
    "from t4.lib import compute, third\n\nprint(compute(1))\nprint(third(2))\nprint(compute(3))\n"
)


def symbols(result: dict[str, Any], file: str) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in by_file(result)[file]["symbols"]}


async def test_review_of_a_python_rename(
    shared_client: RpcClient, shared_daemon: SharedDaemon, repo: Path
) -> None:
    commit(
        repo,
        {"t4/__init__.py": "", "t4/lib.py": LIB_PY, "t4/use.py": USE_PY,
         "t4/main.py": "from t4 import lib\n\nlib.compute(5)\n"},
        "t4",
    )  # fmt: skip
    await shared_client.tool("get_diagnostics", path="t4/use.py")  # open, as an agent had it
    renamed = (
        LIB_PY.replace("def compute", "def calculate")
        .replace("return 1", "return 2")
        .replace("def third(a: int)", "def third(a: int, b: int = 0)")
    )
    write(repo, {"t4/lib.py": renamed})
    result = await unchanged(shared_client, repo, "review_changes", since="HEAD", path="t4")
    assert [(f["file"], f["status"]) for f in result["files"]] == [("t4/lib.py", "modified")]
    lib = by_file(result)["t4/lib.py"]
    assert {"old_start": 1, "old_lines": 1, "new_start": 1, "new_lines": 1} in lib["hunks"]
    found = symbols(result, "t4/lib.py")
    assert found["calculate"]["change"] == "added" and "references" not in found["calculate"]
    assert found["other"]["change"] == "body" and found["other"]["references"]["count"] == 0
    assert found["third"]["change"] == "signature"
    assert found["third"]["references"]["files"] == [
        {"file": "t4/use.py", "count": 2, "lines": [1, 4]}  # the import and the call
    ]
    removed = found["compute"]
    assert removed["change"] == "removed" and removed["line"] == 1
    radius = {g["file"]: g["lines"] for g in removed["references"]["files"]}
    assert radius == {"t4/use.py": [1, 3, 5], "t4/main.py": [3]}, removed
    assert removed["references"]["count"] == 4
    broke = {f["file"]: f for f in result["diagnostics"]["files"]}
    assert errors(broke["t4/use.py"]), broke  # the callers' import of compute broke
    assert result["diagnostics"]["introduced_count"] >= 1
    text = tool_text("review_changes", result).splitlines()  # the MCP text
    assert text[0].startswith("review since HEAD (") and "1 file, 4 definitions" in text[0]
    assert "M t4/lib.py -1,1 +1,1" in text[1]
    assert any(line.startswith("  - function compute t4/lib.py:1:5 (removed): 4 references")
               for line in text), text  # fmt: skip
    assert "      t4/use.py: 3 (1, 3, 5)" in text
    # the CLI, and Lua, on the same change
    cli = await trio.to_thread.run_sync(
        lambda: shared_daemon.env.run("review", "--path", "t4", cwd=repo)
    )
    assert cli.returncode == 0, cli.stderr
    assert "(removed): 4 references outside the change" in cli.stdout
    lua = await shared_client.call(
        "lua/eval",
        {"source": "local r = codeward.call('review_changes', {path = 't4'}) "
                   "return {n = #r.files, first = r.files[1].symbols[1].name}"},
    )  # fmt: skip
    assert lua["result"] == {"n": 1, "first": "calculate"}
    commit(repo, {}, "t4 done")


async def test_a_review_after_previews_of_other_revisions(
    shared_client: RpcClient, repo: Path
) -> None:
    """The sequence that once lost a rename's blast radius: the servers showed previews of
    other revisions first (so they run since before the files below exist), then a package
    is created at the top and its function renamed: its callers, files new to the servers,
    are named (each new file is told to basedpyright as created, though its writes follow:
    it reads the folders again for imports only then)."""
    commit(repo, {"t5/base.py": "B: int = 1\n"}, "t5 base")
    git(repo, "branch", "t5-side")
    write(repo, {"t5/base.py": "B: int = 'b'\n"})
    for since in ("HEAD", "merge-base:t5-side"):  # previews of other revisions
        await unchanged(shared_client, repo, "get_diagnostics", since=since, path="t5")
    write(repo, {"t5/base.py": "B: int = 1\n"})
    commit(
        repo,
        {"t6/__init__.py": "", "t6/lib.py": "def area(w: int) -> int:\n    return w * w\n",
         "t6/caller.py": "from t6.lib import area\n\narea(2)\n",
         "t5/far.py": "from t6 import lib\n\nprint(lib.area(3))\n"},
        "t6",
    )  # fmt: skip
    write(repo, {"t6/lib.py": "def surface(w: int) -> int:\n    return w * w\n"})
    result = await unchanged(shared_client, repo, "review_changes", path="t6")
    removed = symbols(result, "t6/lib.py")["area"]
    assert removed["change"] == "removed"
    radius = {g["file"]: g["lines"] for g in removed["references"]["files"]}
    assert radius == {"t6/caller.py": [1, 3], "t5/far.py": [3]}, removed
    commit(repo, {}, "t5 and t6 done")
