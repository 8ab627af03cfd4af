"""Real git repositories in tmp dirs for the git tests: a private HOME, nasty file names."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from codeward.daemon.config import GitConfig, PolicyConfig
from codeward.daemon.git import run_git

# Names that break naive parsers: spaces, unicode, quotes, tabs, backslashes, newlines.
NASTY_NAMES = (
    "sp ace.txt",
    "ünï cödé.txt",
    'quo"te.txt',
    "tab\there.txt",
    "back\\slash.txt",
    "new\nline.txt",
    "-dash.txt",
)
ALLOW = PolicyConfig(git_write="allow", git_destructive="allow")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git directly (test setup), returning stdout."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=check, capture_output=True, text=True, timeout=60
    )
    return done.stdout


def git_bytes(cwd: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60
    ).stdout


IDENTITY = "[user]\n\tname = Test User\n\temail = test@example.com\n"


def git_identity(config_home: Path) -> None:
    """git's global config under `config_home` (`$XDG_CONFIG_HOME/git/config`, read beside
    `~/.gitconfig`) with the suite's identity: every commit a test makes, itself or through
    a daemon (which passes XDG_CONFIG_HOME to git), works for a user who has none."""
    (config_home / "git").mkdir(parents=True, exist_ok=True)
    (config_home / "git" / "config").write_text(IDENTITY)


def private_home(home: Path, extra_config: str = "") -> dict[str, str]:
    """Environment variables for a HOME whose global git config the tests control."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        IDENTITY
        + "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        + extra_config
    )
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return Path(os.path.realpath(path))


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def write(repo: Path, name: str, text: str) -> Path:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """`git daemon --inetd` serving the repositories under `base` (pushes too) on a socket
    of ours on 127.0.0.1, one daemon per connection: the network remote of the tests
    (codeward refuses local ones). Yields `git://127.0.0.1:PORT/`."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    children: list[subprocess.Popen[bytes]] = []
    argv = ["git", "daemon", "--inetd", f"--base-path={base}", "--export-all",
            "--enable=receive-pack", "--informative-errors", str(base)]  # fmt: skip

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the fixture is done
                return
            with conn:
                children.append(subprocess.Popen(argv, stdin=conn, stdout=conn,
                                                 stderr=subprocess.DEVNULL))  # fmt: skip

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"git://127.0.0.1:{server.getsockname()[1]}/"
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=30)
        for child in children:
            child.kill()
            child.wait(timeout=30)


class Approver:
    """An `approve` callback that records what it was asked and gives a fixed answer."""

    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, list[str]]] = []

    async def __call__(self, summary: str, argv: list[str]) -> bool | None:
        self.asked.append((summary, argv))
        return self.answer


class Changes:
    def __init__(self) -> None:
        self.calls: list[list[Path]] = []

    def __call__(self, paths: list[Path]) -> None:
        self.calls.append(list(paths))


async def run(
    root: Path,
    subcommand: str,
    args: Sequence[str] = (),
    *,
    allow_destructive: bool = False,
    policy: PolicyConfig = ALLOW,
    limits: GitConfig | None = None,
    approve: Approver | None = None,
    changes: Changes | None = None,
) -> dict[str, Any]:
    return await run_git(
        root,
        subcommand,
        list(args),
        allow_destructive=allow_destructive,
        policy=policy,
        limits=limits or GitConfig(),
        approve=approve or Approver(None),
        on_files_changed=changes or Changes(),
    )


@pytest.fixture(autouse=True)
def git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every git test runs with a private HOME (global config) and no inherited GIT_* vars."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    for name, value in private_home(home).items():
        monkeypatch.setenv(name, value)
    return home
