"""`trust/list` and `trust/set` through the daemon's socket, and `codeward trust` (the CLI
in-process against the same daemon): inputs, the file, and what may never grant trust."""

from __future__ import annotations

import io
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from codeward.client.cli import main
from codeward.daemon.server import Daemon
from codeward.daemon.trust import TrustStore, render
from tests.conftest import OpenClient
from tests.rpc import RpcClient, RpcFailure


def trust_file(config_home: Path) -> Path:
    return config_home / "codeward" / "trusted.toml"


async def fails(client: RpcClient, method: str, params: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.call(method, params)
    return info.value


async def test_trust_list_and_revoke(
    open_client: OpenClient, project: Path, private_config_home: Path
) -> None:
    client = await open_client()
    assert await client.call("trust/list") == {"roots": []}
    result = await client.call("trust/set", {"root": str(project)})
    assert result == {
        "root": str(project),
        "trusted": True,
        "changed": True,
        "restarted": [],
        "inherited": False,
    }
    path = trust_file(private_config_home)
    assert path.stat().st_mode & 0o777 == 0o600
    assert tomllib.loads(path.read_text()) == {"roots": [str(project)]}
    again = await client.call("trust/set", {"root": str(project) + "/."})
    assert again["trusted"] and not again["changed"]
    assert await client.call("trust/list") == {"roots": [str(project)]}
    revoked = await client.call("trust/set", {"root": str(project), "trusted": False})
    assert revoked == {
        "root": str(project),
        "trusted": False,
        "changed": True,
        "restarted": [],
        "inherited": False,
    }
    assert await client.call("trust/list") == {"roots": []}
    not_trusted = await client.call("trust/set", {"root": str(project), "trusted": False})
    assert not not_trusted["changed"]


async def test_bad_roots_are_refused(open_client: OpenClient, project: Path) -> None:
    client = await open_client()
    (project / "file.txt").write_text("x")
    cases = [
        ({"root": "relative/dir"}, "invalid_arguments"),
        ({"root": "."}, "invalid_arguments"),
        ({"root": ""}, "invalid_arguments"),
        ({"root": str(project) + "\x00x"}, "invalid_arguments"),
        ({"root": str(project / "file.txt")}, "invalid_arguments"),
        ({"root": str(project / "missing")}, "file_not_found"),
        ({"root": str(project / "missing"), "trusted": False}, "file_not_found"),
        ({"root": "relative/dir", "trusted": False}, "invalid_arguments"),
    ]
    for params, kind in cases:
        failure = await fails(client, "trust/set", params)
        assert failure.kind == kind, params
        assert str(project.parent) not in failure.message
    for params in ({}, {"root": 5}, {"root": str(project), "trusted": "yes"}, {"x": 1}):
        assert (await fails(client, "trust/set", params)).code == -32602
    assert await client.call("trust/list") == {"roots": []}


async def test_a_subdirectory_inherits_trust_and_is_revoked_through_its_parent(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    sub = project / "a" / "b"
    sub.mkdir(parents=True)
    sibling = tmp_path / "project-2"  # a name that shares the parent's prefix
    sibling.mkdir()
    client = await open_client()
    await client.call("trust/set", {"root": str(project)})
    inside = await open_client()
    assert (await inside.call("session/open", {"root": str(sub)}))["trusted"] is True
    outside = await open_client()
    assert (await outside.call("session/open", {"root": str(sibling)}))["trusted"] is False
    failure = await fails(client, "trust/set", {"root": str(sub), "trusted": False})
    assert failure.kind == "invalid_arguments" and "above" in failure.message
    assert str(project) not in failure.message
    revoked = await client.call("trust/set", {"root": str(project), "trusted": False})
    assert not revoked["trusted"] and len(revoked["restarted"]) == 1  # the session of sub
    sessions = {s["root"]: s["trusted"] for s in (await client.call("session/list"))["sessions"]}
    assert sessions == {str(sub): False, str(sibling): False}


async def test_symlinks_are_trusted_by_their_real_path(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, project / "escape")  # inside the trusted root, pointing out of it
    os.symlink(project, tmp_path / "alias")
    client = await open_client()
    kept = await client.call("trust/set", {"root": str(tmp_path / "alias")})
    assert kept["root"] == str(project)
    escaped = await open_client()
    opened = await escaped.call("session/open", {"root": str(project / "escape")})
    assert opened["root"] == str(outside) and opened["trusted"] is False
    # a root that is gone can still be revoked, by the path it was kept under
    shutil.rmtree(project)
    revoked = await client.call("trust/set", {"root": str(project), "trusted": False})
    assert revoked["changed"] and await client.call("trust/list") == {"roots": []}


@pytest.mark.parametrize(
    "text",
    [
        "trusted = true\n",
        "[trust]\nroots = ['.']\n",
        "[servers]\npython = ['basedpyright']\ntrusted = true\n",
        "[policy]\ntrusted = true\n",
    ],
)
async def test_a_project_cannot_grant_itself_trust(
    open_client: OpenClient, project: Path, text: str
) -> None:
    (project / ".codeward.toml").write_text(text)
    client = await open_client()
    failure = await fails(client, "session/open", {"root": str(project)})
    assert failure.kind == "invalid_arguments" and ".codeward.toml" in failure.message
    assert await client.call("trust/list") == {"roots": []}


async def test_a_project_cannot_plant_a_trust_file(
    open_client: OpenClient, project: Path, private_config_home: Path, monkeypatch: Any
) -> None:
    """Only the user's config directory counts: a trusted.toml in the project is nothing."""
    for place in (project, project / ".codeward", project / "codeward"):
        place.mkdir(exist_ok=True)
        (place / "trusted.toml").write_text(render([project]))
    (project / ".codeward.toml").write_text("[servers]\npython = ['ruff']\n")
    client = await open_client()
    assert (await client.call("session/open", {"root": str(project)}))["trusted"] is False


@pytest.mark.parametrize("damage", ["group-writable", "symlink", "not-toml", "relative", "fifo"])
async def test_a_trust_file_that_cannot_be_used_trusts_nothing(
    open_client: OpenClient, project: Path, private_config_home: Path, tmp_path: Path, damage: str
) -> None:
    path = trust_file(private_config_home)
    path.parent.mkdir(parents=True)
    good = render([project])
    if damage == "group-writable":
        path.write_text(good)
        path.chmod(0o664)
    elif damage == "symlink":
        (tmp_path / "elsewhere.toml").write_text(good)
        os.symlink(tmp_path / "elsewhere.toml", path)
    elif damage == "not-toml":
        path.write_text(good + "roots = [\n")
    elif damage == "relative":
        path.write_text('roots = ["project"]\n')
    else:
        os.mkfifo(path)  # opening must not block the daemon
    client = await open_client()
    with trio.fail_after(10):
        assert (await client.call("session/open", {"root": str(project)}))["trusted"] is False
        failure = await fails(client, "trust/list", None)
    assert failure.kind == "invalid_arguments" and "trusted.toml" in failure.message
    assert str(private_config_home) not in failure.message
    assert (await fails(client, "trust/set", {"root": str(project)})).kind == "invalid_arguments"


def test_the_file_keeps_any_path_toml_can_hold(tmp_path: Path) -> None:
    names = ['quote"d', "back\\slash", "tab\there", "new\nline", "del\x7f", "ünï 😀", "a'b"]
    roots = []
    for name in names:
        (tmp_path / name).mkdir()
        roots.append(Path(os.path.realpath(tmp_path / name)))
    store = TrustStore(tmp_path / "cfg" / "trusted.toml")
    for root in roots:
        assert store.set(root, True)
    assert TrustStore(store.path).roots() == sorted(roots)
    assert all(TrustStore(store.path).is_trusted(r / "x") for r in roots)


async def test_a_hand_edited_file_applies_on_the_next_open(
    open_client: OpenClient, project: Path, private_config_home: Path
) -> None:
    client = await open_client(project)
    path = trust_file(private_config_home)
    path.parent.mkdir(parents=True)
    path.write_text(render([project]))
    path.chmod(0o600)
    again = await open_client()
    assert (await again.call("session/open", {"root": str(project)}))["trusted"] is True
    assert (await client.call("session/list"))["sessions"][0]["trusted"] is True


async def test_sighup_applies_a_hand_edited_file_to_live_sessions(
    open_client: OpenClient, project: Path, private_config_home: Path, daemon: Daemon
) -> None:
    client = await open_client(project)
    path = trust_file(private_config_home)
    path.parent.mkdir(parents=True)
    path.write_text(render([project]))
    daemon.reload_config()
    await trio.testing.wait_all_tasks_blocked()
    assert (await client.call("session/list"))["sessions"][0]["trusted"] is True
    path.write_text(render([]))
    daemon.reload_config()
    await trio.testing.wait_all_tasks_blocked()
    assert (await client.call("session/list"))["sessions"][0]["trusted"] is False


# -- the CLI ----------------------------------------------------------------------------


async def cli(daemon: Daemon, *argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """`codeward --socket ... ARGV` in a thread, against the test's daemon."""
    out, err = io.StringIO(), io.StringIO()
    args = ["--socket", str(daemon.socket_path), "--no-autostart", *argv]

    def run() -> int:
        if cwd is not None:
            os.chdir(cwd)
        return main(args, stdin=io.StringIO(), stdout=out, stderr=err)

    here = os.getcwd()
    try:
        code = await trio.to_thread.run_sync(run)
    finally:
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


async def test_cli_trust_list_revoke(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    (project / "sub").mkdir()
    assert await cli(daemon, "trust", "--list") == (0, "no trusted roots\n", "")
    code, out, _ = await cli(daemon, "trust", "sub", cwd=project)  # relative to the cwd
    assert code == 0 and out == f"{project / 'sub'} is trusted\n"
    code, out, _ = await cli(daemon, "trust", "--root", str(project))  # default: the --root
    assert code == 0 and out == f"{project} is trusted\n"
    code, out, _ = await cli(daemon, "--json", "trust", "--list")
    assert code == 0 and '"roots"' in out and str(project / "sub") in out
    code, out, _ = await cli(daemon, "trust", "--revoke", "sub", cwd=project)
    assert (
        code == 0 and out == f"{project / 'sub'} is trusted through a trusted directory above it\n"
    )
    code, out, _ = await cli(daemon, "trust", "--list")
    assert out == f"{project}\n"
    code, out, _ = await cli(
        daemon, "trust", "--revoke", cwd=project
    )  # default root: the working directory
    assert code == 0 and out == f"{project} is not trusted\n"
    code, out, _ = await cli(daemon, "trust", "--list")
    assert out == "no trusted roots\n"
    await cli(daemon, "trust", str(project))
    code, out, _ = await cli(daemon, "trust", str(project))
    assert out == f"{project} is trusted (it already was)\n"


async def test_cli_bad_input(daemon: Daemon, project: Path) -> None:
    (project / "f.txt").write_text("x")
    code, _, err = await cli(daemon, "trust", "missing", cwd=project)
    assert code == 1 and "[file_not_found]" in err
    code, _, err = await cli(daemon, "trust", "f.txt", cwd=project)
    assert code == 1 and "[invalid_arguments]" in err
    code, _, err = await cli(daemon, "trust", "--list", "x")
    assert code == 2 and "--list takes no ROOT" in err
    code, _, err = await cli(daemon, "trust", "--list", "--revoke")
    assert code == 2
    assert await cli(daemon, "trust", "--list") == (0, "no trusted roots\n", "")


async def test_cli_sessions_show_trust(
    daemon: Daemon, open_client: OpenClient, project: Path
) -> None:
    await open_client(project)
    code, out, _ = await cli(daemon, "sessions")
    assert code == 0 and f"{project}  restricted  clients: 1" in out
    await cli(daemon, "trust", str(project))
    code, out, _ = await cli(daemon, "sessions")
    assert f"{project}  trusted  clients: 1" in out


def test_the_cli_notes_a_restricted_result() -> None:
    from codeward.protocol.render.notes import notes

    (note,) = [n for n in notes("hover", {"restricted": True}) if "restricted" in n]
    assert "codeward trust" in note
    assert not [n for n in notes("hover", {}) if "restricted" in n]
