"""The README and docs/ stand alone: what they name exists, and the protocol page is complete."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import trio

import codeward.daemon.tools.all  # noqa: F401  (registers the tools)
from codeward.daemon.config import Config
from codeward.daemon.handlers import HANDLERS
from codeward.daemon.server import Daemon
from codeward.daemon.tools.registry import REGISTRY
from codeward.protocol.errors import ErrorKind
from codeward.protocol.socket_path import socket_path

TOP = Path(__file__).resolve().parent.parent
README = (TOP / "README.md").read_text(encoding="utf-8")
PROTOCOL = (TOP / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {
    f"docs/{p.name}": p.read_text(encoding="utf-8") for p in (TOP / "docs").glob("*.md")
}


def test_links_lead_to_files_of_the_repository() -> None:
    for name, text in PAGES.items():
        base = (TOP / name).parent
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" in target:
                continue
            assert (base / target).exists(), f"{name} links to a missing {target}"
    assert "(docs/PROTOCOL.md)" in README


def sources() -> dict[str, str]:
    """Every other text file of the project: its code, tests, benchmarks and build files."""
    found = {}
    for folder in ("codeward", "tests", "bench", "servers", "systemd"):
        for path in (TOP / folder).rglob("*"):
            if path.is_file() and path.suffix != ".pyc" and path != Path(__file__).resolve():
                found[str(path.relative_to(TOP))] = path.read_text(encoding="utf-8")
    for name in ("Makefile", "pyproject.toml"):
        found[name] = (TOP / name).read_text(encoding="utf-8")
    return found


def test_no_page_points_outside_the_repository() -> None:
    for name, text in (PAGES | sources()).items():
        assert "DESIGN" not in text and "shared folder" not in text, name
        assert "../shared" not in text, name


def test_protocol_page_names_every_method_tool_and_error_kind() -> None:
    for method in HANDLERS:
        assert f"`{method}`" in PROTOCOL, method
    for tool in REGISTRY:
        assert f"`{tool.name}`" in PROTOCOL, tool.name
    for kind in ErrorKind:
        assert f"`{kind.value}`" in PROTOCOL, kind.value


def test_readme_first_try_names_no_missing_file() -> None:
    first_try = README.split("a first try", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    for line in first_try.strip().splitlines():
        words = line.split("#", 1)[0].split()
        assert words[0] == ".venv/bin/codeward", line
        for word in words[1:]:
            if "/" in word or word.endswith(".py"):
                assert (TOP / word.split(":", 1)[0]).exists(), line


def readme_block(after: str) -> str:
    """The first ```sh block of the README after the text `after`."""
    return README.split(after, 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("where", ["xdg", "tmpdir", "explicit"])
async def test_readme_shell_example_works_as_written(
    nursery: trio.Nursery, tmp_path: Path, where: str
) -> None:
    """The example, taken from the README text, run by bash and socat against a daemon at
    the socket path the README's fallback computes (which must be the real one)."""
    if shutil.which("socat") is None:
        pytest.fail("socat is missing: `make system-deps` installs it (the example needs it)")
    base = Path(tempfile.mkdtemp(prefix="cwd-", dir="/tmp"))  # AF_UNIX paths are short
    try:
        env = {"PATH": os.environ["PATH"], "HOME": str(base)}
        if where == "xdg":
            env["XDG_RUNTIME_DIR"] = str(base / "xdg")
        elif where == "tmpdir":
            env["TMPDIR"] = str(base)
        else:
            env["CODEWARD_SOCKET"] = str(base / "any" / "x.sock")
        daemon = Daemon(Config(), socket_path(None, env))
        await nursery.start(daemon.run)
        repo = tmp_path / "repo"
        repo.mkdir()
        await trio.run_process(["git", "init", "-q", str(repo)])
        (repo / "new.txt").write_text("x\n")
        with trio.fail_after(60):
            proc = await trio.run_process(
                ["bash", "-c", readme_block("From a shell")],
                cwd=repo,
                env=env,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        daemon.request_stop()
        assert proc.returncode == 0, proc.stderr
        replies = {r["id"]: r for r in map(json.loads, proc.stdout.decode().splitlines())}
        assert replies[1]["result"]["root"] == str(repo.resolve())
        status = replies[2]["result"]
        assert status["exit_code"] == 0
        assert status["parsed"]["untracked"] == ["new.txt"]
    finally:
        shutil.rmtree(base, ignore_errors=True)
