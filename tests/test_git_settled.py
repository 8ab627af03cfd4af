"""What a path says is remembered while its settled stat stands, and read again as soon as
the path changes: a repository at rest costs `status.plain` three lstats, and an operation
started, a detached HEAD or a sparse checkout still shows at the next status."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codeward.daemon.git import settled, status
from tests.git_repos import commit_all, git, make_repo, write


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stat settled: the clock reads an hour ahead."""
    monkeypatch.setattr(settled, "now_ns", lambda: time.time_ns() + 3600 * 10**9)


class Counted:
    """A work-out that counts its calls and reads the file."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, path: str) -> bytes | None:
        self.calls += 1
        try:
            return Path(path).read_bytes()
        except OSError:
            return None


@pytest.mark.usefixtures("later")
def test_a_settled_stat_is_read_once_and_a_change_read_again(tmp_path: Path) -> None:
    path = tmp_path / "HEAD"
    path.write_bytes(b"one")
    read = Counted()
    assert settled.value(str(path), read) == b"one"
    assert settled.value(str(path), read) == b"one"
    assert read.calls == 1
    path.write_bytes(b"two")  # in place: the same inode, a new change time
    assert settled.value(str(path), read) == b"two"
    (tmp_path / "new").write_bytes(b"three")
    os.replace(tmp_path / "new", path)  # as git writes HEAD: another inode
    assert settled.value(str(path), read) == b"three"
    path.unlink()
    assert settled.value(str(path), read) is None
    assert settled.value(str(path), read) is None
    assert read.calls == 4  # absent is remembered too, until the path appears
    path.write_bytes(b"four")
    assert settled.value(str(path), read) == b"four"


def test_a_path_changed_just_now_is_read_every_time(tmp_path: Path) -> None:
    path = tmp_path / "HEAD"
    path.write_bytes(b"one")
    read = Counted()
    for _ in range(3):
        assert settled.value(str(path), read) == b"one"
    assert read.calls == 3  # its change time is this very tick: not settled yet


@pytest.mark.usefixtures("later")
def test_a_symbolic_link_is_read_every_time(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"one")
    (tmp_path / "HEAD").symlink_to("target")
    read = Counted()
    assert settled.value(str(tmp_path / "HEAD"), read) == b"one"
    (tmp_path / "target").write_bytes(b"two")  # the link's own stat stays as it was
    assert settled.value(str(tmp_path / "HEAD"), read) == b"two"
    assert read.calls == 2


@pytest.mark.usefixtures("later")
def test_plain_reads_a_repository_at_rest_once_and_sees_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "one\n")
    commit_all(root, "first")
    git_dir = root / ".git"
    listings: list[str] = []
    listdir = os.listdir

    def counted(path: str) -> list[str]:
        listings.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counted)
    assert status.plain(False, git_dir)
    assert status.plain(False, git_dir)
    assert len(listings) == 1
    (git_dir / "MERGE_HEAD").write_text("0" * 40 + "\n")  # a merge in progress
    assert not status.plain(False, git_dir)
    (git_dir / "MERGE_HEAD").unlink()
    assert status.plain(False, git_dir)
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "--detach")
    assert (git_dir / "HEAD").read_text().strip() == head
    assert not status.plain(False, git_dir)  # detached: "at" or "from" is git's to say
    git(root, "checkout", "-q", "main")
    assert status.plain(False, git_dir)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "sparse-checkout").write_text("/*\n")
    assert not status.plain(False, git_dir)
    (git_dir / "info" / "sparse-checkout").unlink()
    assert status.plain(False, git_dir)
