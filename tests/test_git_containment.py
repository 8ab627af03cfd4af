"""git reads only the repository the user opened: alternates, http-alternates, commondir,
a root gitfile and the symbolic links in git directories must lead inside it (a linked
worktree's and a submodule's git directory, which name their work tree back, are the
exceptions). Real git, real repositories in temp dirs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codeward.daemon.git.repository import _cache
from codeward.protocol.errors import ErrorKind, ToolError
from tests.git_repos import commit_all, git, git_home, make_repo, run, write

__all__ = ["git_home"]


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    _cache.clear()  # each test's repositories are inspected anew


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "project")
    write(root, "a.txt", "one\n")
    commit_all(root, "first")
    return root


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Another repository on this machine, with a file the project must not read."""
    elsewhere = make_repo(tmp_path / "elsewhere")
    write(elsewhere, "secret.txt", "SECRET\n")
    commit_all(elsewhere, "secret")
    return elsewhere


def secret_blob(other: Path) -> str:
    return git(other, "rev-parse", "HEAD:secret.txt").strip()


async def unsafe(root: Path, subcommand: str = "status", args: list[str] | None = None) -> str:
    """The file an `unsafe_repository_config` refusal names (the message has no outside path)."""
    with pytest.raises(ToolError) as info:
        await run(root, subcommand, args or [])
    error = info.value
    assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG, error.message
    assert str(root.parent) not in error.message
    assert "SECRET" not in error.message
    return error.details["file"]


@pytest.mark.parametrize("how", ["absolute", "relative", "quoted", "nested", "padded"])
async def test_alternates_outside_are_refused(
    repo: Path, other: Path, tmp_path: Path, how: str
) -> None:
    blob = secret_blob(other)
    info = repo / ".git" / "objects" / "info"
    line = {
        "absolute": f"{other}/.git/objects",
        "relative": "../../../elsewhere/.git/objects",
        "quoted": f'"{other}/.git/\\157bjects"',
        "nested": str(repo / "store" / "objects"),
        "padded": "# padding\n" * 20_000 + f"{other}/.git/objects",  # past 64 KiB
    }[how]
    if how == "nested":  # an alternate inside the root whose own alternates lead out
        (repo / "store" / "objects" / "info").mkdir(parents=True)
        (repo / "store" / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
    (info / "alternates").write_text(f"# comment\n\n{line}\n")
    assert git(repo, "cat-file", "-p", blob) == "SECRET\n"  # plain git reads it
    assert await unsafe(repo) in (".git/objects/info/alternates",
                                  "store/objects/info/alternates")  # fmt: skip
    assert await unsafe(repo, "show", [blob])


async def test_alternates_too_long_to_check(repo: Path) -> None:
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.write_text("# padding\n" * 200_000)  # 2 MB
    with pytest.raises(ToolError) as info:
        await run(repo, "status")
    assert "too long to check" in info.value.message


async def test_alternates_inside_the_root_are_fine(repo: Path) -> None:
    store = make_repo(repo.parent / "project" / "vendor")
    write(store, "v.txt", "vendored\n")
    commit_all(store, "v")
    blob = git(store, "rev-parse", "HEAD:v.txt").strip()
    (repo / ".git" / "objects" / "info" / "alternates").write_text("../../vendor/.git/objects\n")
    assert (await run(repo, "show", [blob]))["output"] == "vendored\n"


async def test_http_alternates(repo: Path, other: Path) -> None:
    listing = repo / ".git" / "objects" / "info" / "http-alternates"
    listing.write_text("https://example.invalid/objects\n")
    assert (await run(repo, "status"))["exit_code"] == 0
    _cache.clear()
    for line in (f"{other}/.git/objects", f"file://{other}/.git/objects"):
        listing.write_text(line + "\n")
        assert await unsafe(repo) == ".git/objects/info/http-alternates"
        _cache.clear()


async def test_commondir_outside_is_refused(repo: Path, other: Path) -> None:
    (repo / ".git" / "commondir").write_text(f"{other}/.git\n")
    assert await unsafe(repo) == ".git/commondir"


async def test_a_root_gitfile_must_stay_in_the_root(
    repo: Path, other: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").write_text(f"gitdir: {other}/.git\n")
    assert git(fake, "show", "HEAD:secret.txt") == "SECRET\n"  # plain git follows it
    assert await unsafe(fake, "show", ["HEAD:secret.txt"]) == ".git"
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(other / ".git")
    assert await unsafe(linked, "log") == ".git"


async def test_a_separate_git_dir_inside_the_root(tmp_path: Path, other: Path) -> None:
    """`x.git` in the root behind a gitfile is the repository's: used, and checked."""
    root = tmp_path / "sep"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", "--separate-git-dir", str(root / "x.git"))
    write(root, "a.txt", "one\n")
    commit_all(root, "first")
    assert (await run(root, "log", ["--format=%s"]))["output"] == "first\n"
    alternates = root / "x.git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{other}/.git/objects\n")
    _cache.clear()
    assert await unsafe(root) == "x.git/objects/info/alternates"


async def test_a_linked_worktree_is_its_main_repositorys(
    repo: Path, other: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    write(worktree, "w.txt", "w\n")
    result = await run(worktree, "status", ["--porcelain"])
    assert result["output"] == "?? w.txt\n"
    assert (await run(worktree, "log", ["--format=%s"]))["output"] == "first\n"
    # the main repository's alternates lead out: refused from the worktree too
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{other}/.git/objects\n")
    assert (await unsafe(worktree)).endswith("objects/info/alternates")
    alternates.unlink()
    _cache.clear()
    # a gitfile into another repository's worktree folder that does not name it back
    forged = tmp_path / "forged"
    forged.mkdir()
    gitdir = Path(git(worktree, "rev-parse", "--absolute-git-dir").strip())
    (forged / ".git").write_text(f"gitdir: {gitdir}\n")
    assert git(forged, "log", "--format=%s") == "first\n"  # plain git follows it
    assert await unsafe(forged) == ".git"


async def test_a_submodule_opened_as_the_root(repo: Path, other: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(other), "sub"], cwd=repo, check=True, capture_output=True)  # fmt: skip
    commit_all(repo, "sub")
    sub = repo / "sub"
    assert (sub / ".git").is_file()  # its git directory is the superproject's modules/sub
    assert (await run(sub, "show", ["HEAD:secret.txt"]))["output"] == "SECRET\n"
    # the same gitfile copied elsewhere: that folder is not the submodule's work tree
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").write_text((sub / ".git").read_text().replace(
        "gitdir: ../", f"gitdir: {repo}/"))  # fmt: skip
    assert await unsafe(fake) == ".git"


@pytest.mark.parametrize(
    "name",
    ["packed-refs", "shallow", "info/exclude", "info/attributes", "refs/heads/stolen",
     "objects/info/alternates", "logs/HEAD", "config", "FETCH_HEAD", "refs/tags"],
)  # fmt: skip
async def test_symbolic_links_out_of_the_git_directory(
    repo: Path, other: Path, tmp_path: Path, name: str
) -> None:
    target = tmp_path / "outside" / "target"
    target.parent.mkdir()
    if name == "refs/tags":
        target = other / ".git" / "refs" / "heads"
    elif name == "config":
        target = other / ".git" / "config"
    else:
        target.write_text(git(other, "rev-parse", "HEAD"))
    link = repo / ".git" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir():
        os.rmdir(link)
    elif link.exists():
        link.unlink()
    link.symlink_to(target)
    assert await unsafe(repo, "log", ["--oneline"]) == f".git/{name}"


async def test_symbolic_links_inside_are_fine(repo: Path) -> None:
    (repo / ".git" / "info" / "exclude").unlink()
    write(repo, "ignores", "*.log\n")
    (repo / ".git" / "info" / "exclude").symlink_to(repo / "ignores")
    write(repo, "x.log", "x\n")
    assert (await run(repo, "status", ["--porcelain"]))["output"] == "?? ignores\n"


async def test_a_change_after_a_safe_inspection_is_seen(repo: Path, other: Path) -> None:
    assert (await run(repo, "status"))["exit_code"] == 0
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
    assert await unsafe(repo) == ".git/objects/info/alternates"
    (repo / ".git" / "objects" / "info" / "alternates").unlink()
    assert (await run(repo, "status"))["exit_code"] == 0
    (repo / ".git" / "shallow").symlink_to(other / ".git" / "HEAD")
    assert await unsafe(repo) == ".git/shallow"


async def test_a_root_below_the_top_keeps_working(repo: Path, other: Path) -> None:
    sub = repo / "deep" / "er"
    write(sub, "s.txt", "s\n")
    assert (await run(sub, "status", ["--porcelain"]))["output"] == "?? deep/\n"
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
    _cache.clear()
    assert await unsafe(sub) == ".git/objects/info/alternates"
