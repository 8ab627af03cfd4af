"""git status and git diff in one run: the output rendered from the parser's run (the long
status format from porcelain v2, the patch of `--raw --numstat -p -z`) is git's own, byte
for byte, in every state it claims; everything else falls back to running git itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from codeward.daemon.config import GitConfig
from codeward.daemon.git import command, status
from codeward.daemon.git.config_scan import ConfigEntry
from tests.git_repos import commit_all, git, git_home, make_repo, run, write

__all__ = ["git_home"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    write(root, "a.txt", "one\n")
    write(root, "dir/b c.txt", "two\n")
    write(root, "caf\u00e9.txt", "three\n")
    commit_all(root, "first")
    return root


@pytest.fixture
def git_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every `git status` or `git diff` process run_git starts."""
    runs: list[list[str]] = []
    original = command.run_process

    async def counting(argv: list[str], **kwargs: Any) -> Any:
        if "status" in argv or "diff" in argv:
            runs.append(argv)
        return await original(argv, **kwargs)

    monkeypatch.setattr(command, "run_process", counting)
    return runs


status_runs = git_runs


def with_remote(repo: Path, ahead: int, behind: int) -> None:
    bare = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "-u", "origin", "main")
    for n in range(behind):
        write(repo, "a.txt", f"remote {n}\n")
        commit_all(repo, f"remote {n}")
    if behind:
        git(repo, "push", "-q", "origin", "main")
        git(repo, "reset", "-q", "--hard", f"HEAD~{behind}")
    for n in range(ahead):
        write(repo, f"local{n}.txt", "l\n")
        commit_all(repo, f"local {n}")


def dirty(repo: Path) -> None:
    write(repo, "a.txt", "changed\n")
    (repo / "caf\u00e9.txt").unlink()
    write(repo, "new\tfile.txt", "n\n")
    git(repo, "add", "new\tfile.txt")
    git(repo, "mv", "dir/b c.txt", "dir/renamed.txt")
    write(repo, "dir/renamed.txt", "two\nand more\n")
    write(repo, "untracked/x.txt", "u\n")
    write(repo, 'q"uote.txt', "u\n")


def typechange(repo: Path) -> None:
    (repo / "a.txt").unlink()
    (repo / "a.txt").symlink_to("dir")


def only_staged(repo: Path) -> None:
    write(repo, "a.txt", "staged\n")
    git(repo, "add", "a.txt")


def only_untracked(repo: Path) -> None:
    write(repo, "z.txt", "z\n")


def gone_upstream(repo: Path) -> None:
    with_remote(repo, 0, 0)
    git(repo, "update-ref", "-d", "refs/remotes/origin/main")


def initial(repo: Path) -> None:
    git(repo, "update-ref", "-d", "HEAD")  # back to an unborn branch; the index stays


def initial_untracked(repo: Path) -> None:
    git(repo, "update-ref", "-d", "HEAD")
    git(repo, "rm", "-q", "-r", "--cached", ".")


STATES: dict[str, Callable[[Path], None]] = {
    "clean": lambda repo: None,
    "dirty": dirty,
    "typechange": typechange,
    "only staged": only_staged,
    "only untracked": only_untracked,
    "up to date": lambda repo: with_remote(repo, 0, 0),
    "ahead 1": lambda repo: with_remote(repo, 1, 0),
    "ahead 2, dirty": lambda repo: (with_remote(repo, 2, 0), dirty(repo)),
    "behind 2": lambda repo: with_remote(repo, 0, 2),
    "behind 1": lambda repo: with_remote(repo, 0, 1),
    "diverged": lambda repo: with_remote(repo, 1, 2),
    "upstream gone": gone_upstream,
    "no commits yet, staged": initial,
    "no commits yet, untracked": initial_untracked,
}
CASES = [
    *((name, state, []) for name, state in STATES.items()),
    *((f"{name}, -uno", state, ["-uno"]) for name, state in STATES.items()),
    ("dirty, -uall", dirty, ["-uall"]),
    ("dirty, --untracked-files=normal", dirty, ["--untracked-files=normal"]),
    ("dirty, pathspec", dirty, ["--", "dir"]),
    ("only untracked, pathspec", only_untracked, ["a.txt"]),
]


@pytest.mark.parametrize(("state", "args"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_one_run_prints_what_git_prints(
    repo: Path, state: Callable[[Path], None], args: list[str], status_runs: list[list[str]]
) -> None:
    state(repo)
    result = await run(repo, "status", args)
    assert result["output"] == git(repo, "status", *args)
    assert len(status_runs) == 1 and "--porcelain=v2" in status_runs[0]
    assert result["parsed"]["branch"]["head"] == "main"


def detached(repo: Path) -> None:
    write(repo, "a.txt", "two\n")
    commit_all(repo, "second")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")


def conflicted(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "a.txt", "theirs\n")
    commit_all(repo, "theirs")
    git(repo, "checkout", "-q", "main")
    write(repo, "a.txt", "ours\n")
    commit_all(repo, "ours")
    git(repo, "merge", "-q", "other", check=False)


def submodule(repo: Path) -> None:
    inner = make_repo(repo.parent / "inner")
    write(inner, "i.txt", "i\n")
    commit_all(inner, "inner")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    write(repo, "sub/i.txt", "changed\n")


FALLBACKS: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "detached HEAD": (detached, []),
    "merge conflict": (conflicted, []),
    "submodule": (submodule, []),
    "short format": (dirty, ["--short"]),
    "branch and verbose": (dirty, ["-b", "-v"]),
    "ignored": (dirty, ["--ignored"]),
    "status.short config": (lambda repo: git(repo, "config", "status.short", "true"), []),
    "advice off": (lambda repo: git(repo, "config", "advice.statusHints", "false"), []),
}


@pytest.mark.parametrize(("state", "args"), FALLBACKS.values(), ids=list(FALLBACKS))
async def test_what_porcelain_cannot_say_runs_git_status(
    repo: Path, state: Callable[[Path], None], args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known before git runs: git's own status starts together with the parse run (a run
    started only once the other ended would wait here forever)."""
    state(repo)
    started: list[list[str]] = []
    both = trio.Event()
    original = command.run_process

    async def together(argv: list[str], **kwargs: Any) -> Any:
        if "status" in argv:
            started.append(argv)
            if len(started) == 2:
                both.set()
            await both.wait()
        return await original(argv, **kwargs)

    monkeypatch.setattr(command, "run_process", together)
    with trio.fail_after(30):
        result = await run(repo, "status", args)
    assert result["output"] == git(repo, "status", *args)
    assert [argv[argv.index("status") + 1 :] for argv in started if "--porcelain=v2" not in
            argv] == [args]  # fmt: skip


async def test_the_status_parse_run_alone_runs_in_the_c_locale(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Porcelain v2 is the same bytes in every locale, so its run skips loading one; git's
    own status (here for a detached HEAD) and every other run keep C.UTF-8, whose messages
    and regex classes the user's output may show."""
    detached(repo)
    write(repo, "caf\u00e9.txt", "changed\n")
    envs: dict[str, tuple[str | None, str | None]] = {}
    original = command.run_process

    async def recording(argv: list[str], **kwargs: Any) -> Any:
        sub = argv.index("status") if "status" in argv else argv.index("diff")
        env = kwargs["env"]
        envs[" ".join(argv[sub:])] = (env.get("LC_ALL"), env.get("LANG"))
        return await original(argv, **kwargs)

    monkeypatch.setattr(command, "run_process", recording)
    result = await run(repo, "status", [])
    await run(repo, "diff", [])
    assert envs == {
        "status --porcelain=v2 -z --branch": ("C", "C"),
        "status": ("C.UTF-8", "C.UTF-8"),
        " ".join(["diff", "--no-ext-diff", "--no-textconv", *command._DIFF_FORMAT]): (
            "C.UTF-8",
            "C.UTF-8",
        ),
    }
    assert result["output"] == git(repo, "status")
    assert [e["path"] for e in result["parsed"]["unstaged"]] == ["caf\u00e9.txt"]


PORCELAIN_STATES = {**STATES, "detached HEAD": detached, "merge conflict": conflicted,
                    "submodule": submodule}  # fmt: skip
PORCELAIN_ARGS = [
    ["--porcelain=v2"],
    ["--porcelain=v2", "--branch"],
    ["--porcelain=v2", "-z"],
    ["-b", "-z", "--porcelain=v2", "-uall"],
    ["--porcelain=v2", "-uno", "--", "dir"],
]


@pytest.mark.parametrize("args", PORCELAIN_ARGS, ids=[" ".join(a) for a in PORCELAIN_ARGS])
@pytest.mark.parametrize("state", PORCELAIN_STATES.values(), ids=list(PORCELAIN_STATES))
async def test_porcelain_v2_in_one_run_prints_what_git_prints(
    repo: Path, state: Callable[[Path], None], args: list[str], status_runs: list[list[str]]
) -> None:
    """Porcelain v2, with or without branch headers and -z, in every state (those the long
    format leaves to git too: porcelain says it all), from the one parse run."""
    state(repo)
    result = await run(repo, "status", args)
    assert result["output"] == git(repo, "status", *args)
    assert len(status_runs) == 1 and "--porcelain=v2" in status_runs[0]
    assert result["parsed"]["branch"] is not None


def quote_path_off(repo: Path) -> None:
    dirty(repo)
    git(repo, "config", "core.quotePath", "false")


PORCELAIN_FALLBACKS: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "quotePath configured": (quote_path_off, ["--porcelain=v2"]),
    "show stash": (dirty, ["--porcelain=v2", "--show-stash"]),
    "version 1": (dirty, ["--porcelain=v2", "--porcelain"]),
}


@pytest.mark.parametrize(("state", "args"), PORCELAIN_FALLBACKS.values(),
                         ids=list(PORCELAIN_FALLBACKS))  # fmt: skip
async def test_porcelain_that_the_parse_run_cannot_render_runs_git_status(
    repo: Path, state: Callable[[Path], None], args: list[str], status_runs: list[list[str]]
) -> None:
    state(repo)
    result = await run(repo, "status", args)
    assert result["output"] == git(repo, "status", *args)
    assert len(status_runs) == 2


async def test_config_read_once_per_scan_is_read_again_once_it_changes(
    repo: Path, status_runs: list[list[str]]
) -> None:
    """What the config says of the long format is worked out once per scan of the
    repository; a config change makes a new scan, whose answer holds from then on."""
    dirty(repo)
    for _ in range(2):
        assert (await run(repo, "status"))["output"] == git(repo, "status")
    assert len(status_runs) == 2  # one run each
    git(repo, "config", "status.short", "true")
    assert (await run(repo, "status"))["output"] == git(repo, "status")
    assert len(status_runs) == 4  # the parse run, then git status itself for the short format


async def test_a_parse_run_past_the_output_cap_stops_there_and_git_status_runs(
    repo: Path, status_runs: list[list[str]]
) -> None:
    """The one run writes into a file of the cap's size: past it, git fails as on a full
    disk and stops, and `git status` itself runs, whose output is cut at the cap while it
    runs on to its own exit code; no `parsed` is made from a part."""
    for n in range(200):
        write(repo, f"untracked file number {n:03d}.txt", "x\n")
    result = await run(repo, "status", limits=GitConfig(output_bytes=2000))
    assert [argv[argv.index("status") + 1 :] for argv in status_runs] == [
        ["--porcelain=v2", "-z", "--branch"], []]  # fmt: skip
    assert result["exit_code"] == 0 and result["truncated"] is True
    assert result["output"] == git(repo, "status")[:2000]
    assert result["parsed"] is None


@pytest.mark.parametrize(
    ("args", "mode"),
    [
        ([], "normal"),
        (["-u"], "all"),
        (["-uno", "--untracked-files=all"], "all"),
        (["--untracked-files"], "all"),
        (["--", "-uno"], "normal"),  # a pathspec after --
        (["src", "-unormal"], "normal"),
        (["-ufoo"], None),
        (["--untracked-filesx"], None),
        (["--porcelain"], None),
        (["-s"], None),
    ],
)
def test_untracked_mode(args: list[str], mode: str | None) -> None:
    assert status.untracked_mode(args) == mode


def test_config_that_changes_the_long_format(tmp_path: Path) -> None:
    def entries(*pairs: tuple[str, str | None]) -> list[ConfigEntry]:
        return [ConfigEntry("global", key, value) for key, value in pairs]

    assert not status.format_configured(
        entries(("color.ui", "auto"), ("advice.detachedhead", "false"))
    )
    for pairs in [("color.status", "always"), ("column.ui", "always,dense"),
                  ("core.quotepath", "false"), ("status.showstash", None)]:  # fmt: skip
        assert status.format_configured(entries(pairs))
    (tmp_path / "HEAD").write_text("ref: refs/heads/main\n")
    assert status.plain(False, tmp_path) and not status.plain(True, tmp_path)
    (tmp_path / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert not status.plain(False, tmp_path)  # detached: "at" or "from" is git's to say
    (tmp_path / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "rebase-merge").mkdir()
    assert not status.plain(False, tmp_path)
    (tmp_path / "rebase-merge").rmdir()
    (tmp_path / "HEAD").unlink()
    assert not status.plain(False, tmp_path)  # no HEAD to read: git itself says why


def test_quote() -> None:
    assert status.quote("dir/b c.txt") == "dir/b c.txt"
    assert status.quote("caf\u00e9") == '"caf\\303\\251"'
    assert status.quote('a"b\\c\td\x01') == '"a\\"b\\\\c\\td\\001"'


# -- diff ------------------------------------------------------------------------------------


def diff_states(repo: Path) -> None:
    """A bit of everything: modified, deleted, binary, odd names, staged rename, a new file
    marked intent-to-add, a mode change."""
    write(repo, "a.txt", "one\nchanged\n")
    (repo / "caf\u00e9.txt").unlink()
    (repo / "bin.dat").write_bytes(b"\x00\x01binary")
    write(repo, 'we"ird\tname.txt', "w\n")
    git(repo, "add", "-N", 'we"ird\tname.txt')
    git(repo, "mv", "dir/b c.txt", "dir/moved.txt")
    (repo / "dir/moved.txt").chmod(0o755)  # the working tree stays dirty: nothing committed


DIFFS = {
    "work tree": [],
    "staged": ["--cached"],
    "staged, renames off": ["--cached", "--no-renames"],
    "against HEAD": ["HEAD"],
    "pathspec": ["--", "dir", "a.txt"],
    "context and whitespace": ["-U1", "-w"],
    "between commits": ["HEAD~1", "HEAD"],
}


@pytest.mark.parametrize("args", DIFFS.values(), ids=list(DIFFS))
async def test_diff_in_one_run_prints_what_git_prints(
    repo: Path, args: list[str], git_runs: list[list[str]]
) -> None:
    write(repo, "a.txt", "one\n")
    write(repo, "bin.dat", "text first\n")
    commit_all(repo, "second")
    diff_states(repo)
    result = await run(repo, "diff", args)
    assert result["output"] == git(repo, "diff", *args)
    assert result["output"]  # there is something to show
    assert len(git_runs) == 1 and "--numstat" in git_runs[0]
    assert result["parsed"]["files"]


DIFF_FALLBACKS: dict[str, tuple[list[str], str]] = {
    "stat": (["--stat"], ""),
    "name-only": (["--name-only"], ""),
    "word-diff": (["--word-diff"], ""),
    "colour config": ([], "color.diff=always"),
    "noprefix config": ([], "diff.noprefix=true"),
}


@pytest.mark.parametrize(("args", "config"), DIFF_FALLBACKS.values(), ids=list(DIFF_FALLBACKS))
async def test_diff_options_that_change_its_look_run_git_diff(
    repo: Path, args: list[str], config: str, git_runs: list[list[str]]
) -> None:
    if config:
        key, value = config.split("=")
        git(repo, "config", key, value)
    write(repo, "a.txt", "changed\n")
    result = await run(repo, "diff", args)
    assert result["output"] == git(repo, "diff", *args, check=False)
    assert len(git_runs) == 2


async def test_a_failing_diff_still_reports_gits_error(
    repo: Path, git_runs: list[list[str]]
) -> None:
    from codeward.protocol.errors import ErrorKind, ToolError

    with pytest.raises(ToolError) as info:
        await run(repo, "diff", ["no-such-revision"])
    assert info.value.kind is ErrorKind.GIT_FAILED
    assert "no-such-revision" in info.value.details["stderr"]
