"""How many git processes a git_command costs: `status` on a repository already seen runs git
once in all (its inspection is reused until its config changes); a subcommand whose result
takes more than one run starts them together, never one after another: the user's output
and the parse run of `log` (in a format other than the default), `branch`, `tag`, `remote`
and `stash list`, and the three of `show` (its output, the commit's log, its diff)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.git import command, runner
from tests.git_repos import commit_all, git, git_home, make_repo, run, write

__all__ = ["git_home"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "one\n")
    commit_all(root, "first")
    git(root, "tag", "v1")
    write(root, "a.txt", "two\n")
    git(root, "stash", "-q")
    return root


CASES = [
    ("log", ["-1", "--oneline"], 2),  # a plain log runs once (test_git_log_one_run)
    ("show", [], 3),
    ("branch", [], 2),
    ("tag", [], 2),
    ("remote", [], 2),
    ("stash", ["list"], 2),
]


@pytest.mark.parametrize(("subcommand", "args", "runs"), CASES, ids=[c[0] for c in CASES])
async def test_the_runs_of_one_command_overlap(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    subcommand: str,
    args: list[str],
    runs: int,
) -> None:
    started: list[list[str]] = []
    all_started = trio.Event()
    original = command.run_process

    async def together(argv: list[str], **kwargs: Any) -> Any:
        started.append(argv)
        if len(started) == runs:
            all_started.set()
        await all_started.wait()  # a run started only after another ended never gets here
        return await original(argv, **kwargs)

    monkeypatch.setattr(command, "run_process", together)
    with trio.fail_after(30):
        result = await run(repo, subcommand, args)
    assert len(started) == runs
    assert result["output"] == git(repo, subcommand, *args)
    assert result["parsed"] is not None


async def test_status_on_a_repository_seen_before_runs_git_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[list[str]] = []
    original = runner.spawn

    def counting(argv: list[str], **kwargs: Any) -> Any:
        spawned.append(list(argv))
        return original(argv, **kwargs)

    monkeypatch.setattr(runner, "spawn", counting)
    first = await run(repo, "status")
    assert len(spawned) > 1  # the repository's inspection: where it is, its config
    spawned.clear()
    again = await run(repo, "status")
    assert again["output"] == first["output"] == git(repo, "status")
    assert len(spawned) == 1 and "--porcelain=v2" in spawned[0]
    spawned.clear()
    git(repo, "config", "core.abbrev", "12")  # its config changed: inspected again
    await run(repo, "status")
    assert any("config" in argv for argv in spawned) and len(spawned) > 1
