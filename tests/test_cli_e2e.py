"""The `codeward` console script against the real daemon, in subprocesses.

Every test that starts a daemon stops it (`codeward stop`, then waiting for the process,
and killing its process group in a finally). Sockets, state and config live in tmp dirs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from codeward.client.autostart import try_connect
from tests.git_repos import git_identity
from tests.test_cli_imports import forbidden, imported_modules
from tests.test_cli_mcp import McpProcess

CODEWARD = str(Path(sys.executable).parent / "codeward")
RUN_TIMEOUT = 120.0
READY_TIMEOUT = 30.0


class Env:
    """Private socket, state and config directories, and a way to run the CLI in them."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.socket = base / "run" / "codeward.sock"
        self.state = base / "state"
        self.vars = os.environ | {
            "XDG_STATE_HOME": str(self.state),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_RUNTIME_DIR": str(base / "xdg-run"),
            "CODEWARD_SOCKET": "",
        }
        self.vars.pop("PYTHONPROFILEIMPORTTIME", None)
        git_identity(base / "config")

    @property
    def log(self) -> Path:
        return self.state / "codeward" / "daemon.log"

    def run(
        self, *args: str, cwd: Path | None = None, stdin: str = "", **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CODEWARD, "--socket", str(self.socket), *args],
            input=stdin, capture_output=True, text=True, timeout=RUN_TIMEOUT,
            cwd=cwd or self.base, env=self.vars | env,
        )  # fmt: skip

    def json(self, *args: str, cwd: Path | None = None, stdin: str = "") -> Any:
        proc = self.run("--json", *args, cwd=cwd, stdin=stdin)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)


def wait_ready(path: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll until the daemon accepts connections (bounded)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while (sock := try_connect(path)) is None:
        assert proc.poll() is None, f"the daemon exited before it was ready:\n{log.read_text()}"
        assert time.monotonic() < deadline, "the daemon did not become ready"
        time.sleep(0.02)
    sock.close()


def gone(pid: int) -> bool:
    """True once `pid` has exited (a zombie awaiting an unrelated reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        if wait_gone(pid, 5.0):
            return


@pytest.fixture
def env() -> Iterator[Env]:
    base = Path(tempfile.mkdtemp(prefix="cwe-", dir="/tmp"))  # AF_UNIX paths are short
    try:
        yield Env(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def running_daemon(env: Env) -> Iterator[subprocess.Popen[bytes]]:
    """`codeward daemon --socket ...` in the foreground (of its own process group), ready;
    stopped on exit (`codeward stop`, else its group killed) and reaped."""
    env.log.parent.mkdir(parents=True, exist_ok=True)
    with open(env.log, "ab") as log:
        proc = subprocess.Popen(
            [CODEWARD, "daemon", "--socket", str(env.socket)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env.vars,
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_ready(env.socket, proc, env.log)
        yield proc
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            env.run("stop")
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait(10)


@pytest.fixture
def daemon(env: Env) -> Iterator[subprocess.Popen[bytes]]:
    with running_daemon(env) as proc:
        yield proc


@pytest.fixture
def repo(env: Env) -> Path:
    root = env.base / "repo"
    root.mkdir()
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True, timeout=30)
    (root / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "a.py"], cwd=root, check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first commit"], cwd=root, check=True, timeout=30)
    return Path(os.path.realpath(root))


# -- daemon commands ----------------------------------------------------------------------------


def test_status_sessions_and_tools(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    status = env.json("status")
    assert status["pid"] == daemon.pid
    assert Path(status["socket"]) == env.socket
    human = env.run("status")
    assert human.returncode == 0
    assert f"(pid {daemon.pid})" in human.stdout.splitlines()[0]
    tools = env.json("tools")["tools"]
    assert "git_command" in {t["name"] for t in tools}
    assert "git_command: " in env.run("tools").stdout
    mcp = env.json("tools", "--format", "mcp")["tools"]
    assert all("inputSchema" in t for t in mcp)
    assert env.run("git", "status", cwd=repo).returncode == 0  # opens a session on repo
    sessions = env.json("sessions")["sessions"]
    assert [s["root"] for s in sessions] == [str(repo)]
    assert str(repo) in env.run("sessions").stdout


def test_status_imports_no_trio(env: Env, daemon: subprocess.Popen[bytes]) -> None:
    proc = env.run("status", PYTHONPROFILEIMPORTTIME="1")
    assert proc.returncode == 0
    names = imported_modules(proc.stderr)
    assert "codeward.client.cli" in names
    assert forbidden(names) == set()


# -- git ------------------------------------------------------------------------------------------


def test_git_read_commands(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    log = env.run("git", "log", "--oneline", cwd=repo)
    assert log.returncode == 0, log.stderr
    assert "first commit" in log.stdout
    (repo / "a.py").write_text("x = 2\n")
    status = env.run("git", "status", "--short", cwd=repo / ".")
    assert status.stdout.strip() == "M a.py"
    diff = env.json("git", "diff", "--", "a.py", cwd=repo)
    assert diff["exit_code"] == 0 and "+x = 2" in diff["output"]
    failed = env.run("git", "show", "no-such-revision", cwd=repo)
    assert failed.returncode == 1


def test_git_write_needs_approval(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    (repo / "b.py").write_text("y = 1\n")
    refused = env.run("git", "add", "b.py", cwd=repo)  # stdin is no terminal: cannot ask
    assert refused.returncode == 1
    assert "[confirmation_required]" in refused.stderr
    staged = ["git", "diff", "--cached", "--name-only"]
    assert subprocess.run(staged, cwd=repo, capture_output=True, text=True).stdout == ""
    approved = env.run("git", "--yes", "add", "b.py", cwd=repo)
    assert approved.returncode == 0, approved.stderr
    assert "approved (--yes)" in approved.stderr
    assert subprocess.run(staged, cwd=repo, capture_output=True, text=True).stdout == "b.py\n"


def test_file_writes_under_edits_confirm(
    env: Env, daemon: subprocess.Popen[bytes], repo: Path
) -> None:
    (repo / ".codeward.toml").write_text('[policy]\nedits = "confirm"\n')  # a project narrows
    (repo / "notes.txt").write_text("one\n")
    refused = env.run("edit", "notes.txt", cwd=repo, stdin="two\n")
    assert refused.returncode == 1
    assert "[confirmation_required]" in refused.stderr and "policy.edits" in refused.stderr
    assert (repo / "notes.txt").read_text() == "one\n"
    approved = env.run("--yes", "edit", "notes.txt", cwd=repo, stdin="two\n")
    assert approved.returncode == 0, approved.stderr
    assert "approved (--yes): edit_file: writing 1 file (notes.txt)" in approved.stderr
    assert (repo / "notes.txt").read_text() == "two\n"


def test_git_write_asks_y_n_on_a_terminal(
    env: Env, daemon: subprocess.Popen[bytes], repo: Path
) -> None:
    (repo / "c.py").write_text("z = 1\n")
    primary, secondary = pty.openpty()
    try:
        os.write(primary, b"y\n")  # typed ahead: the terminal holds the line until it is read
        proc = subprocess.run(
            [CODEWARD, "--socket", str(env.socket), "git", "add", "c.py"],
            stdin=secondary, capture_output=True, text=True, timeout=RUN_TIMEOUT,
            cwd=repo, env=env.vars,
        )  # fmt: skip
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 0, proc.stderr
    assert "git_command wants to run: git add c.py" in proc.stderr
    assert "Allow? [y/N] " in proc.stderr
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=repo,
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert staged.stdout == "c.py\n"


def test_git_policy_refusals(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    destructive = env.run("git", "--yes", "reset", "--hard", cwd=repo)
    assert destructive.returncode == 1
    assert "[blocked_destructive]" in destructive.stderr
    unlisted = env.run("git", "config", "core.editor", "vim", cwd=repo)
    assert unlisted.returncode == 1
    assert "[subcommand_not_allowed]" in unlisted.stderr
    as_json = env.run("--json", "git", "config", "x", cwd=repo)
    assert json.loads(as_json.stdout)["error"]["data"]["kind"] == "subcommand_not_allowed"


def test_git_paths_are_relative_to_the_working_directory(
    env: Env, daemon: subprocess.Popen[bytes], repo: Path
) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("y = 1\n")
    (sub / "msg.txt").write_text("add mod\n")
    assert env.run("git", "--yes", "add", "mod.py", cwd=sub).returncode == 0
    done = env.run("git", "commit", "-F", "msg.txt", "--yes", cwd=sub)  # a file option
    assert done.returncode == 0, done.stderr
    log = env.run("git", "log", "--format=%s", "--", "mod.py", cwd=sub)
    assert log.stdout == "add mod\n", log.stderr  # a pathspec, from the subdirectory
    assert env.run("git", "log", "--format=%s", "mod.py", cwd=sub).stdout == "add mod\n"
    assert env.run("git", "log", "--format=%s", "--", "../a.py", cwd=sub).stdout == (
        "first commit\n"
    )
    (sub / "mod.py").write_text("y = 2\n")
    (repo / "a.py").write_text("x = 3\n")
    here = env.json("git", "diff", "--name-only", "--", ".", cwd=sub)
    assert here["output"] == "pkg/mod.py\n"
    outside = env.run("git", "log", "--", "../../elsewhere", cwd=sub)
    assert outside.returncode == 1 and "[path_outside_project]" in outside.stderr


def test_git_flags_on_either_side_of_the_subcommand(
    env: Env, daemon: subprocess.Popen[bytes], repo: Path
) -> None:
    (repo / "a.py").write_text("x = 2\n")
    blocked = env.run("git", "reset", "--hard", "--yes", cwd=repo)
    assert blocked.returncode == 1 and "[blocked_destructive]" in blocked.stderr
    assert "--allow-destructive" in blocked.stderr  # the CLI's form of the hint
    assert "allow_destructive: true" not in blocked.stderr
    after = env.run("git", "reset", "--hard", "--allow-destructive", "--yes", cwd=repo)
    assert after.returncode == 0, after.stderr
    assert (repo / "a.py").read_text() == "x = 1\n"
    (repo / "a.py").write_text("x = 2\n")
    before = env.run("git", "--allow-destructive", "--yes", "reset", "--hard", cwd=repo)
    assert before.returncode == 0, before.stderr
    assert (repo / "a.py").read_text() == "x = 1\n"
    mixed = env.run("git", "--yes", "status", "--json", cwd=repo)  # --json after, too
    assert json.loads(mixed.stdout)["exit_code"] == 0


def test_sessions_close(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    other = env.base / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True, timeout=30)
    for root in (repo, other):
        assert env.run("git", "status", cwd=root).returncode == 0
    roots = sorted(s["root"] for s in env.json("sessions")["sessions"])
    assert roots == sorted([str(repo), str(other.resolve())])
    closed = env.run("sessions", "close", "repo", cwd=env.base)  # relative to the cwd
    assert (closed.returncode, closed.stdout) == (0, f"closed {repo}\n"), closed.stderr
    assert [s["root"] for s in env.json("sessions")["sessions"]] == [str(other.resolve())]
    missing = env.run("sessions", "close", str(repo))
    assert missing.returncode == 1 and "No session is open for" in missing.stderr
    assert env.json("sessions", "close", "--all") == {"closed": [str(other.resolve())]}
    assert env.json("sessions")["sessions"] == []
    assert env.run("sessions", "close", "--all").stderr == "codeward: no sessions\n"


# -- lua and call ----------------------------------------------------------------------------------


def test_lua_and_call(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    script = repo / "s.lua"
    script.write_text("local a, b = ...\nreturn {a = a, n = 1 + 1}\n")
    out = env.run("lua", "-", "x", cwd=repo, stdin="return 'hi ' .. tostring(#(... or {}))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("hi ")
    assert env.json("lua", str(script), cwd=repo)["result"]["n"] == 2
    failing = env.run("lua", "-", cwd=repo, stdin="codeward.log('about to fail') error('boom')")
    assert failing.returncode == 1
    assert "[lua_error]" in failing.stderr
    assert failing.stderr.startswith("about to fail\n")  # logged lines reach the caller
    logged = env.run("lua", "-", cwd=repo, stdin="codeward.log('step', 1) return 'done'")
    assert (logged.stdout, logged.stderr) == ("done\n", "step\t1\n")
    assert "lua[" in env.log.read_text() and "step\t1" in env.log.read_text()  # and the log
    call = env.json("call", "git_command", '{"subcommand": "log", "args": ["-1"]}', cwd=repo)
    assert "first commit" in call["output"]
    unknown = env.run("call", "no_such_tool", "{}", cwd=repo)
    assert unknown.returncode == 1 and "[invalid_arguments]" in unknown.stderr


def test_mcp_pump_against_the_daemon(env: Env, daemon: subprocess.Popen[bytes], repo: Path) -> None:
    mcp = McpProcess([CODEWARD, "--socket", str(env.socket), "mcp"], cwd=repo)
    try:
        mcp.handshake()
        tools = mcp.request("tools/list")["result"]["tools"]
        assert "git_command" in {t["name"] for t in tools}
        args = {"subcommand": "log", "args": ["--oneline"]}
        ok = mcp.request("tools/call", {"name": "git_command", "arguments": args})["result"]
        assert ok["isError"] is False
        assert "first commit" in ok["content"][0]["text"]  # git's own lines, not JSON
        assert "first commit" in ok["structuredContent"]["output"]
        bad = mcp.request(
            "tools/call", {"name": "git_command", "arguments": {"subcommand": "config"}}
        )
        assert bad["result"]["isError"] is True
        assert "[subcommand_not_allowed]" in bad["result"]["content"][0]["text"]
    finally:
        assert mcp.close() == 0


# -- stop and autostart -------------------------------------------------------------------------


def test_stop_stops_the_daemon(env: Env, daemon: subprocess.Popen[bytes]) -> None:
    stopped = env.run("stop")
    assert stopped.returncode == 0
    assert "daemon stopped" in stopped.stderr
    assert daemon.wait(30) == 0
    unreachable = env.run("--no-autostart", "status")
    assert unreachable.returncode == 3
    assert "codeward daemon" in unreachable.stderr
    assert env.run("stop").stderr == "codeward: no daemon is running\n"


def test_autostart_starts_one_daemon_for_racing_clients(env: Env, repo: Path) -> None:
    pids: set[int] = set()
    try:
        with ThreadPoolExecutor(4) as pool:
            runs = list(pool.map(lambda _: env.run("--json", "status"), range(4)))
        for proc in runs:
            assert proc.returncode == 0, proc.stderr
            pids.add(json.loads(proc.stdout)["pid"])
        assert len(pids) == 1
        assert env.log.read_text().count("codeward autostart:") == 1
        (pid,) = pids
        assert os.getsid(pid) == pid  # detached in its own session
        assert env.json("sessions", cwd=repo)["sessions"] == []  # later clients just connect
        assert env.log.read_text().count("codeward autostart:") == 1
        assert env.run("stop").returncode == 0
        assert wait_gone(pid)
    finally:
        for pid in pids:
            kill_group(pid)


def test_autostart_failure_exits_3_and_points_at_the_log(env: Env) -> None:
    config = env.base / "config" / "codeward"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("this is [not toml\n")
    proc = env.run("status")
    assert proc.returncode == 3
    assert str(env.log) in proc.stderr
    assert "before it was ready" in proc.stderr
    assert "codeward autostart:" in env.log.read_text()
    assert try_connect(env.socket) is None  # nothing left listening


# -- code intelligence (real language servers) ------------------------------------------------

PROGRAM = '''\
def greet(name: str) -> str:
    """Say hello."""
    return "hi " + name


def main() -> None:
    print(greet("x"))
    greet(3)
'''


@pytest.mark.slow
def test_code_intelligence_commands(env: Env, daemon: subprocess.Popen[bytes]) -> None:
    project = env.base / "py"
    (project / ".git").mkdir(parents=True)
    (project / "m.py").write_text(PROGRAM)
    hover = env.run("hover", "m.py:7:11", cwd=project)
    assert hover.returncode == 0, hover.stderr
    assert hover.stdout.startswith("def greet(name: str) -> str")
    assert "Say hello." in hover.stdout
    definition = env.run("definition", "m.py:7:11", cwd=project)
    assert definition.stdout == "m.py:1:5: def greet(name: str) -> str:\n"
    references = env.run("references", "m.py:1:5", cwd=project).stdout.splitlines()
    assert references == ['m.py:7:11: print(greet("x"))', "m.py:8:5: greet(3)"]
    # names instead of columns: a line and the name on it, a name path with or without a file
    for spec in ("m.py:7:greet", "m.py:greet", "greet"):
        named = env.run("definition", spec, cwd=project)
        assert named.stdout == "m.py:1:5: def greet(name: str) -> str:\n", (spec, named.stderr)
        assert "codeward: at greet m.py:" in named.stderr
    snapped = env.run("references", "m.py:1:1", cwd=project)  # the `def`: its name
    assert snapped.stdout.splitlines() == references
    assert "codeward: at greet m.py:1:5 (the identifier nearest" in snapped.stderr
    with_decl = env.run("references", "--include-declaration", "m.py:1:5", cwd=project)
    assert with_decl.stdout.splitlines()[0] == "m.py:1:5: def greet(name: str) -> str:"
    symbols = env.run("symbols", "m.py", cwd=project).stdout.splitlines()
    assert "m.py:1:5: function greet" in symbols and "m.py:6:5: function main" in symbols
    callers = env.run("calls", "m.py:1:5", cwd=project).stdout.splitlines()
    assert callers == ['m.py:7:11: main: print(greet("x"))', "m.py:8:5: main: greet(3)"]
    diagnostics = env.run("diagnostics", "m.py", cwd=project)
    assert diagnostics.returncode == 0
    errors = [ln for ln in diagnostics.stdout.splitlines() if ": error: " in ln]
    assert errors and errors[0].startswith("m.py:8:11: error: ")
    assert errors[0].endswith("[reportArgumentType]")
    as_json = env.json("definition", str(project / "m.py") + ":7:11", cwd=env.base)
    assert as_json["status"] == "found" and as_json["definition"]["line"] == 1
    outside = env.run("hover", "/etc/hostname:1:1", cwd=project)
    assert outside.returncode == 1
    assert "[path_outside_project]" in outside.stderr
