"""git reads only this repository: local remotes (configured, rewritten by `insteadOf`, in
legacy files, or a bare name) are refused for every command that contacts a remote; pushes
to a local repository run none of its hooks; the approval names the remote's URL; git's
messages of a successful run show no outside path. Real git, real repositories, and
`git daemon` as the network remote."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.daemon.config import PolicyConfig
from codeward.daemon.git import remotes, runner
from codeward.daemon.git.config_scan import parse_config_list
from codeward.protocol.errors import ErrorKind, ToolError
from tests.git_repos import Approver, commit_all, git, git_daemon, git_home, make_repo, run, write

__all__ = ["git_home"]
CONFIRM = PolicyConfig()
NETWORK = "https://example.invalid/project.git"


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


@pytest.fixture
def served(repo: Path, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A bare repository served by `git daemon`, and its URL, as the project's origin."""
    base = tmp_path / "served"
    bare = base / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with git_daemon(base) as url:
        git(repo, "remote", "add", "origin", url + "remote.git")
        git(repo, "push", "-q", "-u", "origin", "main")
        yield bare, url + "remote.git"


async def refused(root: Path, subcommand: str, args: list[str]) -> ToolError:
    with pytest.raises(ToolError) as info:
        await run(root, subcommand, args, policy=CONFIRM, approve=Approver(True),
                  allow_destructive=True)  # fmt: skip
    return info.value


CONTACTING = [
    ("fetch", []), ("fetch", ["origin"]), ("fetch", ["--all"]), ("fetch", ["--multiple", "origin"]),
    ("pull", []), ("pull", ["origin", "main"]), ("pull", ["--all"]), ("push", []),
    ("push", ["origin", "main"]),
    ("push", ["--repo=origin"]), ("remote", ["show", "origin"]), ("remote", ["update"]),
    ("remote", ["prune", "origin"]), ("remote", ["set-head", "origin", "--auto"]),
]  # fmt: skip


@pytest.mark.parametrize("url", ["path", "file", "relative"])
async def test_a_local_remote_is_refused_for_every_command_that_contacts_it(
    repo: Path, other: Path, tmp_path: Path, url: str
) -> None:
    value = {"path": str(other), "file": f"file://{other}", "relative": "../elsewhere"}[url]
    git(repo, "remote", "add", "origin", value)
    git(repo, "config", "branch.main.remote", "origin")
    plain = subprocess.run(["git", "fetch", "-q", "origin"], cwd=repo, capture_output=True)
    assert plain.returncode == 0  # plain git reads the other repository...
    assert git(repo, "show", "origin/main:secret.txt") == "SECRET\n"
    git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    for subcommand, args in CONTACTING:
        error = await refused(repo, subcommand, args)
        assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG, (subcommand, args)
        assert error.details["keys"] == ["remote.origin.url"]
        assert str(tmp_path) not in error.message and "elsewhere" not in error.message
    with pytest.raises(ToolError):  # ...codeward's fetch did not
        await run(repo, "show", ["origin/main:secret.txt"])
    listed = await run(repo, "remote", ["-v"])  # listing contacts nothing: runs, scrubbed
    assert str(tmp_path) not in listed["output"] + str(listed["parsed"])
    assert url == "relative" or listed["parsed"]["remotes"][0]["fetch_url"] == "<path>"
    got = await run(repo, "remote", ["get-url", "origin"])
    assert str(tmp_path) not in got["output"]


async def test_network_urls_are_listed_as_they_are(repo: Path) -> None:
    urls = ["me@host.invalid:/srv/git/p.git", "ssh://host.invalid/srv/p.git", NETWORK]
    for k, url in enumerate(urls):
        git(repo, "remote", "add", f"r{k}", url)
    listed = await run(repo, "remote", ["-v"])
    assert [r["fetch_url"] for r in listed["parsed"]["remotes"]] == urls
    assert all(url in listed["output"] for url in urls)


async def test_a_local_remote_inside_the_root_is_refused_too(repo: Path) -> None:
    git(repo, "init", "-q", "--bare", "backup.git")
    git(repo, "remote", "add", "backup", "backup.git")
    error = await refused(repo, "push", ["backup", "main"])
    assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert error.details["keys"] == ["remote.backup.url"]
    for itself in ([".", "main"], ["./backup.git"]):  # the repository itself, a path inside
        assert (await refused(repo, "pull", itself)).kind is ErrorKind.ARGUMENT_NOT_ALLOWED


async def test_a_local_push_url_refuses_the_push_not_the_fetch(repo: Path, other: Path) -> None:
    git(repo, "remote", "add", "origin", "https://127.0.0.1:1/unreachable.git")
    git(repo, "remote", "set-url", "--push", "origin", str(other))
    error = await refused(repo, "push", ["origin", "main"])
    assert error.details["keys"] == ["remote.origin.pushurl"]
    fetched = await refused(repo, "fetch", ["origin"])  # fetches over the network: git fails
    assert fetched.kind is ErrorKind.GIT_FAILED


@pytest.mark.parametrize("key", ["insteadOf", "pushInsteadOf"])
async def test_rewrites_to_a_local_path_are_refused(
    repo: Path, other: Path, tmp_path: Path, key: str
) -> None:
    git(repo, "remote", "add", "origin", NETWORK)
    git(repo, "config", f"url.{other}/.{key}", "https://example.invalid/")
    error = await refused(repo, "push", ["origin", "main"])
    assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    assert error.details["keys"] == [f"url.<path>.{key.lower()}"]
    assert str(tmp_path) not in error.message
    given = await refused(repo, "push", [NETWORK, "main"])  # a URL given is rewritten too
    assert given.details["keys"] == [f"url.<path>.{key.lower()}"]
    if key == "insteadOf":
        assert (await refused(repo, "fetch", [])).kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
    else:  # pushInsteadOf rewrites pushes only
        assert (await refused(repo, "fetch", ["origin"])).kind is ErrorKind.GIT_FAILED


async def test_the_longest_rewrite_wins_as_in_git(repo: Path, other: Path) -> None:
    git(repo, "remote", "add", "origin", NETWORK)
    git(repo, "config", f"url.{other}/.insteadOf", "https://example.invalid/")
    git(repo, "config", "url.https://127.0.0.1:1/.insteadOf", "https://example.invalid/proj")
    assert git(repo, "ls-remote", "--get-url", "origin").startswith("https://127.0.0.1:1/")
    fetched = await refused(repo, "fetch", ["origin"])  # network: git's own failure
    assert fetched.kind is ErrorKind.GIT_FAILED
    git(repo, "config", f"url.{other}/.insteadOf", "https://example.invalid/project")
    assert git(repo, "ls-remote", "--get-url", "origin").startswith(str(other))
    assert (await refused(repo, "fetch", ["origin"])).kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG


@pytest.mark.parametrize(
    "config",
    [
        [],
        [("url.git://a/.insteadOf", "https://example.invalid/")],
        [("url.git://a/.insteadOf", "https://example.invalid/"),
         ("url.git://b/.insteadOf", "https://example.invalid/project")],
        [("url.git://b/.insteadOf", "https://example.invalid/proj"),
         ("url.git://a/.insteadOf", "https://example")],
        [("url.git://a/.insteadOf", "https://ex"), ("url.git://b/.insteadOf", "https://ex")],
        [("url.git://a/.pushInsteadOf", "https://example.invalid/")],
        [("url.git://a/.pushInsteadOf", "https://example.invalid/"),
         ("remote.origin.pushurl", "https://example.invalid/push.git")],
        [("url.git://a/.insteadOf", ""), ("url.git://c/.insteadOf", "https:")],
        [("remote.origin.url", "https://example.invalid/second.git"),
         ("url.git://a/.pushInsteadOf", "https://example.invalid/s")],
        [("remote.origin.pushurl", "https://example.invalid/p1.git"),
         ("remote.origin.pushurl", "https://example.invalid/p2.git"),
         ("url.git://a/.insteadOf", "https://example.invalid/p2")],
    ],
)  # fmt: skip
def test_urls_are_worked_out_as_git_does(repo: Path, config: list[tuple[str, str]]) -> None:
    git(repo, "remote", "add", "origin", NETWORK)
    for key, value in config:
        git(repo, "config", "--add", key, value)
    listed = subprocess.run(["git", "config", "--list", "--show-scope", "-z"], cwd=repo,
                            capture_output=True, check=True).stdout  # fmt: skip
    entries = parse_config_list(listed)
    git_dir = repo / ".git"
    fetch = remotes.contacted("fetch", ["origin"], entries, git_dir, git_dir)
    assert [u.url for u in fetch] == [git(repo, "ls-remote", "--get-url", "origin").strip()]
    push = {u.url for u in remotes.contacted("push", ["origin"], entries, git_dir, git_dir)}
    pushed = git(repo, "remote", "get-url", "--push", "--all", "origin").split()
    assert set(pushed) == push


async def test_legacy_remote_files_and_bare_names(repo: Path, other: Path, tmp_path: Path) -> None:
    (repo / ".git" / "remotes").mkdir(exist_ok=True)
    (repo / ".git" / "remotes" / "old").write_text(f"URL: {other}\nPull: main:main\n")
    (repo / ".git" / "branches").mkdir(exist_ok=True)
    (repo / ".git" / "branches" / "older").write_text(f"{other}#main\n")
    for name in ("old", "older"):
        error = await refused(repo, "fetch", [name])
        assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
        assert error.details["file"].endswith(name) and str(tmp_path) not in error.message
    write(repo, "lookalike/x.txt", "x\n")  # no remote by that name: git would take the path
    error = await refused(repo, "fetch", ["lookalike"])
    assert error.kind is ErrorKind.ARGUMENT_NOT_ALLOWED and "configured remote" in error.message
    assert (await refused(repo, "fetch", ["nosuch"])).kind is ErrorKind.ARGUMENT_NOT_ALLOWED


async def test_git_itself_refuses_the_file_transport(repo: Path, other: Path) -> None:
    """What holds should a local URL get past the checks (a config changed in between)."""
    env = runner.git_env(read_only=True)
    for url in (str(other), f"file://{other}", "."):
        done = await runner.run_process(
            runner.git_argv(runner.find_git(env), repo, "fetch", [url]), cwd=None, env=env,
            timeout=60, output_bytes=1 << 20,
        )  # fmt: skip
        assert done.exit_code != 0 and b"transport 'file' not allowed" in done.stderr


async def test_an_approved_push_to_a_local_repository_runs_none_of_its_hooks(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "hook-ran"
    for bare in (tmp_path / "outside.git", repo / "inside.git"):
        git(tmp_path, "init", "-q", "--bare", str(bare))
        for hook in ("pre-receive", "update", "post-receive", "post-update"):
            script = bare / "hooks" / hook
            script.write_text(f"#!/bin/sh\necho {hook} >> '{marker}'\n")
            script.chmod(0o755)
        git(repo, "remote", "add", bare.stem, str(bare))
    subprocess.run(["git", "push", "-q", "outside", "main"], cwd=repo, check=True)
    assert marker.exists()  # plain git runs the other repository's hooks
    marker.unlink()
    for name in ("outside", "inside"):
        approver = Approver(True)
        with pytest.raises(ToolError) as info:
            await run(repo, "push", [name, "main"], policy=CONFIRM, approve=approver)
        assert info.value.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
        assert approver.asked == []  # refused before anyone is asked
    assert not marker.exists()
    assert git(repo / "inside.git", "for-each-ref") == ""


async def test_the_approval_names_the_remote_url(repo: Path, served: tuple[Path, str]) -> None:
    bare, url = served
    write(repo, "a.txt", "two\n")
    commit_all(repo, "second")
    approver = Approver(True)
    result = await run(repo, "push", [], policy=CONFIRM, approve=approver)
    assert result["exit_code"] == 0
    ((summary, _),) = approver.asked
    assert f"origin ({url})" in summary and "pushes to a remote" in summary
    assert git(bare, "rev-parse", "main") == git(repo, "rev-parse", "main")
    git(repo, "remote", "add", "private", "https://me:s3cret@example.invalid/p.git")
    denied = Approver(False)
    with pytest.raises(ToolError):
        await run(repo, "pull", ["private", "main"], policy=CONFIRM, approve=denied)
    ((summary, _),) = denied.asked
    assert "https://me@example.invalid/p.git" in summary and "s3cret" not in summary


async def test_a_successful_runs_stderr_shows_no_outside_path(
    repo: Path, served: tuple[Path, str], tmp_path: Path
) -> None:
    bare, _ = served
    hook = bare / "hooks" / "post-receive"  # the server's hook: its words reach our stderr
    hook.write_text(f"#!/bin/sh\necho 'stored in {tmp_path}/served/remote.git' >&2\n")
    hook.chmod(0o755)
    write(repo, "a.txt", "three\n")
    commit_all(repo, "third")
    result = await run(repo, "push", ["origin", "main"])
    assert result["exit_code"] == 0
    assert "stored in <path>" in result["stderr"] and str(tmp_path) not in result["stderr"]


async def test_a_submodules_local_remote_is_not_fetched(
    repo: Path, other: Path, served: tuple[Path, str]
) -> None:
    """A fetch recursing into a submodule whose remote is local: git's own refusal holds."""
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(other), "sub"], cwd=repo, check=True, capture_output=True)  # fmt: skip
    commit_all(repo, "sub")
    git(repo, "push", "-q", "origin", "main")
    git(repo, "config", "fetch.recurseSubmodules", "true")
    before = git(repo / "sub", "rev-parse", "origin/main")
    write(other, "more.txt", "more\n")
    commit_all(other, "more")
    with pytest.raises(ToolError) as info:
        await run(repo, "fetch", ["origin"])
    assert info.value.kind is ErrorKind.GIT_FAILED
    assert "transport 'file' not allowed" in info.value.details["stderr"]
    assert git(repo / "sub", "rev-parse", "origin/main") == before
    subprocess.run(["git", "fetch", "-q", "origin"], cwd=repo, check=True)  # plain git does
    assert git(repo / "sub", "rev-parse", "origin/main") != before


async def test_groups_and_several_remotes(repo: Path, other: Path) -> None:
    git(repo, "remote", "add", "net", "https://127.0.0.1:1/unreachable.git")
    git(repo, "remote", "add", "loc", str(other))
    git(repo, "config", "remotes.both", "net loc")
    for args in (["both"], ["--multiple", "net", "loc"], ["--all"]):
        error = await refused(repo, "fetch", args)
        assert error.details["keys"] == ["remote.loc.url"], args
    assert (await refused(repo, "remote", ["update", "both"])).details["keys"] == ["remote.loc.url"]
    assert (await refused(repo, "fetch", ["net"])).kind is ErrorKind.GIT_FAILED  # network


async def test_a_default_remote_config_names_a_path(repo: Path, other: Path) -> None:
    """`branch.<b>.remote` and `remote.pushDefault` may hold a URL or path themselves."""
    for value in (".", str(other)):  # `.`: a branch tracking a local branch
        git(repo, "config", "branch.main.remote", value)
        for subcommand in ("fetch", "pull"):
            error = await refused(repo, subcommand, [])
            assert error.kind is ErrorKind.UNSAFE_REPOSITORY_CONFIG
            assert error.details["keys"] == ["branch.main.remote"]
            assert str(other) not in error.message
    git(repo, "config", "remote.pushDefault", str(other))
    assert (await refused(repo, "push", [])).details["keys"] == ["remote.pushdefault"]
    git(repo, "config", "branch.main.pushRemote", "../elsewhere")
    assert (await refused(repo, "push", [])).details["keys"] == ["branch.main.pushremote"]
