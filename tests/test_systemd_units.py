"""The systemd user units, and `make install-systemd` filling in ExecStart."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codeward.protocol.socket_path import DAEMON_ALLOCATOR

ROOT = Path(__file__).resolve().parent.parent


def units(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment]  # keys are case-sensitive
    parser.read(path)
    return parser


def test_units_describe_socket_activation_and_notify() -> None:
    socket = units(ROOT / "systemd" / "codeward.socket")
    assert socket["Socket"]["ListenStream"] == "%t/codeward/codeward.sock"
    assert socket["Socket"]["SocketMode"] == "0600"
    assert socket["Socket"]["DirectoryMode"] == "0700"
    service = units(ROOT / "systemd" / "codeward.service")
    assert service["Service"]["Type"] == "notify"
    assert service["Service"]["ExecStart"] == "@EXEC@ daemon"
    # the daemon's allocator, as an autostarting client sets it (no second start)
    assert service["Service"]["Environment"].split() == [
        f"{name}={value}" for name, value in DAEMON_ALLOCATOR.items()
    ]
    assert "WatchdogSec" in service["Service"]
    # SIGTERM to the daemon alone (it stops its servers, git writes finish), then SIGKILL to
    # whatever is left in the unit's cgroup.
    assert service["Service"]["KillMode"] == "mixed"
    assert service["Service"]["SendSIGKILL"] == "yes"
    assert service["Unit"]["Requires"] == "codeward.socket"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_systemd_fills_in_the_path(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "codeward").exists():
        pytest.skip("the .venv is not set up (run `make test`)")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    proc = subprocess.run(
        ["make", "-s", "install-systemd"], cwd=ROOT, env=env, capture_output=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr.decode()
    installed = tmp_path / "systemd" / "user"
    service = units(installed / "codeward.service")
    assert service["Service"]["ExecStart"] == f"{ROOT / '.venv' / 'bin' / 'codeward'} daemon"
    assert (installed / "codeward.socket").read_text() == (
        ROOT / "systemd" / "codeward.socket"
    ).read_text()
