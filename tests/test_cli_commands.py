"""The CLI in-process: argument parsing, exit codes, and what each command sends and prints.

The daemon is the scripted `FakeDaemon` (client-only behaviour: what goes on the wire and
how replies render); the real daemon is used by test_cli_e2e.py.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.client.cli import main
from codeward.client.cli_parser import COMMANDS, build_parser, split_git
from codeward.client.commands import daemon as daemon_commands
from codeward.client.commands.positions import parse_position
from codeward.client.invocation import describe_confirmation
from tests.test_client_connection import (
    FakeDaemon,
    Peer,
    private_socket,
    responder,
)


@pytest.fixture
def sock_path() -> Iterator[Path]:
    yield from private_socket()


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Run:
    """The outcome of one `main(argv)`."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr


def run(argv: list[str], stdin: str = "", *, tty_in: bool = False, tty_err: bool = False) -> Run:
    out = io.StringIO()
    err: io.StringIO = Tty() if tty_err else io.StringIO()
    inp: io.StringIO = Tty(stdin) if tty_in else io.StringIO(stdin)
    code = main(argv, stdin=inp, stdout=out, stderr=err)
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (a `.git` directory is enough to be found) as the working directory."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.chdir(root)
    return root


def tool_calls(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [m["params"] for m in fake.requests("tools/call")]


def tool_replier(results: dict[str, Any]) -> Any:
    """A tools/call handler answering per tool name (a result, or an error tuple)."""

    def handle(peer: Peer, req: dict[str, Any]) -> None:
        answer = results[req["params"]["name"]]
        if isinstance(answer, tuple):
            code, message, data = answer
            peer.error(req, code, message, data)
        else:
            peer.reply(req, answer)

    return handle


# -- parsing and usage errors (exit 2) ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["hover", "a.py:x:1"],
        ["hover", "a.py:0:1"],
        ["hover", "a.py:3"],
        ["definition", ":1:1"],
        ["call", "git_command", "{not json"],
        ["call", "git_command", "[1, 2]"],
        ["symbols"],
        ["format", "a.py", "--lines", "9-3"],
        ["format", "a.py", "--lines", "abc"],
        ["actions", "a.py:5-2"],
        ["actions", "a.py"],
        ["rename", "a.py:1:1", ""],
        ["lua", "/nonexistent/script.lua"],
        ["calls", "a.py:1:1", "--incoming", "--outgoing"],
        ["--timeout", "soon", "status"],
        ["git"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], repo: Path, sock_path: Path) -> None:
    result = run(["--socket", str(sock_path), "--no-autostart", *argv])
    assert result.code == 2, result.stderr
    assert "usage: codeward" in result.stderr
    assert result.stdout == ""
    assert not sock_path.parent.exists()  # nothing was started
    # a command's usage error shows that command's usage, not the top level's
    given = argv[0] if argv and argv[0] in COMMANDS else None
    usage = result.stderr.split("\n", 1)[0]
    assert usage.startswith(f"usage: codeward {given} " if given else "usage: codeward ["), usage


@pytest.mark.parametrize(
    "argv",
    [
        ["hover", "a.py:1:1", "extra"],
        ["sessions", "close"],
        ["sessions", "close", "/r", "--all"],
        ["sessions", "/r"],
        ["rename", "a.py:1:1", "x", "y"],
    ],
)
def test_usage_errors_name_the_command(argv: list[str], repo: Path, sock_path: Path) -> None:
    result = run(["--socket", str(sock_path), "--no-autostart", *argv])
    assert result.code == 2
    assert result.stderr.startswith(f"usage: codeward {argv[0]} "), result.stderr


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "diagnostics" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("codeward ")
    assert main(["git", "--help"]) == 0
    assert "--allow-destructive" in capsys.readouterr().out


def test_position_and_git_splitting() -> None:
    assert parse_position("dir:with:colons/a.py:12:4", 2) == ("dir:with:colons/a.py", [12, 4])
    assert parse_position("a.py:7", 1) == ("a.py", [7])
    assert split_git(["--root", "/r", "git", "--yes", "checkout", "--", "f"]) == (
        ["--root", "/r", "git", "--yes", "checkout"],
        ["--", "f"],
    )
    assert split_git(["status", "--json"]) == (["status", "--json"], None)
    assert split_git(["git", "--yes"]) == (["git", "--yes"], None)


# -- daemon unreachable (exit 3) ------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["status"], ["hover", "a.py:1:1"], ["git", "status"]])
def test_unreachable_with_no_autostart_exits_3(
    argv: list[str], repo: Path, sock_path: Path
) -> None:
    result = run(["--no-autostart", "--socket", str(sock_path), *argv])
    assert result.code == 3
    assert "codeward daemon" in result.stderr
    assert result.stderr.startswith("error: ")


def test_unreachable_json_mode_prints_an_error_object(repo: Path, sock_path: Path) -> None:
    result = run(["--json", "--no-autostart", "--socket", str(sock_path), "status"])
    assert result.code == 3
    assert json.loads(result.stdout)["error"]["code"] == "unreachable"


def test_daemon_gone_mid_request_exits_3(repo: Path, sock_path: Path) -> None:
    def hang_up(peer: Peer, req: dict[str, Any]) -> None:
        peer.close()

    with FakeDaemon(sock_path, responder({"daemon/status": hang_up})):
        result = run(["--socket", str(sock_path), "status"])
    assert result.code == 3
    assert "closed the connection" in result.stderr


def test_stop_without_a_daemon_is_fine(repo: Path, sock_path: Path) -> None:
    result = run(["--socket", str(sock_path), "stop"])
    assert result.code == 0
    assert "no daemon is running" in result.stderr
    assert not sock_path.exists()  # stop never autostarts


# -- daemon commands ---------------------------------------------------------------------------


def test_status_human_and_json(repo: Path, sock_path: Path) -> None:
    status = {"version": "0.1.0", "pid": 9, "uptime": 5, "sessions": 0, "connections": 1,
              "socket": str(sock_path)}  # fmt: skip
    with FakeDaemon(sock_path, responder({"daemon/status": status})) as fake:
        human = run(["--socket", str(sock_path), "status"])
        as_json = run(["status", "--json", "--socket", str(sock_path)])
    assert human.code == 0 and human.stdout.splitlines()[0] == "codeward 0.1.0 (pid 9), up 5s"
    assert json.loads(as_json.stdout) == status
    assert "session/open" not in fake.methods()  # no session needed
    init = fake.requests("initialize")[0]["params"]
    assert init["capabilities"] == {"confirm": False, "progress": False}


def test_sessions_tools_and_formats(repo: Path, sock_path: Path) -> None:
    def tools(peer: Peer, req: dict[str, Any]) -> None:
        fmt = req["params"]["format"]
        key = "inputSchema" if fmt == "mcp" else "input"
        peer.reply(req, {"tools": [{"name": "git_command", "description": "Git.", key: {}}]})

    script = responder({"session/list": {"sessions": []}, "tools/list": tools})
    with FakeDaemon(sock_path, script):
        sessions = run(["--socket", str(sock_path), "sessions"])
        native = run(["--socket", str(sock_path), "tools"])
        mcp = run(["--socket", str(sock_path), "tools", "--format", "mcp"])
    assert sessions.stdout == "no sessions\n"
    assert native.stdout == "git_command: Git.\n"
    assert json.loads(mcp.stdout)["tools"][0]["inputSchema"] == {}


def test_stop_waits_for_the_daemon_to_close(repo: Path, sock_path: Path) -> None:
    def shutdown(peer: Peer, req: dict[str, Any]) -> None:
        peer.reply(req, {})
        peer.close()

    with FakeDaemon(sock_path, responder({"daemon/shutdown": shutdown})) as fake:
        result = run(["--socket", str(sock_path), "stop"])
        as_json = run(["--socket", str(sock_path), "--json", "stop"])
    assert result.code == 0 and "daemon stopped" in result.stderr
    assert json.loads(as_json.stdout) == {"stopped": True}
    assert fake.methods().count("daemon/shutdown") == 2


# -- tool commands -----------------------------------------------------------------------------

LOCATION = {"path": "src/m.py", "line": 3, "character": 5, "preview": "def f():"}


@pytest.mark.parametrize(
    ("argv", "tool", "arguments", "result", "stdout"),
    [
        (["hover", "src/m.py:3:5"], "get_hover_info", {}, {"signature": "def f() -> int"},
         "def f() -> int\n"),
        (["definition", "src/m.py:3:5"], "go_to_definition", {},
         {"status": "found", "definition": LOCATION}, "src/m.py:3:5: def f():\n"),
        (["references", "src/m.py:3:5"], "find_references", {"include_declaration": False},
         {"status": "found", "references": [LOCATION], "count": 1}, "src/m.py:3:5: def f():\n"),
        (["references", "--include-declaration", "src/m.py:3:5"], "find_references",
         {"include_declaration": True}, {"references": []}, ""),
        (["implementations", "src/m.py:3:5"], "find_implementations", {},
         {"implementations": [LOCATION]}, "src/m.py:3:5: def f():\n"),
        (["type-definition", "src/m.py:3:5"], "get_type_definition", {},
         {"type_definitions": [LOCATION]}, "src/m.py:3:5: def f():\n"),
        (["calls", "src/m.py:3:5"], "call_hierarchy", {"direction": "incoming"},
         {"calls": [dict(LOCATION, name="g")]}, "src/m.py:3:5: g: def f():\n"),
        (["calls", "--outgoing", "src/m.py:3:5"], "call_hierarchy", {"direction": "outgoing"},
         {"calls": []}, ""),
        (["rename", "src/m.py:3:5", "g"], "rename_symbol", {"new_name": "g", "apply": True},
         {"files_changed": 1, "edits": 2, "diff": "-f\n+g\n"}, "-f\n+g\n"),
        (["rename", "--dry-run", "src/m.py:3:5", "g"], "rename_symbol",
         {"new_name": "g", "apply": False}, {"files_changed": 1, "diff": ""}, ""),
    ],
)  # fmt: skip
def test_position_commands(
    argv: list[str],
    tool: str,
    arguments: dict[str, Any],
    result: dict[str, Any],
    stdout: str,
    repo: Path,
    sock_path: Path,
) -> None:
    with FakeDaemon(sock_path, responder({"tools/call": tool_replier({tool: result})})) as fake:
        human = run(["--socket", str(sock_path), *argv])
        as_json = run(["--socket", str(sock_path), "--json", *argv])
    assert human.code == 0, human.stderr
    assert human.stdout == stdout
    assert json.loads(as_json.stdout) == result
    call = tool_calls(fake)[0]
    expected = {"path": str(repo / "src" / "m.py"), "line": 3, "character": 5} | arguments
    assert call == {"name": tool, "arguments": expected}
    assert fake.requests("session/open")[0]["params"] == {"root": str(repo)}
    order = [m for m in fake.methods() if m != "$/cancelRequest"][:3]
    assert order == ["initialize", "session/open", "tools/call"]


def test_relative_paths_follow_the_working_directory(
    repo: Path, sock_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "src")
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir()
    script = responder({"tools/call": tool_replier({"get_hover_info": {}})})
    with FakeDaemon(sock_path, script) as fake:
        inside = run(["--socket", str(sock_path), "hover", "m.py:1:1"])
        monkeypatch.chdir(elsewhere)
        outside = run(["--socket", str(sock_path), "--root", str(repo), "hover", "src/m.py:1:1"])
        absolute = run(["--socket", str(sock_path), "--root", "../proj", "hover", "/abs/x.py:1:1"])
    assert inside.code == outside.code == absolute.code == 0
    assert "no hover information" in inside.stderr
    paths = [c["arguments"]["path"] for c in tool_calls(fake)]
    assert paths == [str(repo / "src" / "m.py"), str(repo / "src" / "m.py"), "/abs/x.py"]
    roots = [r["params"]["root"] for r in fake.requests("session/open")]
    assert roots == [str(repo)] * 3


def test_diagnostics_command(repo: Path, sock_path: Path) -> None:
    result = {
        "diagnostics": [{"file": "src/m.py", "line": 2, "column": 1, "severity": "error",
                         "message": "bad", "code": "E1"}],
        "count": 1, "truncated": False,
    }  # fmt: skip
    script = responder({"tools/call": tool_replier({"get_diagnostics": result})})
    with FakeDaemon(sock_path, script) as fake:
        one = run(["--socket", str(sock_path), "diagnostics", "src/m.py", "--severity", "error"])
        every = run(["--socket", str(sock_path), "diagnostics", "--limit", "5"])
    assert one.stdout == "src/m.py:2:1: error: bad [E1]\n"
    assert "1 diagnostic" in one.stderr
    assert every.code == 0
    calls = tool_calls(fake)
    assert calls[0]["arguments"] == {"path": str(repo / "src/m.py"), "severity": "error"}
    assert calls[1]["arguments"] == {"limit": 5}


def test_symbols_format_and_actions(repo: Path, sock_path: Path) -> None:
    results = {
        "get_symbols": {"symbols": [{"name": "f", "kind": "function", "line": 1, "character": 5}]},
        "format_code": {"changed": True, "diff": "-x=1\n+x = 1\n", "applied": True},
        "get_code_actions": {"actions": [{"index": 0, "title": "Fix", "kind": "quickfix"}]},
    }
    with FakeDaemon(sock_path, responder({"tools/call": tool_replier(results)})) as fake:
        doc = run(["--socket", str(sock_path), "symbols", "src/m.py"])
        ws = run(["--socket", str(sock_path), "symbols", "--workspace", "Foo", "--limit", "3"])
        fmt = run(["--socket", str(sock_path), "format", "src/m.py", "--lines", "2-4"])
        dry = run(["--socket", str(sock_path), "format", "--dry-run", "src/m.py"])
        acts = run(["--socket", str(sock_path), "actions", "src/m.py:4-6", "--kind", "quickfix"])
        apply = run(["--socket", str(sock_path), "actions", "src/m.py:4", "--apply", "1"])
        by_title = run(["--socket", str(sock_path), "actions", "src/m.py:4", "--apply", "Fix"])
    assert doc.stdout == "src/m.py:1:5: function f\n"
    assert ws.code == fmt.code == dry.code == apply.code == by_title.code == 0
    assert fmt.stdout == "-x=1\n+x = 1\n"
    assert acts.stdout == "[0] Fix (quickfix)\n"
    path = str(repo / "src/m.py")
    assert [c["arguments"] for c in tool_calls(fake)] == [
        {"scope": "document", "path": path},
        {"scope": "workspace", "query": "Foo", "limit": 3},
        {"path": path, "apply": True, "start_line": 2, "end_line": 4},
        {"path": path, "apply": False},
        {"path": path, "line": 4, "end_line": 6, "kinds": ["quickfix"]},
        {"path": path, "line": 4, "apply": 1},
        {"path": path, "line": 4, "apply": "Fix"},
    ]


def test_symbols_outline_flags(repo: Path, sock_path: Path) -> None:
    tree = {
        "symbols": [
            {
                "name": "C",
                "kind": "class",
                "line": 1,
                "character": 7,
                "children": [{"name": "m", "kind": "method", "line": 2, "character": 9}],
            }
        ]
    }
    with FakeDaemon(
        sock_path, responder({"tools/call": tool_replier({"get_symbols": tree})})
    ) as fake:
        out = run(["--socket", str(sock_path), "symbols", "src/m.py", "--all", "--depth", "2"])
        run(["--socket", str(sock_path), "symbols", "src/m.py", "--kind", "class,method"])
        run(["--socket", str(sock_path), "symbols", "--workspace", "C", "--kind", "class"])
        bad = run(["--socket", str(sock_path), "symbols", "src/m.py", "--depth", "two"])
    assert out.code == 0 and out.stdout == "src/m.py:1:7: class C\nsrc/m.py:2:9:   method m\n"
    assert bad.code == 2
    path = str(repo / "src/m.py")
    assert [c["arguments"] for c in tool_calls(fake)] == [
        {"scope": "document", "path": path, "all": True, "depth": 2},
        {"scope": "document", "path": path, "kinds": ["class", "method"]},
        {"scope": "workspace", "query": "C", "kinds": ["class"]},
    ]


def test_tool_error_exits_1_with_message_and_kind(repo: Path, sock_path: Path) -> None:
    error = (-32000, "The path is outside the project; give one inside it.",
             {"kind": "path_outside_project"})  # fmt: skip
    script = responder({"tools/call": tool_replier({"get_hover_info": error})})
    with FakeDaemon(sock_path, script):
        human = run(["--socket", str(sock_path), "hover", "../x.py:1:1"])
        as_json = run(["--socket", str(sock_path), "--json", "hover", "../x.py:1:1"])
    assert human.code == as_json.code == 1
    assert human.stderr == (
        "error: The path is outside the project; give one inside it. [path_outside_project]\n"
    )
    assert human.stdout == ""
    assert json.loads(as_json.stdout)["error"]["data"]["kind"] == "path_outside_project"


def test_rpc_error_exits_1(repo: Path, sock_path: Path) -> None:
    with FakeDaemon(sock_path, responder({"session/list": None})):
        result = run(["--socket", str(sock_path), "sessions"])
    assert result.code == 1
    assert "[code -32601]" in result.stderr


def test_timeout_exits_1(repo: Path, sock_path: Path) -> None:
    def never(peer: Peer, req: dict[str, Any]) -> None:
        peer.recv()  # the $/cancelRequest

    with FakeDaemon(sock_path, responder({"daemon/status": never})) as fake:
        result = run(["--socket", str(sock_path), "--timeout", "0.2", "status"])
    assert result.code == 1
    assert "within 0.2 s" in result.stderr
    assert "$/cancelRequest" in fake.methods()


def test_call_command(repo: Path, sock_path: Path) -> None:
    script = responder({"tools/call": tool_replier({"get_symbols": {"symbols": []}})})
    with FakeDaemon(sock_path, script) as fake:
        inline = run(["--socket", str(sock_path), "call", "get_symbols", '{"scope": "workspace"}'])
        piped = run(["--socket", str(sock_path), "call", "get_symbols", "-"], '{"query": "x"}')
        bare = run(["--socket", str(sock_path), "call", "get_symbols"])
    assert json.loads(inline.stdout) == {"symbols": []}
    assert piped.code == bare.code == 0
    assert [c["arguments"] for c in tool_calls(fake)] == [
        {"scope": "workspace"},
        {"query": "x"},
        {},
    ]


def test_lua_command(repo: Path, sock_path: Path, tmp_path: Path) -> None:
    def lua(peer: Peer, req: dict[str, Any]) -> None:
        params = req["params"]
        if "error(" in params["source"]:
            peer.error(req, -32000, "The script failed: boom.", {"kind": "lua_error"})
        else:
            peer.reply(req, {"result": {"args": params["args"]}})

    script_file = tmp_path / "s.lua"
    script_file.write_text("return {args = ...}")
    with FakeDaemon(sock_path, responder({"lua/eval": lua})) as fake:
        from_file = run(["--socket", str(sock_path), "lua", str(script_file), "a", "b"])
        from_stdin = run(["--socket", str(sock_path), "--json", "lua", "-"], "return 1")
        failing = run(["--socket", str(sock_path), "lua", "-"], "error('boom')")
    assert from_file.code == 0
    assert json.loads(from_file.stdout) == {"args": ["a", "b"]}
    assert json.loads(from_stdin.stdout) == {"result": {"args": []}}
    assert failing.code == 1 and "[lua_error]" in failing.stderr
    sources = [r["params"]["source"] for r in fake.requests("lua/eval")]
    assert sources == ["return {args = ...}", "return 1", "error('boom')"]


# -- git, confirmation and progress ---------------------------------------------------------------


def confirming_git(result: dict[str, Any]) -> Any:
    """A git_command that asks `client/confirm` when the client declared it, and reports
    the answer in the result (`approved`), as the daemon's policy would use it."""
    declared: dict[str, bool] = {}

    def initialize(peer: Peer, req: dict[str, Any]) -> None:
        declared["confirm"] = req["params"]["capabilities"]["confirm"]
        peer.reply(req, {"protocol_version": 1, "server": {"name": "codeward", "version": "0"},
                         "pid": 1})  # fmt: skip

    def call(peer: Peer, req: dict[str, Any]) -> None:
        if not declared.get("confirm"):
            peer.error(req, -32000, "This needs confirmation; pass --yes.",
                       {"kind": "confirmation_required"})  # fmt: skip
            return
        params = {"session_id": "s1", "tool": "git_command", "summary": "commit 1 file",
                  "argv": ["git", "commit", "-m", "a message"]}  # fmt: skip
        peer.send({"jsonrpc": "2.0", "id": 5, "method": "client/confirm", "params": params})
        answer = peer.recv()
        assert answer is not None and answer["id"] == 5
        if answer["result"]["approved"]:
            peer.reply(req, result)
        else:
            peer.error(req, -32000, "You declined.", {"kind": "confirmation_denied"})

    return responder({"initialize": initialize, "tools/call": call})


GIT_OK = {"exit_code": 0, "output": "[main 1234] a message", "stderr": "", "truncated": False}


def test_git_passes_args_verbatim_and_prints_git_output(repo: Path, sock_path: Path) -> None:
    result = {"exit_code": 0, "output": "M a.py\n", "stderr": "hint: x", "truncated": True,
              "parsed": {"files": []}}  # fmt: skip
    script = responder({"tools/call": tool_replier({"git_command": result})})
    with FakeDaemon(sock_path, script) as fake:
        human = run(["--socket", str(sock_path), "git", "diff", "--stat", "--", "a b.py"])
        as_json = run(["--json", "--socket", str(sock_path), "git", "--allow-destructive",
                       "reset", "--hard"])  # fmt: skip
    assert human.code == 0
    assert human.stdout == "M a.py\n"
    assert human.stderr == "hint: x\ncodeward: output truncated\n"
    assert json.loads(as_json.stdout) == result
    assert [c["arguments"] for c in tool_calls(fake)] == [
        {"subcommand": "diff", "args": ["--stat", "--", "a b.py"], "allow_destructive": False},
        {"subcommand": "reset", "args": ["--hard"], "allow_destructive": True},
    ]


def test_git_failure_exit_code_is_1(repo: Path, sock_path: Path) -> None:
    result = {"exit_code": 128, "output": "", "stderr": "fatal: bad revision", "truncated": False}
    script = responder({"tools/call": tool_replier({"git_command": result})})
    with FakeDaemon(sock_path, script):
        failed = run(["--socket", str(sock_path), "git", "show", "nope"])
    assert failed.code == 1
    assert failed.stderr == "fatal: bad revision\n"


def test_git_write_without_tty_or_yes_declares_no_confirm(repo: Path, sock_path: Path) -> None:
    with FakeDaemon(sock_path, confirming_git(GIT_OK)) as fake:
        result = run(["--socket", str(sock_path), "git", "commit", "-m", "a message"])
    assert result.code == 1
    assert "[confirmation_required]" in result.stderr
    assert fake.requests("initialize")[0]["params"]["capabilities"]["confirm"] is False


def test_git_yes_approves_without_asking(repo: Path, sock_path: Path) -> None:
    with FakeDaemon(sock_path, confirming_git(GIT_OK)):
        result = run(["--socket", str(sock_path), "git", "--yes", "commit", "-m", "a message"])
    assert result.code == 0, result.stderr
    assert result.stdout == "[main 1234] a message\n"
    assert "approved (--yes): git_command wants to run: git commit -m 'a message'" in result.stderr


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("yes\n", 0), ("n\n", 1), ("", 1)])
def test_git_on_a_tty_asks_y_n(answer: str, code: int, repo: Path, sock_path: Path) -> None:
    with FakeDaemon(sock_path, confirming_git(GIT_OK)):
        result = run(["--socket", str(sock_path), "git", "commit", "-m", "a message"], answer,
                     tty_in=True)  # fmt: skip
    assert result.code == code
    assert "git commit -m 'a message' (commit 1 file)\nAllow? [y/N] " in result.stderr
    if code:
        assert "[confirmation_denied]" in result.stderr


def test_progress_is_shown_on_a_terminal_only(repo: Path, sock_path: Path) -> None:
    def diags(peer: Peer, req: dict[str, Any]) -> None:
        for params in (
            {"server": "basedpyright", "kind": "begin", "title": "Indexing", "percentage": 0},
            {"server": "basedpyright", "kind": "end"},
        ):
            peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": params})
        peer.reply(req, {"diagnostics": [], "count": 0})

    with FakeDaemon(sock_path, responder({"tools/call": diags})) as fake:
        tty = run(["--socket", str(sock_path), "diagnostics"], tty_err=True)
        piped = run(["--socket", str(sock_path), "diagnostics"])
        as_json = run(["--socket", str(sock_path), "--json", "diagnostics"], tty_err=True)
    assert "codeward: basedpyright: Indexing (0%)\ncodeward: basedpyright: done\n" in tty.stderr
    assert "basedpyright" not in piped.stderr and "basedpyright" not in as_json.stderr
    declared = [r["params"]["capabilities"]["progress"] for r in fake.requests("initialize")]
    assert declared == [True, False, False]


def test_daemon_command_runs_the_daemon_main_lazily(
    monkeypatch: pytest.MonkeyPatch, sock_path: Path
) -> None:
    import sys
    import types

    seen: list[list[str]] = []
    fake = types.ModuleType("codeward.daemon.main")
    fake.main = lambda argv=None: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "codeward.daemon.main", fake)
    assert main(["--socket", str(sock_path), "daemon", "--log-level", "debug"]) == 7
    assert main(["daemon", "--config", "/c.toml"]) == 7
    assert seen == [["--socket", str(sock_path), "--log-level", "debug"], ["--config", "/c.toml"]]


def test_broken_pipe_is_quiet(repo: Path, sock_path: Path, tmp_path: Path) -> None:
    target = open(tmp_path / "out", "w")  # noqa: SIM115

    class Closed(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError

        def fileno(self) -> int:
            return target.fileno()

    with FakeDaemon(sock_path, responder({"session/list": {"sessions": []}})):
        code = main(["--socket", str(sock_path), "sessions"], stdin=io.StringIO(),
                    stdout=Closed(), stderr=io.StringIO())  # fmt: skip
    target.close()
    assert code == 141


def test_describe_confirmations() -> None:
    argv = ["git", "add", "a b.py"]
    assert describe_confirmation(
        {"tool": "git_command", "argv": argv, "summary": "git add 'a b.py' (write)"}
    ) == ("git_command wants to run: git add 'a b.py' (write)")
    assert describe_confirmation(
        {"tool": "git_command", "argv": argv, "summary": "stage 1 file"}
    ) == ("git_command wants to run: git add 'a b.py' (stage 1 file)")
    assert describe_confirmation({"tool": "t", "argv": argv}) == "t wants to run: git add 'a b.py'"
    assert describe_confirmation({"summary": "do it?"}) == "do it?"
    assert describe_confirmation({}) == "the daemon asks for approval"


def test_the_command_table_matches_the_parser() -> None:
    full = build_parser()
    (subparsers,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    assert tuple(subparsers.choices) == COMMANDS
    (only,) = [
        a for a in build_parser("hover")._actions if isinstance(a, argparse._SubParsersAction)
    ]
    assert tuple(only.choices) == ("hover",)


def test_session_open_failure_exits_1(repo: Path, sock_path: Path) -> None:
    def refuse(peer: Peer, req: dict[str, Any]) -> None:
        peer.error(req, -32602, "Invalid params for session/open: give `root`.")

    with FakeDaemon(sock_path, responder({"session/open": refuse})) as fake:
        result = run(["--socket", str(sock_path), "hover", "a.py:1:1"])
    assert result.code == 1
    assert "[code -32602]" in result.stderr
    assert "tools/call" not in fake.methods()


def test_a_result_that_is_not_an_object_is_a_protocol_fault(repo: Path, sock_path: Path) -> None:
    script = responder({"tools/call": tool_replier({"git_command": "just text"})})
    with FakeDaemon(sock_path, script):
        result = run(["--socket", str(sock_path), "git", "status"])
    assert result.code == 3
    assert "not an object" in result.stderr


def test_stop_when_the_daemon_hangs_up_or_lingers(
    repo: Path, sock_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hang_up(peer: Peer, req: dict[str, Any]) -> None:
        peer.close()  # stopping before its reply was written

    with FakeDaemon(sock_path, responder({"daemon/shutdown": hang_up})):
        hung_up = run(["--socket", str(sock_path), "stop"])
    assert hung_up.code == 0 and "daemon stopped" in hung_up.stderr
    monkeypatch.setattr(daemon_commands, "STOP_TIMEOUT", 0.05)
    with FakeDaemon(sock_path.with_name("b.sock"), responder({"daemon/shutdown": {}})):
        lingering = run(["--socket", str(sock_path.with_name("b.sock")), "stop"])
    assert lingering.code == 0
    assert "still stopping" in lingering.stderr


def test_interrupt_exits_130(repo: Path, sock_path: Path) -> None:
    class Interrupting(Tty):
        def write(self, s: str) -> int:
            if "Indexing" in s:
                raise KeyboardInterrupt
            return super().write(s)

    def diags(peer: Peer, req: dict[str, Any]) -> None:
        params = {"server": "basedpyright", "kind": "begin", "title": "Indexing"}
        peer.send({"jsonrpc": "2.0", "method": "$/progress", "params": params})
        assert peer.recv() == {"jsonrpc": "2.0", "method": "$/cancelRequest",
                               "params": {"id": req["id"]}}  # fmt: skip

    with FakeDaemon(sock_path, responder({"tools/call": diags})) as fake:
        code = main(["--socket", str(sock_path), "diagnostics"], stdin=io.StringIO(),
                    stdout=io.StringIO(), stderr=Interrupting())  # fmt: skip
    assert code == 130
    assert "$/cancelRequest" in fake.methods()
