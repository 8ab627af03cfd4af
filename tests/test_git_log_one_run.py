"""git log in one run: the medium output rendered from the parse run is git's own, byte for
byte (merges, empty messages, blank and indented lines, trailing whitespace, a mailmap, tags
that a terminal would show); what only git can say (notes, tabs, options or config that
change the look) runs `git log` itself; a plain log never reads the index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.git import command, index_gitlinks, log_format, parse
from tests.git_repos import commit_all, git, git_bytes, git_home, make_repo, run, write

__all__ = ["git_home"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A history with a merge, an annotated and a light tag, an empty message, messages
    with leading blank lines, indented and CRLF lines, trailing whitespace, non-ASCII, and
    a mailmap that renames the author."""
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "1\n")
    commit_all(root, "first")
    write(root, "a.txt", "2\n")
    commit_all(root, "\n\nleading blanks\n\n\nbody   \n  indented\r\n\n\n")
    git(root, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    git(root, "checkout", "-q", "-b", "side")
    write(root, "s.txt", "s\n")
    commit_all(root, "side: caf\u00e9 \u00fcn\u00efcode")
    git(root, "checkout", "-q", "main")
    write(root, "a.txt", "3\n")
    commit_all(root, "third")
    git(root, "merge", "-q", "--no-ff", "side", "-m", "Merge side\n\nwith a body")
    git(root, "tag", "v1")
    git(root, "tag", "-a", "v2", "-m", "annotated", "HEAD~1")
    write(root, ".mailmap", "Proper Name <proper@example.com> <test@example.com>\n")
    commit_all(root, "   spaces around the subject   ")
    message = root.parent / "latin1.txt"
    message.write_bytes("Latin-1: d\u00e9j\u00e0 vu\n".encode("latin-1"))
    git(root, "-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "--allow-empty", "-F",
        str(message))  # fmt: skip
    return root


@pytest.fixture
def log_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every `git log` process run_git starts."""
    runs: list[list[str]] = []
    original = command.run_process

    async def counting(argv: list[str], **kwargs: Any) -> Any:
        if "log" in argv:
            runs.append(argv)
        return await original(argv, **kwargs)

    monkeypatch.setattr(command, "run_process", counting)
    return runs


PLAIN = {
    "whole history": [],
    "-n 3": ["-n", "3"],
    "-2": ["-2"],
    "reversed": ["--reverse"],
    "first parents, no merges": ["--first-parent", "--no-merges"],
    "a revision": ["main~2"],
    "a range and a pathspec": ["HEAD~4..HEAD", "--", "a.txt"],
    "grep": ["--grep=side", "-i"],
    "all refs, by date": ["--all", "--date-order", "--max-count=4"],
}


@pytest.mark.parametrize("args", PLAIN.values(), ids=list(PLAIN))
async def test_one_run_prints_what_git_log_prints(
    repo: Path, args: list[str], log_runs: list[list[str]]
) -> None:
    result = await run(repo, "log", args)
    assert result["output"] == git(repo, "log", *args)
    assert result["output"]  # there is something to show
    assert len(log_runs) == 1 and any(a.startswith("--format=") for a in log_runs[0])
    expected = parse.parse_log(git_bytes(repo, "log", "-z", f"--format={parse.LOG_FORMAT}",
                                         *args))  # fmt: skip
    assert result["parsed"] == {"commits": expected}


async def test_a_log_of_no_commits_prints_nothing(repo: Path, log_runs: list[list[str]]) -> None:
    result = await run(repo, "log", ["--grep=no such words"])
    assert result["output"] == "" == git(repo, "log", "--grep=no such words")
    assert result["parsed"] == {"commits": []} and len(log_runs) == 1


async def test_a_one_run_that_times_out_is_not_run_again(
    repo: Path, log_runs: list[list[str]]
) -> None:
    """The timeout is reported after one run's time, not after git log ran again."""
    from codeward.daemon.config import GitConfig
    from codeward.protocol.errors import ErrorKind, ToolError

    (repo / ".mailmap").unlink()
    os.mkfifo(repo / ".mailmap")  # git log waits for a writer that never comes
    with pytest.raises(ToolError) as info:
        await run(repo, "log", [], limits=GitConfig(timeout=0.5))
    assert info.value.kind is ErrorKind.TIMEOUT
    assert len(log_runs) == 1


def test_output_that_is_not_whole_records_is_not_rendered() -> None:
    oid = b"a" * 40
    whole = b"\x00".join([oid, b"", *[b"x"] * 13, b""])  # no notes
    assert log_format.medium(whole) is not None
    assert log_format.medium(whole + b"\x00extra") is None  # a NUL git let through
    assert log_format.medium(b"not-an-oid" + whole[40:]) is None
    assert log_format.parse_log(whole + b"\x00extra") is None


def notes(repo: Path) -> None:
    git(repo, "notes", "add", "-m", "a note", "HEAD~1")


def tab(repo: Path) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "a\ttab, expanded by columns")


FALLBACKS = {
    "notes": (notes, [], ""),
    "a tab": (tab, [], ""),
    "oneline": (None, ["--oneline"], ""),
    "patch": (None, ["-p", "-n", "2"], ""),
    "stat": (None, ["--stat"], ""),
    "decorate": (None, ["--decorate"], ""),
    "reflog walk": (None, ["-g", "-n", "2"], ""),
    "log.date": (None, [], "log.date=iso"),
    "log.decorate": (None, [], "log.decorate=full"),
    "no mailmap": (None, [], "log.mailmap=false"),
    "colour": (None, [], "color.ui=always"),
}


@pytest.mark.parametrize(("state", "args", "config"), FALLBACKS.values(), ids=list(FALLBACKS))
async def test_what_only_git_can_say_runs_git_log(
    repo: Path, state: Any, args: list[str], config: str, log_runs: list[list[str]]
) -> None:
    if state is not None:
        state(repo)
    if config:
        git(repo, "config", *config.split("="))
    result = await run(repo, "log", args)
    # a reflog's messages are shown as written (the Latin-1 commit's too)
    assert result["output"] == git_bytes(repo, "log", *args).decode("utf-8", "replace")
    assert len(log_runs) == 2
    assert result["parsed"]["commits"]


async def test_a_failing_log_reports_gits_error(repo: Path, log_runs: list[list[str]]) -> None:
    from codeward.protocol.errors import ErrorKind, ToolError

    with pytest.raises(ToolError) as info:
        await run(repo, "log", ["no-such-revision"])
    assert info.value.kind is ErrorKind.GIT_FAILED
    assert "no-such-revision" in info.value.details["stderr"]


def test_plain_arguments() -> None:
    assert log_format.plain(["-n", "20", "--since=2.weeks", "main", "--", "-p"])
    assert log_format.plain(["-n5", "-20", "--skip=3", "--author=x"])
    shaping = (["-p"], ["--stat"], ["--format=%H"], ["-g"], ["--left-right", "a...b"],
               ["--decorate"], ["--author", "x"], ["--boundary"], ["--submodule=diff"])  # fmt: skip
    for args in shaping:
        assert not log_format.plain(args), args


async def test_a_plain_log_never_reads_the_index(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its inspection's nested part is taken as it stands: a refreshed index is not read
    for it (on a large repository that read cost more than git log itself); the next
    status reads it."""
    reads: list[Path] = []
    original = index_gitlinks.read

    def counting(index: Path, hash_bytes: int) -> Any:
        reads.append(index)
        return original(index, hash_bytes)

    monkeypatch.setattr(index_gitlinks, "read", counting)
    await run(repo, "status")
    for n in range(3):
        os.utime(repo / "a.txt", ns=(10**9 * (n + 1),) * 2)
        git(repo, "update-index", "-q", "--refresh")  # a new index stat each time
        await run(repo, "log", ["-n", "2"])
    assert reads == [repo / ".git" / "index"]  # the first status' scan alone
    await run(repo, "log", ["-p", "-n", "1"])  # a diff may enter nested repositories
    assert len(reads) == 2
    os.utime(repo / "a.txt", ns=(10**9 * 9,) * 2)
    git(repo, "update-index", "-q", "--refresh")
    await run(repo, "status")
    assert len(reads) == 3
