"""The repository's inspection is redone only for what changed: an index refreshed by git
keeps it, a gitlink added or removed, a nested `.git` or a config file changed redo their
part; the index's gitlinks are read from real index files of every format git writes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.git import command, index_gitlinks, repository
from codeward.protocol.errors import ErrorKind, ToolError
from tests.git_repos import commit_all, git, git_home, make_repo, run, write

__all__ = ["git_home"]

GIT = shutil.which("git") or "git"


def listed_gitlinks(repo: Path) -> frozenset[bytes]:
    """The gitlinks as git itself lists them."""
    out = git(repo, "ls-files", "-z", "--stage")
    return frozenset(
        name.encode() for info, _, name in (r.partition("\t") for r in out.split("\0") if r)
        if info.startswith("160000")
    )  # fmt: skip


def add_gitlink(repo: Path, name: str, oid: str) -> None:
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{oid},{name}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    for i in range(30):
        write(root, f"d{i % 3}/file {i}.txt", f"{i}\n")
    commit_all(root, "files")
    return root


def test_gitlinks_of_every_index_format(repo: Path) -> None:
    oid = git(repo, "rev-parse", "HEAD").strip()
    for name in ("sub", "d1/deep sub", "z" * 5000):  # the last one's length overflows 0xFFF
        add_gitlink(repo, name, oid)
    index = repo / ".git" / "index"
    expected = listed_gitlinks(repo)
    assert len(expected) == 3
    read = index_gitlinks.read(index, 20)
    assert read is not None and read.gitlinks == expected
    assert read.stat == index_gitlinks.stat_key(index.stat())
    write(repo, "ita.txt", "x\n")
    git(repo, "add", "--intent-to-add", "ita.txt")  # extended flags: index version 3
    assert index.read_bytes()[4:8] == b"\x00\x00\x00\x03"
    assert index_gitlinks.parse(index.read_bytes(), 20) == expected
    git(repo, "update-index", "--index-version", "4")
    assert index_gitlinks.parse(index.read_bytes(), 20) is None  # git must list it
    git(repo, "update-index", "--index-version", "2")
    git(repo, "update-index", "--split-index")
    read = index_gitlinks.read(index, 20)
    assert read is not None and read.gitlinks is None
    git(repo, "update-index", "--no-split-index")  # whole again; its shared part stays
    assert any(p.name.startswith("sharedindex.") for p in (repo / ".git").iterdir())
    read = index_gitlinks.read(index, 20)
    assert read is not None and read.gitlinks == expected
    assert index_gitlinks.read(repo / ".git" / "no-index", 20) is None


def test_gitlinks_after_names_of_every_padding(repo: Path) -> None:
    """Names of every length modulo 8 before and between the gitlinks (each entry's padding
    differs), in versions 2 and 3: the search of the modes' aligned bytes finds them all."""
    oid = git(repo, "rev-parse", "HEAD").strip()
    for n in range(1, 17):
        write(repo, f"p/{'f' * n}", f"{n}\n")
    git(repo, "add", "p")
    for n in range(1, 17):
        add_gitlink(repo, f"p/{'g' * n}", oid)
    expected = listed_gitlinks(repo)
    assert len(expected) == 16
    index = repo / ".git" / "index"
    assert index_gitlinks.parse(index.read_bytes(), 20) == expected
    write(repo, "ita.txt", "x\n")
    git(repo, "add", "--intent-to-add", "ita.txt")  # extended flags: 2 bytes more per entry
    assert index.read_bytes()[4:8] == b"\x00\x00\x00\x03"
    assert index_gitlinks.parse(index.read_bytes(), 20) == expected


def test_gitlinks_of_a_sha256_repository(tmp_path: Path) -> None:
    root = tmp_path / "sha256"
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256")
    write(root, "a.txt", "a\n")
    commit_all(root, "a")
    add_gitlink(root, "sub", git(root, "rev-parse", "HEAD").strip())
    data = (root / ".git" / "index").read_bytes()
    assert index_gitlinks.parse(data, 32) == {b"sub"} == listed_gitlinks(root)


def test_a_fifo_index_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "index")
    read = index_gitlinks.read(tmp_path / "index", 20)
    assert read is not None and read.gitlinks is None


async def test_a_refreshed_index_keeps_the_inspection(repo: Path) -> None:
    first = await repository.inspect(GIT, repo)
    kept = repository._cache[repo].repo  # (`first` may carry this call's listing)
    assert first == kept
    index = repo / ".git" / "index"
    before = index.stat()
    os.utime(repo / "d0" / "file 0.txt", ns=(1_000_000_000, 1_000_000_000))
    git(repo, "update-index", "-q", "--refresh")  # what a user's `git status` does
    assert index.stat().st_mtime_ns != before.st_mtime_ns
    assert await repository.inspect(GIT, repo) == first
    assert repository._cache[repo].repo is kept
    git(repo, "add", "-A")  # a new stat again, no gitlink
    assert await repository.inspect(GIT, repo) == first
    assert repository._cache[repo].repo is kept


async def test_a_gitlink_added_or_removed_redoes_the_nested_part(repo: Path) -> None:
    first = await repository.inspect(GIT, repo)
    assert not first.gitlinks
    inner = make_repo(repo / "inner")
    write(inner, "n.txt", "n\n")
    commit_all(inner, "inner")
    git(repo, "add", "inner")
    added = await repository.inspect(GIT, repo)
    assert added.gitlinks and added is not first
    assert added.watched[0] == repo / "inner" / ".git"
    git(inner, "config", "filter.cw.clean", "false")  # the nested config, by its own stat
    with pytest.raises(ToolError) as info:
        await repository.inspect(GIT, repo)
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    git(inner, "config", "--unset", "filter.cw.clean")
    assert (await repository.inspect(GIT, repo)).gitlinks
    git(repo, "update-index", "--force-remove", "inner")
    removed = await repository.inspect(GIT, repo)
    assert not removed.gitlinks and removed.watched == ()


async def test_an_index_unread_here_is_listed_by_git(repo: Path) -> None:
    git(repo, "update-index", "--index-version", "4")
    first = await repository.inspect(GIT, repo)
    os.utime(repo / "d0" / "file 0.txt", ns=(1_000_000_000, 1_000_000_000))
    git(repo, "update-index", "-q", "--refresh")
    again = await repository.inspect(GIT, repo)
    assert again is not first and again == first  # listed again, the same result


async def test_a_config_change_redoes_the_config_part(repo: Path) -> None:
    first = await repository.inspect(GIT, repo)
    git(repo, "config", "core.fsmonitor", "false")  # false: safe, but a change
    second = await repository.inspect(GIT, repo)
    assert second is not first
    entries = {(e.scope, e.key, e.value) for e in second.entries}
    assert ("local", "core.fsmonitor", "false") in entries
    git(repo, "config", "core.fsmonitor", "true")
    with pytest.raises(ToolError) as info:
        await repository.inspect(GIT, repo)
    assert info.value.details["keys"] == ["core.fsmonitor"]


async def test_the_containment_part_by_its_own_key(repo: Path, tmp_path: Path) -> None:
    await repository.inspect(GIT, repo)
    record = repository._cache[repo]
    os.utime(repo / "d0" / "file 0.txt", ns=(1_000_000_000, 1_000_000_000))
    git(repo, "update-index", "-q", "--refresh")  # index.lock came and went in .git
    git(repo, "status")  # a plain status: it takes the lock, writes nothing
    await repository.inspect(GIT, repo)
    assert repository._cache[repo] is record  # no part ran again, containment included
    outside = tmp_path / "elsewhere" / "objects"
    outside.mkdir(parents=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{outside}\n")
    with pytest.raises(ToolError) as info:
        await repository.inspect(GIT, repo)
    assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG


async def test_status_after_an_index_change_lists_the_git_directory_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every index git writes changes `.git`'s stat: the containment part lists it again,
    and status takes what that listing says (an operation in progress) from it rather than
    listing it a second time; a call that listed nothing hands on no names."""
    git_dir = repo / ".git"
    await run(repo, "status")
    listings: list[str] = []
    listdir, scandir = os.listdir, os.scandir

    def counted_listdir(path: str) -> list[str]:
        listings.append(str(path))
        return listdir(path)

    def counted_scandir(path: str) -> Any:
        listings.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "listdir", counted_listdir)
    monkeypatch.setattr(os, "scandir", counted_scandir)
    renders: list[bool] = []
    renderer = command._renderer

    def rendering(*args: Any) -> Any:
        render = renderer(*args)
        renders.append(render is not None)
        return render

    monkeypatch.setattr(command, "_renderer", rendering)
    for stamp in (1, 2):  # what an editor's save and a user's `git status` do
        os.utime(repo / "d0" / "file 0.txt", ns=(stamp * 10**9, stamp * 10**9))
        git(repo, "update-index", "-q", "--refresh")
        listings.clear()
        result = await run(repo, "status")
        assert listings.count(str(git_dir)) == 1
        assert "On branch main" in result["output"] and renders[-1]
    found = await repository.inspect(GIT, repo)  # nothing changed: nothing listed
    assert found.git_dir_names is None and found is repository._cache[repo].repo
    (git_dir / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))  # a merge under way
    found = await repository.inspect(GIT, repo)  # a new entry: the containment part reruns
    assert found.git_dir_names is not None and "MERGE_HEAD" in found.git_dir_names
    assert not renderer(command.classify(repo, "status", []), found)  # git's own words
