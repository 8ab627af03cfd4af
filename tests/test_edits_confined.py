"""Edits write only inside the root: a file with other hard links is neither written (in
place or replaced) nor shown; a folder swapped for a symlink while an edit runs (the race
made deterministic) redirects nothing and leaves no staging file; git directories are known
by what they hold, not by the name `.git`."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import codeward.daemon.edits.atomic as atomic
from codeward.daemon.config import Config, DaemonConfig, LanguageConfig
from codeward.daemon.edits import Basis, commit, prepare
from codeward.daemon.edits.plan import FileChange
from codeward.protocol.errors import ErrorKind, ToolError
from tests.lsp_support import have
from tests.rpc import RpcClient, RpcFailure
from tests.test_edits_leases import sigio_ignored

__all__ = ["sigio_ignored"]

SECRET = "package main\n// the outside file's own words\nfunc  main(){}\n"


@pytest.fixture
def daemon_config() -> Config:
    """Go files formatted by gofmt from PATH (no server): format_code without servers."""
    return Config(
        daemon=DaemonConfig(idle_timeout=600.0),
        languages={"go": LanguageConfig(patterns=["*.go"], servers=[], language_id="go")},
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the root, never to be written by an edit."""
    path = tmp_path / "outside"
    path.mkdir()
    return Path(os.path.realpath(path))


@pytest.fixture
def linked(project: Path, outside: Path) -> Path:
    """`main.go` in the root, a hard link of `outside/secret.go`."""
    (outside / "secret.go").write_text(SECRET)
    os.link(outside / "secret.go", project / "main.go")
    return project / "main.go"


def everything(folder: Path) -> dict[str, str]:
    """Every file under `folder` (staging files included, so leftovers show), root-relative."""
    return {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


async def refusal(client: RpcClient, tool: str, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool(tool, **arguments)
    return info.value


def whole(uri: str, text: str) -> dict[str, Any]:
    """A WorkspaceEdit putting `text` at the start of the file `uri`."""
    zero = {"line": 0, "character": 0}
    return {"changes": {uri: [{"range": {"start": zero, "end": zero}, "newText": text}]}}


def create(path: Path, text: str) -> dict[str, Any]:
    """A WorkspaceEdit creating the file `path` with `text`."""
    uri = path.as_uri()
    return {
        "documentChanges": [
            {"kind": "create", "uri": uri},
            {
                "textDocument": {"uri": uri, "version": None},
                "edits": whole(uri, text)["changes"][uri],
            },
        ]
    }


# --- hard links -------------------------------------------------------------------------


async def test_edit_file_never_writes_a_hard_linked_file(
    client: RpcClient, linked: Path, outside: Path, sigio_ignored: None
) -> None:
    for mode in ("apply", "safe"):
        err = await refusal(client, "edit_file", path="main.go", content="hacked\n", mode=mode)
        assert err.kind == "path_outside_project" and err.data["reason"] == "hard link"
        assert "'main.go' has other hard links" in err.message
    assert (outside / "secret.go").read_text() == SECRET
    assert os.stat(linked).st_nlink == 2  # not replaced either: the link holds


async def test_a_preview_never_shows_a_hard_linked_file(
    client: RpcClient, linked: Path, outside: Path
) -> None:
    for mode in ("preview", "apply"):
        err = await refusal(
            client,
            "edit_file",
            path="main.go",
            edits=[{"line": 1, "character": 1, "end_line": 1, "end_character": 1, "new_text": "x"}],
            mode=mode,
        )
        assert err.data["reason"] == "hard link"
        assert "outside file" not in err.message and "outside file" not in str(err.data)
    assert (outside / "secret.go").read_text() == SECRET


@pytest.mark.skipif(not have("gofmt"), reason="gofmt is not installed")
async def test_format_code_never_writes_or_shows_a_hard_linked_file(
    client: RpcClient, linked: Path, outside: Path, sigio_ignored: None
) -> None:
    for apply in (False, True):
        err = await refusal(client, "format_code", path="main.go", apply=apply)
        assert err.kind == "path_outside_project" and err.data["reason"] == "hard link"
        assert "outside file" not in err.message
    assert (outside / "secret.go").read_text() == SECRET
    assert os.stat(linked).st_nlink == 2


@pytest.mark.parametrize("leases", [True, False])
def test_a_hard_link_made_after_the_plan_is_refused(
    project: Path, outside: Path, leases: bool
) -> None:
    """Swapped in between the edit's check and its write (same bytes): in place (under a
    lease) or by a replace, never written and never replaced."""
    (project / "main.go").write_text(SECRET)
    (outside / "secret.go").write_text(SECRET)
    plan = prepare(project, whole((project / "main.go").as_uri(), "// x\n"), "utf-16", Basis())
    (project / "main.go").unlink()
    os.link(outside / "secret.go", project / "main.go")
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN if leases else signal.SIG_DFL)
    try:
        with pytest.raises(ToolError) as info:
            commit(plan)
    finally:
        signal.signal(signal.SIGIO, previous)
    assert info.value.details["reason"] == "hard link"
    assert (outside / "secret.go").read_text() == SECRET
    assert everything(project) == {"main.go": SECRET}


def test_a_hard_link_linked_between_the_read_and_the_replace(
    project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replace path's last look (the file opened just before its replace) sees it."""
    (project / "main.go").write_text(SECRET)
    (outside / "secret.go").write_text(SECRET)
    plan = prepare(project, whole((project / "main.go").as_uri(), "// x\n"), "utf-16", Basis())
    real_stage = atomic._stage

    def stage(path: Path, *args: Any) -> str:
        temp = real_stage(path, *args)
        (project / "main.go").unlink()
        os.link(outside / "secret.go", project / "main.go")
        return temp

    monkeypatch.setattr(atomic, "_stage", stage)
    monkeypatch.setattr(atomic, "lease_all", lambda *args: None)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.details["reason"] == "hard link"
    assert (outside / "secret.go").read_text() == SECRET
    assert everything(project) == {"main.go": SECRET}


# --- a folder swapped for a symlink while an edit runs -------------------------------------


def swap_for_link(folder: Path, target: Path) -> None:
    """Move `folder` aside (to `<name>.real`) and put a symlink to `target` in its place."""
    folder.rename(folder.with_name(folder.name + ".real"))
    folder.symlink_to(target, target_is_directory=True)


async def test_a_folder_swapped_before_a_create_redirects_nothing(
    client: RpcClient, project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "kept.go").write_text("package sub\n")
    real_current = atomic._current
    swapped: list[bool] = []

    def current_then_swap(root: Path, change: FileChange) -> Any:
        found = real_current(root, change)  # the commit's check that nothing changed...
        swap_for_link(project / "sub", outside)  # ...then the swap, before any open
        swapped.append(True)
        return found

    monkeypatch.setattr(atomic, "_current", current_then_swap)
    err = await refusal(
        client, "edit_file", path="sub/new.go", content="package sub\n", create=True
    )
    assert swapped and err.kind == "path_outside_project"
    assert "A folder of 'sub/new.go' became a link" in err.message
    assert str(outside) not in err.message
    assert everything(outside) == {}  # neither the file nor a staging file
    assert everything(project) == {"sub.real/kept.go": "package sub\n"}


@pytest.mark.parametrize("existing", [False, True])
def test_a_folder_swapped_after_it_was_opened_keeps_the_write_inside(
    project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    """Once the edit holds its folder open, a swap moves nothing: the write lands in the
    folder it opened (moved aside in the root), no staging file is left anywhere."""
    (project / "sub").mkdir()
    target = project / "sub" / "a.go"
    if existing:
        target.write_text("package sub\n")
        edit = whole(target.as_uri(), "// x\n")
    else:
        edit = create(target, "// x\n")
    plan = prepare(project, edit, "utf-16", Basis())
    real_stage = atomic._stage

    def stage(path: Path, *args: Any) -> str:
        swap_for_link(project / "sub", outside)
        return real_stage(path, *args)

    monkeypatch.setattr(atomic, "_stage", stage)
    monkeypatch.setattr(atomic, "lease_all", lambda *args: None)
    commit(plan)
    assert everything(outside) == {}
    expected = "// x\npackage sub\n" if existing else "// x\n"
    assert everything(project) == {"sub.real/a.go": expected}


def test_a_folder_moved_away_before_the_write_is_stale(project: Path) -> None:
    (project / "sub").mkdir()
    plan = prepare(project, create(project / "sub" / "new.go", "x\n"), "utf-16", Basis())
    (project / "sub").rename(project / "elsewhere")
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT and "moved or removed" in info.value.message
    assert everything(project) == {}


def test_a_failed_create_leaves_no_staging_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "sub").mkdir()
    plan = prepare(project, create(project / "sub" / "new.go", "x\n"), "utf-16", Basis())
    real_link: Callable[..., None] = os.link

    def link(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(ToolError):
        commit(plan)
    monkeypatch.setattr(os, "link", real_link)
    assert everything(project) == {}  # sub/ holds neither the file nor its staged copy


# --- git directories, whatever their name ----------------------------------------------------


def make_git_dir(folder: Path) -> None:
    """What makes a folder a git directory to git itself."""
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "hooks").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text("[core]\n\tbare = true\n")


async def test_edit_file_refuses_a_git_directory_of_any_name(
    client: RpcClient, project: Path
) -> None:
    make_git_dir(project / "x.git")
    before = everything(project)
    for path, create in (("x.git/hooks/pre-commit", True), ("x.git/config", False)):
        for mode in ("apply", "preview"):
            err = await refusal(
                client,
                "edit_file",
                path=path,
                content="#!/bin/sh\ntouch pwned\n",
                create=create,
                mode=mode,
            )
            assert err.kind == "path_outside_project", err.message
            assert err.data["reason"] == "git directory"
    assert everything(project) == before


def test_a_gitfile_and_dot_git_folders_stay_refused(project: Path) -> None:
    (project / ".git").write_text("gitdir: elsewhere\n")  # a linked worktree's gitfile
    (project / "sub" / ".git").mkdir(parents=True)
    for path in (project / ".git", project / "sub" / ".git" / "config"):
        edit = {"documentChanges": [{"kind": "create", "uri": path.as_uri(), "options": {}}]}
        with pytest.raises(ToolError) as info:
            prepare(project, edit, "utf-16", Basis())
        assert info.value.details["reason"] == "git directory"


def test_a_workspace_edit_into_a_git_directory_is_refused(project: Path) -> None:
    make_git_dir(project / "mirror")
    hook = project / "mirror" / "hooks" / "post-update"
    edit = {"documentChanges": [{"kind": "create", "uri": hook.as_uri()}]}
    with pytest.raises(ToolError) as info:
        prepare(project, edit, "utf-16", Basis())
    assert info.value.kind is ErrorKind.PATH_OUTSIDE_PROJECT
    assert info.value.details["reason"] == "git directory"


def test_a_folder_that_becomes_a_git_directory_before_the_write(project: Path) -> None:
    (project / "y").mkdir()
    target = project / "y" / "HEAD.new"
    edit = {"documentChanges": [{"kind": "create", "uri": target.as_uri()}]}
    plan = prepare(project, edit, "utf-16", Basis())
    make_git_dir(project / "y")
    before = everything(project)
    with pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.details["reason"] == "git directory"
    assert everything(project) == before
