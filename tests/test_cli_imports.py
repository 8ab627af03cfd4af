"""The thin client stays thin: no trio, no daemon, no heavy libraries at start-up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_client_connection import (
    FakeDaemon,
    private_socket,
    responder,
)


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


FORBIDDEN = ("trio", "lsprotocol", "cattrs", "lupa", "msgspec", "anyio", "mcp", "codeward.daemon")
CODEWARD = Path(sys.executable).parent / "codeward"


def imported_modules(stderr: str) -> set[str]:
    """Module names from `-X importtime` / PYTHONPROFILEIMPORTTIME output."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def forbidden(names: set[str]) -> set[str]:
    return {n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)}


def test_importing_the_cli_loads_nothing_heavy() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import codeward.client.cli"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    names = imported_modules(proc.stderr)
    assert "codeward.client.cli" in names
    assert forbidden(names) == set()
    assert "subprocess" not in names  # imported only when a daemon must be started


def test_codeward_status_imports_no_trio(sock_path: Path) -> None:
    status = {"version": "0.1.0", "pid": 1, "uptime": 1, "sessions": 0, "connections": 1,
              "socket": str(sock_path)}  # fmt: skip
    assert CODEWARD.exists() or shutil.which("codeward"), "pip install -e . first"
    exe = str(CODEWARD) if CODEWARD.exists() else "codeward"
    with FakeDaemon(sock_path, responder({"daemon/status": status})):
        proc = subprocess.run(
            [exe, "--socket", str(sock_path), "status"],
            capture_output=True, text=True, timeout=60,
            env=os.environ | {"PYTHONPROFILEIMPORTTIME": "1"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("codeward 0.1.0 (pid 1)")
    names = imported_modules(proc.stderr)
    assert "codeward.client.cli" in names
    assert forbidden(names) == set()
