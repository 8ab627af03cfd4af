"""Every program codeward starts gets a clean PATH: a daemon whose PATH holds a relative
entry (`node_modules/.bin`, as users' shells often do) and an absolute entry inside a
session's root, both holding canary `ssh`, `gpg` and `shellcheck` scripts that leave a marker
when run. Real git fetches over ssh:// and shows a signed commit with the repository's
`log.showSignature`; bash-language-server runs shellcheck in a trusted root: no canary
runs, the real programs do. A scripted server, trusted, logs the PATH it was given."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec
import pytest
import trio

import codeward.daemon.tools.git_tool  # noqa: F401  (registers git_command)
from codeward.daemon import child_path
from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.lsp.defaults import default_languages
from tests.conftest import OpenClient
from tests.git_repos import commit_all, git, git_bytes, git_home, make_repo, write
from tests.lsp_support import fake_config, fake_server, logged, needs
from tests.rpc import RpcFailure

__all__ = ["git_home"]

CANARIES = ("ssh", "gpg", "shellcheck")


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "fake.log"


@pytest.fixture
def daemon_config(server_log: Path) -> Config:
    """The defaults, and the scripted server (logging its environment) for `*.fake`."""
    config = fake_config({"env-logger": fake_server("env", server_log)})
    return msgspec.structs.replace(
        config,
        daemon=DaemonConfig(idle_timeout=600.0),
        languages={**default_languages(), **config.languages},
    )


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "canary-ran"


@pytest.fixture
def repo(project: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose `node_modules/.bin` and `tools/` hold the canaries, with the
    daemon's PATH reaching both: relatively, and by absolute path inside the root."""
    make_repo(project)
    write(project, "a.txt", "one\n")
    commit_all(project, "first")
    for folder in ("node_modules/.bin", "tools"):
        for name in CANARIES:
            canary = project / folder / name
            canary.parent.mkdir(parents=True, exist_ok=True)
            canary.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n")
            canary.chmod(0o755)
    path = os.pathsep.join(["node_modules/.bin", str(project / "tools"), "", ".", os.defpath])
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    return project


def signed_commit(repo: Path) -> str:
    """A commit carrying a (bogus) PGP signature: showing it with `log.showSignature` makes
    git run `gpg --verify`."""
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\n"
        "author A <a@example.com> 1700000000 +0000\n"
        "committer A <a@example.com> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n"
        " -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    done = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo, input=body.encode(), capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    commit = done.stdout.decode().strip()
    git(repo, "update-ref", "refs/heads/main", commit)
    return commit


async def test_git_fetch_over_ssh_runs_no_ssh_of_the_root(
    repo: Path, marker: Path, open_client: OpenClient
) -> None:
    client = await open_client(repo)
    with pytest.raises(RpcFailure) as info, trio.fail_after(60):
        await client.tool("git_command", subcommand="fetch", args=["ssh://127.0.0.1:1/x.git"])
    assert info.value.data["kind"] == "git_failed"
    assert not marker.exists(), marker.read_text()
    # the real ssh ran (and could not connect): not "cannot run ssh"
    assert "ssh" in info.value.data["stderr"] or "connect" in info.value.data["stderr"]


async def test_show_signature_runs_no_gpg_of_the_root(
    repo: Path, marker: Path, open_client: OpenClient
) -> None:
    commit = signed_commit(repo)
    git(repo, "config", "log.showSignature", "true")
    client = await open_client(repo)
    with trio.fail_after(60):
        result = await client.tool("git_command", subcommand="log", args=["-1"])
    assert commit in result["output"]
    assert not marker.exists(), marker.read_text()


def test_the_canaries_run_with_the_daemons_path(repo: Path, marker: Path) -> None:
    """The control: git given the daemon's PATH as it is runs the root's gpg and ssh."""
    signed_commit(repo)
    git(repo, "config", "log.showSignature", "true")
    git_bytes(repo, "log", "-1")
    git(repo, "fetch", "ssh://127.0.0.1:1/x.git", check=False)
    assert marker.read_text().split() == ["gpg", "ssh"]


async def test_a_trusted_servers_path_is_clean(
    repo: Path, server_log: Path, open_client: OpenClient
) -> None:
    write(repo, "a.fake", "x\n")
    client = await open_client()
    await client.call("trust/set", {"root": str(repo)})
    await client.call("session/open", {"root": str(repo)})
    with trio.fail_after(30):
        await client.tool("get_hover_info", path="a.fake", line=1, character=1)
    (run,) = [m["started"] for m in logged(server_log) if "started" in m]
    entries = run["env"]["PATH"].split(os.pathsep)
    assert entries and all(os.path.isabs(e) and not e.startswith(str(repo)) for e in entries)
    assert "/usr/bin" in entries


@needs("bash-language-server")
async def test_a_server_runs_the_real_shellcheck(
    repo: Path, marker: Path, open_client: OpenClient
) -> None:
    """bash-language-server runs shellcheck, looked up on PATH: the root's is never it."""
    write(repo, "main.sh", "#!/bin/sh\necho $1\n")
    client = await open_client()
    await client.call("trust/set", {"root": str(repo)})  # the same rule, trusted or not
    await client.call("session/open", {"root": str(repo)})
    with trio.fail_after(60):
        found = await client.tool("get_diagnostics", path="main.sh")
    assert "SC2086" in [d["code"] for d in found["diagnostics"]]
    assert not marker.exists(), marker.read_text()


def test_clean_path_drops_relative_empty_and_root_entries(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "bin").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root / "bin")  # absolute, and a symlink into the root
    entries = ["node_modules/.bin", "", ".", str(root / "bin"), str(link), str(outside / "bin")]
    path = os.pathsep.join([*entries, "/usr/bin", "/usr/bin"])
    assert child_path.clean_path(path, root=root) == os.pathsep.join(
        [str(outside / "bin"), "/usr/bin"]
    )
    # a live session's root counts, whichever root the child is for
    child_path.enter_root(outside)
    try:
        assert child_path.clean_path(path, root=root) == "/usr/bin"
        assert child_path.clean_path(path) == os.pathsep.join([str(root / "bin"), str(link),
                                                               "/usr/bin"])  # fmt: skip
    finally:
        child_path.leave_root(outside)
    assert str(outside / "bin") in child_path.clean_path(path)
