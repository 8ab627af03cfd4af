"""The parsers, on real git output from repositories with nasty file names and messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward.daemon.git import parse
from codeward.daemon.git.command import _DIFF_FORMAT
from tests.git_repos import NASTY_NAMES, commit_all, git, git_bytes, git_home, make_repo, write

__all__ = ["git_home"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    for name in NASTY_NAMES:
        write(root, name, f"one\ntwo\nthree\n{name}\n")
    write(root, "bin.dat", "")
    (root / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    write(root, "rename me.txt", "a\nb\nc\nd\ne\n")
    commit_all(root, "initial")
    return root


def test_status_with_nasty_names(repo: Path) -> None:
    git(repo, "mv", "rename me.txt", 'renamed ✓ "name".txt')
    write(repo, "sp ace.txt", "changed\n")
    git(repo, "add", "sp ace.txt")
    write(repo, "sp ace.txt", "changed again\n")
    write(repo, "new\nline.txt", "edited\n")
    (repo / "tab\there.txt").unlink()
    write(repo, "untracked\nfile ü.txt", "u\n")
    data = git_bytes(repo, "status", "--porcelain=v2", "-z", "--branch")
    status = parse.parse_status(data)
    assert status["branch"]["head"] == "main"
    assert len(status["branch"]["oid"]) == 40
    assert not status["branch"]["detached"]
    assert status["branch"]["upstream"] is None
    staged = {e["path"]: e for e in status["staged"]}
    assert staged["sp ace.txt"]["status"] == "modified"
    renamed = staged['renamed ✓ "name".txt']
    assert renamed["status"] == "renamed"
    assert renamed["orig_path"] == "rename me.txt"
    assert renamed["similarity"] == 100
    unstaged = {e["path"]: e["status"] for e in status["unstaged"]}
    assert unstaged == {
        "sp ace.txt": "modified",
        "new\nline.txt": "modified",
        "tab\there.txt": "deleted",
    }
    assert status["untracked"] == ["untracked\nfile ü.txt"]
    assert status["conflicted"] == []
    assert status["clean"] is False


def test_status_upstream_ahead_behind_and_conflicts(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "-u", "origin", "main")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    write(other, 'quo"te.txt', "theirs\n")
    commit_all(other, "theirs")
    git(other, "push", "-q", "origin", "main")
    write(repo, 'quo"te.txt', "ours\n")
    commit_all(repo, "ours")
    git(repo, "fetch", "-q")
    status = parse.parse_status(git_bytes(repo, "status", "--porcelain=v2", "-z", "--branch"))
    assert status["branch"]["upstream"] == "origin/main"
    assert (status["branch"]["ahead"], status["branch"]["behind"]) == (1, 1)
    git(repo, "merge", "origin/main", check=False)
    status = parse.parse_status(git_bytes(repo, "status", "--porcelain=v2", "-z", "--branch"))
    assert status["conflicted"] == [{"path": 'quo"te.txt', "status": "both_modified"}]


def test_status_detached_and_initial(tmp_path: Path, repo: Path) -> None:
    empty = make_repo(tmp_path / "empty")
    status = parse.parse_status(git_bytes(empty, "status", "--porcelain=v2", "-z", "--branch"))
    assert status["branch"]["oid"] is None
    assert status["branch"]["head"] == "main"
    assert status["clean"] is True
    git(repo, "checkout", "-q", "--detach")
    status = parse.parse_status(git_bytes(repo, "status", "--porcelain=v2", "-z", "--branch"))
    assert status["branch"]["detached"] is True
    assert status["branch"]["head"] is None


def test_diff_with_nasty_names(repo: Path) -> None:
    git(repo, "mv", "rename me.txt", "renamed\nname.txt")
    write(repo, "renamed\nname.txt", "a\nb\nc\nd\ne\nf\n")
    write(repo, "sp ace.txt", "one\nTWO\nthree\nsp ace.txt\nfour\n")
    (repo / "bin.dat").write_bytes(b"\x00\x03binary")
    (repo / "back\\slash.txt").unlink()
    write(repo, "ünï cödé.txt", "one\ntwo\nthree\nünï cödé.txt\n" + "x\n" * 20 + "last\n")
    write(repo, "brand new ü.txt", "new\n")
    git(repo, "add", "-A")
    files = parse.parse_diff(git_bytes(repo, "diff", "--cached", *_DIFF_FORMAT))
    by_path = {f["path"]: f for f in files}
    assert set(by_path) == {
        "renamed\nname.txt", "sp ace.txt", "bin.dat", "back\\slash.txt", "ünï cödé.txt",
        "brand new ü.txt",
    }  # fmt: skip
    renamed = by_path["renamed\nname.txt"]
    assert renamed["status"] == "renamed"
    assert renamed["old_path"] == "rename me.txt"
    assert (renamed["additions"], renamed["deletions"]) == (1, 0)
    assert [(h["new_start"], h["new_lines"]) for h in renamed["hunks"]] == [(3, 4)]
    space = by_path["sp ace.txt"]
    assert space["status"] == "modified"
    assert (space["additions"], space["deletions"]) == (2, 1)
    assert space["hunks"] == [{"old_start": 1, "old_lines": 4, "new_start": 1,
                               "new_lines": 5, "heading": ""}]  # fmt: skip
    binary = by_path["bin.dat"]
    assert binary["binary"] is True
    assert binary["hunks"] == []
    deleted = by_path["back\\slash.txt"]
    assert deleted["status"] == "deleted"
    assert deleted["deletions"] == 4
    assert deleted["hunks"][0]["new_lines"] == 0
    added = by_path["brand new ü.txt"]
    assert added["status"] == "added"
    assert added["hunks"][0]["old_start"] == 0
    unicode = by_path["ünï cödé.txt"]
    assert unicode["additions"] == 21
    assert not unicode["binary"]


def test_diff_hunks_survive_tricky_content(repo: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(40))
    write(repo, "tricky.txt", text)
    commit_all(repo, "tricky")
    lines = text.splitlines()
    lines[2] = "diff --git a/x b/x"
    lines[3] = ""
    lines[30] = "@@ -1 +1 @@ not a hunk"
    (repo / "tricky.txt").write_text("\n".join(lines))  # also: no newline at end
    files = parse.parse_diff(git_bytes(repo, "diff", *_DIFF_FORMAT))
    assert [f["path"] for f in files] == ["tricky.txt"]
    hunks = files[0]["hunks"]
    assert len(hunks) == 3
    assert [h["old_start"] for h in hunks] == [1, 28, 37]


def test_diff_empty() -> None:
    assert parse.parse_diff(b"") == []


def test_log_with_any_character_in_messages(repo: Path) -> None:
    message = 'subject with "quotes" ü\n\nbody line\n\x1e record sep\n\n%x00 and tabs\there\n'
    write(repo, "sp ace.txt", "next\n")
    git(repo, "commit", "-q", "-a", "-m", message, "--author", "Ünï Cödé <u@example.com>")
    write(repo, "sp ace.txt", "third\n")
    git(repo, "commit", "-q", "-a", "--allow-empty-message", "-m", "")
    data = git_bytes(repo, "log", "-z", f"--format={parse.LOG_FORMAT}")
    commits = parse.parse_log(data)
    assert len(commits) == 3
    empty, special, first = commits
    assert empty["subject"] == "" and empty["body"] == ""
    assert special["subject"] == 'subject with "quotes" ü'
    assert special["body"] == "body line\n\x1e record sep\n\n%x00 and tabs\there\n"
    assert special["author"] == "Ünï Cödé"
    assert special["email"] == "u@example.com"
    assert special["date"][4] == "-" and "T" in special["date"]
    assert special["parents"] == [first["hash"]]
    assert first["parents"] == []
    assert first["subject"] == "initial"


def test_log_merge_parents(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    write(repo, "side.txt", "s\n")
    commit_all(repo, "side")
    git(repo, "checkout", "-q", "main")
    write(repo, "main.txt", "m\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "--no-edit", "side")
    commits = parse.parse_log(git_bytes(repo, "log", "-1", "-z", f"--format={parse.LOG_FORMAT}"))
    assert len(commits[0]["parents"]) == 2


def test_branches(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "-u", "origin", "main")
    git(repo, "branch", "feature/ü-x")
    write(repo, "sp ace.txt", "ahead\n")
    commit_all(repo, "ahead")
    data = git_bytes(repo, "branch", "--list", "--all", f"--format={parse.BRANCH_FORMAT}")
    branches = parse.parse_branches(data)
    assert branches["current"] == "main"
    local = {b["name"]: b for b in branches["local"]}
    assert set(local) == {"main", "feature/ü-x"}
    assert local["main"]["upstream"] == "origin/main"
    assert (local["main"]["ahead"], local["main"]["behind"]) == (1, 0)
    assert local["feature/ü-x"]["upstream"] is None
    assert [r["name"] for r in branches["remote"]] == ["origin/main"]
    git(repo, "checkout", "-q", "--detach")
    data = git_bytes(repo, "branch", "--list", "--all", f"--format={parse.BRANCH_FORMAT}")
    branches = parse.parse_branches(data)
    assert branches["current"] is None
    assert branches["detached"] is True


def test_tags(repo: Path) -> None:
    git(repo, "tag", "light")
    git(repo, "tag", "-a", "v1.0", "-m", 'Release ü "one"\n\nnotes')
    tags = parse.parse_tags(git_bytes(repo, "tag", "--list", f"--format={parse.TAG_FORMAT}"))
    head = git(repo, "rev-parse", "HEAD").strip()
    by_name = {t["name"]: t for t in tags}
    assert by_name["light"] == {"name": "light", "annotated": False, "oid": head,
                                "commit": head, "subject": "initial"}  # fmt: skip
    assert by_name["v1.0"]["annotated"] is True
    assert by_name["v1.0"]["commit"] == head
    assert by_name["v1.0"]["oid"] != head
    assert by_name["v1.0"]["subject"] == 'Release ü "one"'


def test_stash_list(repo: Path) -> None:
    write(repo, "sp ace.txt", "wip 1\n")
    git(repo, "stash", "push", "-q", "-m", "first ü")
    write(repo, "sp ace.txt", "wip 2\n")
    git(repo, "stash", "push", "-q", "-m", "second\tone")
    data = git_bytes(repo, "stash", "list", "-z", f"--format={parse.STASH_FORMAT}")
    stashes = parse.parse_stash_list(data)
    assert [s["ref"] for s in stashes] == ["stash@{0}", "stash@{1}"]
    assert [s["index"] for s in stashes] == [0, 1]
    assert stashes[0]["message"] == "On main: second one"  # git folds whitespace
    assert stashes[1]["message"] == "On main: first ü"
    assert all(len(s["hash"]) == 40 for s in stashes)


def test_remotes(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/a b.git")
    git(repo, "remote", "add", "up", "git@example.com:x/y.git")
    git(repo, "remote", "set-url", "--push", "up", "ssh://example.com/push")
    remotes = parse.parse_remotes(git_bytes(repo, "remote", "-v"))
    assert remotes == [
        {"name": "origin", "fetch_url": "https://example.com/a b.git",
         "push_url": "https://example.com/a b.git"},
        {"name": "up", "fetch_url": "git@example.com:x/y.git",
         "push_url": "ssh://example.com/push"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("quoted", "plain"),
    [
        ('"a\\tb"', "a\tb"),
        ('"new\\nline"', "new\nline"),
        ('"\\303\\274"', "ü"),
        ('"q\\"x\\\\y"', 'q"x\\y'),
        ("plain name", "plain name"),
    ],
)
def test_unquote_c(quoted: str, plain: str) -> None:
    assert parse.unquote_c(quoted) == plain


def test_unquote_c_rejects_malformed() -> None:
    with pytest.raises(ValueError):
        parse.unquote_c('"a"b"')
    with pytest.raises(ValueError):
        parse.unquote_c('"bad \\q escape"')


def test_garbage_input_does_not_crash() -> None:
    assert parse.parse_status(b"\x00\x00garbage\x00")["clean"] is True
    assert parse.parse_log(b"not a log") == []
    assert parse.parse_branches(b"") == {"current": None, "detached": False, "local": [],
                                          "remote": []}  # fmt: skip
    assert parse.parse_remotes(b"no tab here\n") == []
    assert parse.parse_stash_list(b"") == []
    assert parse.parse_tags(b"") == []
