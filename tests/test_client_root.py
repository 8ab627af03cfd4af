"""Root detection: `--root`, else the nearest `.git` above the working directory, else it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.client.root import git_toplevel, project_root


def test_git_directory_above_is_the_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert git_toplevel(deep) == repo
    assert project_root(None, deep) == repo
    assert project_root(None, repo) == repo


def test_git_file_of_a_worktree_counts(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / ".git").mkdir(parents=True)
    worktree = outer / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: ../.git/worktrees/wt\n")
    assert project_root(None, worktree / ".") == worktree


def test_no_git_means_the_working_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_toplevel(plain) is None  # nothing above a pytest tmp dir is a repository
    assert project_root(None, plain) == plain
    assert project_root("", plain) == plain


def test_explicit_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a" / ".git").mkdir(parents=True)
    assert project_root("other", tmp_path / "a") == tmp_path / "a" / "other"
    assert project_root(str(tmp_path / "x" / ".." / "y"), tmp_path / "a") == tmp_path / "y"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert project_root("~/proj", Path("/")) == tmp_path / "proj"


def test_default_cwd_is_the_process_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert project_root() == tmp_path
