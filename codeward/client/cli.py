"""The `codeward` command line: the thin client of the daemon (README.md, "CLI").

Exit codes: 0 ok, 1 tool error (any error reply from the daemon, a git command that
failed, a timed-out request), 2 usage, 3 daemon unreachable (or gone mid-request).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO

from codeward import __version__
from codeward.client import autostart, gitargs
from codeward.client.connection import (
    ConfirmHandler,
    Connection,
    ConnectionLost,
    DaemonUnreachable,
    ProgressHandler,
    RemoteError,
    RequestTimeout,
)
from codeward.client.root import project_root
from codeward.protocol import render
from codeward.protocol.socket_path import socket_path

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
DEFAULT_TIMEOUT = 600.0
STOP_TIMEOUT = 30.0


class UsageError(Exception):
    """Bad command-line input: exit 2."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


class Invocation:
    """One run of the CLI: parsed arguments, streams, and how to reach the daemon."""

    def __init__(
        self,
        args: argparse.Namespace,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        cwd: Path | None = None,
    ) -> None:
        self.args = args
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.cwd = Path.cwd() if cwd is None else cwd
        self.json: bool = bool(args.json)
        self.socket = socket_path(args.socket)
        self.autostart: bool = not args.no_autostart
        self.timeout: float | None = args.timeout if args.timeout > 0 else None
        self._root: Path | None = None
        self._told_restricted = False  # the restricted remark is made once per command

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = project_root(self.args.root, self.cwd)
        return self._root

    def input_path(self, path: str) -> str:
        """An absolute path for the daemon: relative paths are taken from the working
        directory when it is inside the root, else from the root."""
        given = Path(path).expanduser()
        if given.is_absolute():
            return os.path.normpath(given)
        base = self.cwd if self.cwd.is_relative_to(self.root) else self.root
        return os.path.normpath(base / given)

    # -- the daemon ------------------------------------------------------------------------

    def connect(self, *, session: bool, confirm: bool = False) -> Connection:
        """A connection that said `initialize` (and `session/open` when `session`)."""
        sock = autostart.connect(self.socket, autostart=self.autostart)
        conn = Connection(
            sock,
            on_confirm=self.confirm_handler() if confirm else None,
            on_progress=self.progress_handler(),
        )
        try:
            conn.initialize()
            if session:
                conn.request("session/open", {"root": str(self.root)}, timeout=self.timeout)
        except BaseException:
            conn.close()
            raise
        return conn

    def request(self, method: str, params: Any = None, *, session: bool = False) -> Any:
        with self.connect(session=session) as conn:
            return conn.request(method, params, timeout=self.timeout)

    def tool(
        self, name: str, arguments: dict[str, Any], *, confirm: bool = False
    ) -> dict[str, Any]:
        """`tools/call` on a session of the root; a tool's result is always an object."""
        with self.connect(session=True, confirm=confirm) as conn:
            result = conn.request(
                "tools/call", {"name": name, "arguments": arguments}, timeout=self.timeout
            )
        if not isinstance(result, dict):
            raise ConnectionLost(f"The daemon answered {name} with something not an object.")
        return result

    def confirm_handler(self) -> ConfirmHandler | None:
        """Approve with `--yes`; ask y/N when stdin is a terminal; else declare nothing."""
        if self.args.yes:
            return self._approve
        if self.stdin.isatty():
            return self._ask
        return None

    def _approve(self, params: dict[str, Any]) -> bool:
        self.note(f"approved (--yes): {_describe(params)}")
        return True

    def _ask(self, params: dict[str, Any]) -> bool:
        self.stderr.write(f"codeward: {_describe(params)}\nAllow? [y/N] ")
        self.stderr.flush()
        answer = self.stdin.readline()
        return answer.strip().lower() in ("y", "yes")

    def progress_handler(self) -> ProgressHandler | None:
        """Language-server progress on stderr, for a person at a terminal."""
        if self.json or not self.stderr.isatty():
            return None
        return self._progress

    def _progress(self, params: dict[str, Any]) -> None:
        parts = [str(params[k]) for k in ("title", "message") if params.get(k)]
        if isinstance(params.get("percentage"), int):
            parts.append(f"({params['percentage']}%)")
        if params.get("kind") == "end":
            parts.append("done")
        self.note(f"{params.get('server', 'server')}: {' '.join(parts)}")

    # -- output ----------------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.stderr.write(f"codeward: {text}\n")
        self.stderr.flush()

    def show(self, command: str, result: Any, lines: Callable[[dict[str, Any]], list[str]]) -> None:
        """The whole result as JSON with `--json`, else its human lines and remarks."""
        if self.json:
            self.stdout.write(render.to_json(result) + "\n")
            return
        result = result if isinstance(result, dict) else {"result": result}
        for line in lines(result):
            self.stdout.write(line + "\n")
        self.stdout.flush()
        for remark in render.notes(command, result):
            if remark == render.RESTRICTED:
                remark = self._restricted(result)
            if remark:
                self.note(remark)

    def _restricted(self, result: dict[str, Any]) -> str:
        """The restricted remark, once: when the restriction affected the answer (what it
        took from the servers asked), or with `--verbose`; else nothing."""
        effects = result.get("restricted_effects")
        if self._told_restricted or not (effects or self.args.verbose):
            return ""
        self._told_restricted = True
        return render.restricted_remark(effects if isinstance(effects, dict) else {})


def _describe(params: dict[str, Any]) -> str:
    import shlex

    argv = params.get("argv")
    command = shlex.join(str(a) for a in argv) if isinstance(argv, list) else ""
    summary = str(params.get("summary") or "")
    if not command:  # a file write: its summary names the files
        tool = params.get("tool")
        return (f"{tool}: {summary}" if tool else summary) or "the daemon asks for approval"
    head = f"{params.get('tool', 'a tool')} wants to run: "
    if summary.startswith(command) or not summary:  # the summary already shows the command
        return head + (summary or command)
    return f"{head}{command} ({summary})"


# -- argument parsing -----------------------------------------------------------------------


def _position(spec: str, count: int) -> tuple[str, list[int]]:
    """`PATH:LINE:COL` (count 2) or `PATH:LINE` (count 1): the path and 1-based numbers."""
    shape = "PATH:LINE:COL" if count == 2 else "PATH:LINE"
    pieces = spec.rsplit(":", count)
    if len(pieces) != count + 1 or not pieces[0]:
        raise UsageError(f"expected {shape}, got {spec!r}")
    try:
        numbers = [int(piece) for piece in pieces[1:]]
    except ValueError:
        raise UsageError(f"expected {shape} with whole numbers, got {spec!r}") from None
    if any(n < 1 for n in numbers):
        raise UsageError(f"lines and columns count from 1, got {spec!r}")
    return pieces[0], numbers


POSITION = "PATH:LINE:COL|PATH:LINE:NAME|PATH:SYMBOL|SYMBOL"
POSITION_HELP = (
    "a line and column, a line and the identifier on it, or a name path (Class.method) in "
    "a file or across the project"
)
_VALUE_OPTIONS = frozenset({"--root", "--socket", "--timeout"})


def _command_index(argv: list[str], start: int) -> int:
    """Index of the first positional token at or after `start` (options skipped)."""
    i = start
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        i += 2 if argv[i] in _VALUE_OPTIONS else 1
    return i


def _split_git(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """Split `... git [OPTIONS] SUBCOMMAND ARGS...` before ARGS, which go to git verbatim
    (argparse would drop a `--`, which git needs)."""
    i = _command_index(argv, 0)
    if i >= len(argv) or argv[i] != "git":
        return argv, None
    j = _command_index(argv, i + 1)
    if j >= len(argv):
        return argv, None
    return argv[: j + 1], argv[j + 1 :]


def _json_object(text: str) -> dict[str, Any]:
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError('the arguments must be a JSON object, such as \'{"path": "a.py"}\'')
    return value


def _add_globals(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The global options, accepted before or after the command (`--json status`,
    `status --json`); on subcommands they default to SUPPRESS so they never reset them."""

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("global options")
    group.add_argument(
        "--json", action="store_true", default=default(False), help="print the whole result as JSON"
    )
    group.add_argument(
        "--root",
        default=default(None),
        help="project root (default: the git top level, else the working dir)",
    )
    group.add_argument("--socket", default=default(None), help="the daemon's socket path")
    group.add_argument(
        "--no-autostart",
        action="store_true",
        default=default(False),
        help="fail (exit 3) instead of starting a daemon when none answers",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=default(DEFAULT_TIMEOUT),
        metavar="SECONDS",
        help="give up on a request after this long (0: never)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help="remark on stderr whatever applies (e.g. that the root's servers run restricted)",
    )
    group.add_argument(
        "-y",
        "--yes",
        action="store_true",
        default=default(False),
        help="approve every confirmation the daemon asks for",
    )


COMMANDS = (
    "daemon", "status", "stop", "sessions", "tools", "call", "git", "lua", "diagnostics",
    "hover", "definition", "references", "implementations", "type-definition", "symbols",
    "calls", "types", "signature", "format", "actions", "rename", "review", "edit",
    "edit-symbol", "move", "mcp", "lsp", "trust", "servers",
)  # fmt: skip


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (faster: start-up time) of the command `only`."""
    parser = _Parser(
        prog="codeward",
        description="Safe git, warm language servers and a Lua sandbox, through one daemon.",
    )
    parser.add_argument("--version", action="version", version=f"codeward {__version__}")
    _add_globals(parser, top=True)
    common = _Parser(add_help=False)
    _add_globals(common, top=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    sink = _Parser(add_help=False, conflict_handler="resolve")  # takes the skipped commands

    def command(name: str, func: Callable[[Invocation], int], help: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return sink
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=func, usage=sub.format_usage)
        return sub

    daemon = command("daemon", cmd_daemon, "run the daemon in the foreground")
    daemon.add_argument("--config", help="config file (default: $XDG_CONFIG_HOME/codeward/...)")
    daemon.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR")
    command("status", cmd_status, "show the daemon's status")
    command("stop", cmd_stop, "stop the daemon (gracefully)")
    sessions = command("sessions", cmd_sessions, "list (or close) sessions and their servers")
    sessions.add_argument("action", metavar="close", nargs="?", choices=["close"])
    sessions.add_argument(
        "target", metavar="ROOT", nargs="?", help="the root whose session to close"
    )
    sessions.add_argument("--all", action="store_true", help="close every session")
    tools = command("tools", cmd_tools, "list the tools")
    tools.add_argument(
        "--format",
        choices=["native", "openai", "anthropic", "mcp"],
        default="native",
        help="tool schema format (non-native print as JSON)",
    )
    tools.add_argument(
        "--strict", action="store_true", help="openai: schemas for strict function calling"
    )
    call = command("call", cmd_call, "call a tool with JSON arguments")
    call.add_argument("name", metavar="TOOL")
    call.add_argument(
        "arguments",
        metavar="JSON",
        nargs="?",
        default="{}",
        help="a JSON object ('-': read it from stdin)",
    )
    git = command("git", cmd_git, "run a git command through the daemon's policy")
    git.add_argument(
        "--allow-destructive",
        action="store_true",
        help="allow a destructive command (it still needs approval)",
    )
    git.add_argument("subcommand", metavar="SUBCOMMAND")
    git.add_argument(
        "git_args",
        metavar="ARGS",
        nargs=argparse.REMAINDER,
        help="passed to git, paths made relative to the root; --allow-destructive, --yes "
        "and --json may come after SUBCOMMAND too (before a `--`)",
    )
    lua = command("lua", cmd_lua, "run a Lua script in the session's sandbox")
    lua.add_argument("file", metavar="FILE", help="the script ('-': read it from stdin)")
    lua.add_argument("script_args", metavar="ARGS", nargs="*", help="the script's args")
    diags = command("diagnostics", cmd_diagnostics, "diagnostics of a file, or of the project")
    diags.add_argument("path", metavar="PATH", nargs="?")
    diags.add_argument("--severity", choices=["error", "warning", "information", "hint"])
    diags.add_argument("--limit", type=int)
    diags.add_argument(
        "--since",
        metavar="HASH|REV",
        help="only what changed since this content_hash of the file, or since a git revision "
        "(HEAD, a branch, merge-base:main): the delta of every file the change touched",
    )
    for name, func, help_text in _POSITION_COMMANDS:
        sub = command(name, func, help_text)
        sub.add_argument("position", metavar=POSITION, help=POSITION_HELP)
        if name == "references":
            sub.add_argument(
                "--include-declaration",
                action="store_true",
                help="also list the declaration site(s)",
            )
    symbols = command("symbols", cmd_symbols, "symbols of a file, or workspace symbols")
    symbols.add_argument("target", metavar="PATH|QUERY", nargs="?")
    symbols.add_argument("--workspace", action="store_true", help="search the workspace")
    symbols.add_argument("--language", help="--workspace: search this language's servers only")
    symbols.add_argument("--limit", type=int)
    symbols.add_argument(
        "--all", action="store_true", help="every symbol, parameters and local variables too"
    )
    symbols.add_argument(
        "--kind",
        action="append",
        dest="kinds",
        metavar="KIND",
        help="only symbols of this kind (class, function, method, variable...); repeatable",
    )
    symbols.add_argument("--depth", type=int, help="levels of a file's tree to show (1: top)")
    calls = command("calls", cmd_calls, "callers (default) or callees of a function")
    calls.add_argument("position", metavar=POSITION, help=POSITION_HELP)
    direction = calls.add_mutually_exclusive_group()
    direction.add_argument(
        "--incoming",
        dest="direction",
        action="store_const",
        const="incoming",
        default="incoming",
        help="callers (default)",
    )
    direction.add_argument(
        "--outgoing", dest="direction", action="store_const", const="outgoing", help="callees"
    )
    types = command("types", cmd_types, "supertypes (default) or subtypes of a type")
    types.add_argument("position", metavar=POSITION, help=POSITION_HELP)
    way = types.add_mutually_exclusive_group()
    way.add_argument(
        "--supertypes",
        dest="direction",
        action="store_const",
        const="supertypes",
        default="supertypes",
        help="what it extends or implements (default)",
    )
    way.add_argument(
        "--subtypes",
        dest="direction",
        action="store_const",
        const="subtypes",
        help="what extends or implements it",
    )
    signature = command("signature", cmd_signature, "the signature of the call at a position")
    signature.add_argument("position", metavar="PATH:LINE:COL")
    fmt = command("format", cmd_format, "format a file (or some of its lines)")
    fmt.add_argument("path", metavar="PATH")
    fmt.add_argument("--lines", metavar="START-END", help="only these lines")
    fmt.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    actions = command("actions", cmd_actions, "list (or apply) code actions at a line")
    actions.add_argument("position", metavar="PATH:LINE[-END]")
    actions.add_argument(
        "--kind",
        action="append",
        dest="kinds",
        metavar="KIND",
        help="only actions of this kind (repeatable)",
    )
    actions.add_argument("--apply", metavar="INDEX|TITLE", help="apply this action")
    rename = command("rename", cmd_rename, "rename a symbol across the project")
    rename.add_argument("position", metavar=POSITION, help=POSITION_HELP)
    rename.add_argument("new_name", metavar="NEW")
    rename.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    review = command(
        "review",
        cmd_review,
        "the working tree's change against a revision: files, symbols, who uses them, diagnostics",
    )
    review.add_argument(
        "revision", metavar="REV", nargs="?", default="HEAD", help="HEAD, a branch, merge-base:main"
    )
    review.add_argument("--path", metavar="PATH", help="only the change below this folder")
    edit = command("edit", cmd_edit, "write a file's new content (read from stdin), checked")
    edit.add_argument("path", metavar="PATH")
    edit.add_argument(
        "--mode",
        choices=["apply", "preview", "safe"],
        default="apply",
        help="apply (write), preview (write nothing), safe (write if it breaks nothing)",
    )
    edit.add_argument("--expected-hash", metavar="HASH", help="fail if the file changed")
    edit.add_argument("--create", action="store_true", help="allow creating the file")
    edit.add_argument(
        "--severity",
        choices=["error", "warning", "information", "hint"],
        help="with --mode safe: the least severe introduced level that refuses",
    )
    edit_symbol = command(
        "edit-symbol", cmd_edit_symbol, "edit a definition by its name path (text from stdin)"
    )
    edit_symbol.add_argument("path", metavar="PATH")
    edit_symbol.add_argument("symbol", metavar="SYMBOL", help="a name path: Class.method, main")
    edit_symbol.add_argument(
        "action", metavar="ACTION", choices=["replace_body", "replace", "insert_before",
        "insert_after"], help="replace_body, replace, insert_before or insert_after",
    )  # fmt: skip
    edit_symbol.add_argument("--text", help="the new text (else read from stdin)")
    edit_symbol.add_argument(
        "--mode",
        choices=["apply", "preview", "safe"],
        default="apply",
        help="apply (write), preview (write nothing), safe (write if it breaks nothing)",
    )
    edit_symbol.add_argument("--expected-hash", metavar="HASH", help="fail if the file changed")
    move = command("move", cmd_move, "move or rename a file, its references updated")
    move.add_argument("path", metavar="PATH")
    move.add_argument("new_path", metavar="NEW_PATH")
    move.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    move.add_argument(
        "--force",
        action="store_true",
        help="move even when a language server cannot update the references",
    )
    command("mcp", cmd_mcp, "serve MCP on stdio, bridged to the daemon")
    command("lsp", cmd_lsp, "serve LSP on stdio for an editor, bridged to the daemon")
    trust = command(
        "trust",
        cmd_trust,
        "trust a root, so that its language servers may run project code (list, revoke)",
    )
    trust.add_argument("target", metavar="ROOT", nargs="?", help="default: the --root")
    which = trust.add_mutually_exclusive_group()
    which.add_argument("--list", action="store_true", help="list the trusted roots")
    which.add_argument("--revoke", action="store_true", help="stop trusting ROOT")
    servers = command(
        "servers", cmd_servers, "list the known language servers, or install some (no daemon)"
    )
    servers.add_argument("action", metavar="install", nargs="?", choices=["install"])
    servers.add_argument("names", metavar="NAME", nargs="*", help="servers to install")
    return parser


# -- commands ---------------------------------------------------------------------------------


def cmd_daemon(inv: Invocation) -> int:
    from codeward.daemon.main import main as daemon_main

    argv: list[str] = []
    for flag, value in (
        ("--socket", inv.args.socket),
        ("--config", inv.args.config),
        ("--log-level", inv.args.log_level),
    ):
        if value:
            argv += [flag, value]
    return daemon_main(argv)


def cmd_status(inv: Invocation) -> int:
    inv.show("status", inv.request("daemon/status"), render.status)
    return EXIT_OK


def cmd_stop(inv: Invocation) -> int:
    sock = autostart.try_connect(inv.socket)
    if sock is None:
        inv.note("no daemon is running")
        return EXIT_OK
    with Connection(sock) as conn:
        try:
            conn.request("daemon/shutdown", {}, timeout=inv.timeout)
            stopped = conn.wait_closed(STOP_TIMEOUT)
        except ConnectionLost:  # it hung up before its reply reached us: it is stopping
            stopped = True
    if inv.json:
        inv.stdout.write(render.to_json({"stopped": stopped}) + "\n")
    elif not stopped:
        inv.note(f"the daemon is still stopping after {STOP_TIMEOUT:g} s")
    else:
        inv.note("daemon stopped")
    return EXIT_OK


def cmd_sessions(inv: Invocation) -> int:
    """`sessions`: list them; `sessions close ROOT|--all`: stop them and their servers."""
    if inv.args.action is None:
        if inv.args.target or inv.args.all:
            raise UsageError("give `close` before ROOT or --all")
        inv.show("sessions", inv.request("session/list"), render.sessions)
        return EXIT_OK
    if bool(inv.args.target) == bool(inv.args.all):
        raise UsageError("give either ROOT or --all to `sessions close`")
    wanted = None if inv.args.all else os.path.realpath(inv.cwd / inv.args.target)
    closed: list[str] = []
    with inv.connect(session=False) as conn:
        listed = conn.request("session/list", timeout=inv.timeout)
        for session in listed.get("sessions", []) if isinstance(listed, dict) else []:
            if wanted is not None and session.get("root") != wanted:
                continue
            try:
                conn.request("session/open", {"session_id": session["id"]}, timeout=inv.timeout)
            except RemoteError as exc:
                if exc.kind == "session_not_found":  # it stopped meanwhile
                    continue
                raise
            conn.request("session/close", {"terminate": True}, timeout=inv.timeout)
            closed.append(str(session["root"]))
    if inv.json:
        inv.stdout.write(render.to_json({"closed": closed}) + "\n")
    for root in [] if inv.json else closed:
        inv.stdout.write(f"closed {root}\n")
    if wanted is not None and not closed:
        _error(
            inv,
            inv.stderr,
            f"No session is open for {inv.args.target}; `codeward sessions` lists them.",
        )
        return EXIT_TOOL_ERROR
    if not closed:
        inv.note("no sessions")
    return EXIT_OK


def cmd_tools(inv: Invocation) -> int:
    params: dict[str, Any] = {"format": inv.args.format}
    if inv.args.strict:
        params["strict"] = True
    result = inv.request("tools/list", params)
    if inv.args.format != "native" and not inv.json:
        inv.stdout.write(render.to_json(result) + "\n")
        return EXIT_OK
    inv.show("tools", result, render.tools)
    return EXIT_OK


def _read(inv: Invocation, name: str, what: str) -> str:
    if name == "-":
        return inv.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the {what} {name!r}: {exc}") from None


def cmd_call(inv: Invocation) -> int:
    text = _read(inv, "-", "arguments") if inv.args.arguments == "-" else inv.args.arguments
    arguments = _json_object(text)
    result = inv.tool(inv.args.name, arguments, confirm=True)
    inv.stdout.write(render.to_json(result) + "\n")
    return EXIT_OK


def cmd_git(inv: Invocation) -> int:
    """Git's own output on stdout and stderr; exit 1 when git failed."""
    subcommand = inv.args.subcommand
    arguments = {
        "subcommand": subcommand,
        "args": gitargs.root_relative(subcommand, inv.args.git_args, inv.cwd, inv.root),
        "allow_destructive": inv.args.allow_destructive,
    }
    try:
        result = inv.tool("git_command", arguments, confirm=True)
    except RemoteError as exc:  # the daemon's hint names the API's argument: give the flag
        if exc.kind == "blocked_destructive":
            exc.message = exc.message.replace("allow_destructive: true", "--allow-destructive")
        raise
    if inv.json:
        inv.stdout.write(render.to_json(result) + "\n")
    else:
        output, errors = str(result.get("output") or ""), str(result.get("stderr") or "")
        inv.stdout.write(output if not output or output.endswith("\n") else output + "\n")
        inv.stdout.flush()
        inv.stderr.write(errors if not errors or errors.endswith("\n") else errors + "\n")
        if result.get("truncated"):
            inv.note("output truncated")
    exit_code = result.get("exit_code")
    return EXIT_OK if exit_code in (0, None) else EXIT_TOOL_ERROR


def cmd_lua(inv: Invocation) -> int:
    source = _read(inv, inv.args.file, "script")
    params = {"source": source, "args": list(inv.args.script_args)}
    with inv.connect(session=True, confirm=True) as conn:
        try:
            result = conn.request("lua/eval", params, timeout=inv.timeout)
        except RemoteError as exc:  # what the script logged before it failed
            if isinstance(exc.data, dict):
                _print_logs(inv, exc.data.get("logs"))
            raise
    if isinstance(result, dict):
        _print_logs(inv, result.get("logs"))
    inv.show("lua", result, render.lua)
    return EXIT_OK


def _print_logs(inv: Invocation, logs: Any) -> None:
    """A script's `codeward.log` lines on stderr (they are in the result with `--json`)."""
    if inv.json or not isinstance(logs, list):
        return
    for line in logs:
        inv.stderr.write(f"{line}\n")
    inv.stderr.flush()


def cmd_diagnostics(inv: Invocation) -> int:
    arguments: dict[str, Any] = {}
    if inv.args.path:
        arguments["path"] = inv.input_path(inv.args.path)
    if inv.args.severity:
        arguments["severity"] = inv.args.severity
    if inv.args.limit is not None:
        arguments["limit"] = inv.args.limit
    if inv.args.since:
        arguments["since"] = inv.args.since
    inv.show("diagnostics", inv.tool("get_diagnostics", arguments), render.diagnostics)
    return EXIT_OK


def _at(inv: Invocation, spec: str) -> dict[str, Any]:
    """`PATH:LINE:COL`, `PATH:LINE:NAME` (the identifier on the line), `PATH:SYMBOL` (a name
    path in the file) or `SYMBOL` (a name path across the project)."""
    if ":" not in spec:
        return {"symbol": spec}
    pieces = spec.rsplit(":", 2)
    if len(pieces) == 3 and pieces[1].isdigit() and not pieces[2].isdigit():
        path, (line,) = _position(f"{pieces[0]}:{pieces[1]}", 1)
        return {"path": inv.input_path(path), "line": line, "name": pieces[2]}
    if not pieces[-1].isdigit() and not (len(pieces) > 1 and pieces[-2].isdigit()):
        path, _, symbol = spec.partition(":")
        if path and symbol:
            return {"path": inv.input_path(path), "symbol": symbol}
    path, (line, character) = _position(spec, 2)
    return {"path": inv.input_path(path), "line": line, "character": character}


def _position_command(
    command: str, tool: str, lines: Callable[[dict[str, Any]], list[str]]
) -> Callable[[Invocation], int]:
    def run(inv: Invocation) -> int:
        arguments = _at(inv, inv.args.position)
        if command == "references":
            arguments["include_declaration"] = inv.args.include_declaration
        inv.show(command, inv.tool(tool, arguments), lines)
        return EXIT_OK

    run.__name__ = f"cmd_{command.replace('-', '_')}"
    return run


_POSITION_COMMANDS: list[tuple[str, Callable[[Invocation], int], str]] = [
    (
        "hover",
        _position_command("hover", "get_hover_info", render.hover),
        "type and docs of the symbol at a position",
    ),
    (
        "definition",
        _position_command("definition", "go_to_definition", render.definition),
        "where the symbol at a position is defined",
    ),
    (
        "references",
        _position_command("references", "find_references", render.references),
        "references to the symbol at a position",
    ),
    (
        "implementations",
        _position_command("implementations", "find_implementations", render.implementations),
        "implementations of the interface or method at a position",
    ),
    (
        "type-definition",
        _position_command("type-definition", "get_type_definition", render.type_definition),
        "where the type of the symbol at a position is defined",
    ),
]


def cmd_symbols(inv: Invocation) -> int:
    arguments: dict[str, Any]
    path: str | None = None
    if inv.args.workspace:
        arguments = {"scope": "workspace", "query": inv.args.target or ""}
        if inv.args.language is not None:
            arguments["language"] = inv.args.language
    else:
        if not inv.args.target:
            raise UsageError("give a PATH, or --workspace QUERY")
        path = inv.args.target
        arguments = {"scope": "document", "path": inv.input_path(inv.args.target)}
    if inv.args.limit is not None:
        arguments["limit"] = inv.args.limit
    if inv.args.all:
        arguments["all"] = True
    if inv.args.kinds:
        arguments["kinds"] = [k for item in inv.args.kinds for k in item.split(",") if k]
    if inv.args.depth is not None:
        arguments["depth"] = inv.args.depth
    result = inv.tool("get_symbols", arguments)
    inv.show("symbols", result, lambda r: render.symbols(r, r.get("path") or path))
    return EXIT_OK


def cmd_calls(inv: Invocation) -> int:
    arguments = _at(inv, inv.args.position) | {"direction": inv.args.direction}
    inv.show("calls", inv.tool("call_hierarchy", arguments), render.calls)
    return EXIT_OK


def cmd_types(inv: Invocation) -> int:
    arguments = _at(inv, inv.args.position) | {"direction": inv.args.direction}
    inv.show("types", inv.tool("type_hierarchy", arguments), render.types)
    return EXIT_OK


def cmd_signature(inv: Invocation) -> int:
    path, (line, character) = _position(inv.args.position, 2)  # a place inside a call, as is
    arguments = {"path": inv.input_path(path), "line": line, "character": character}
    inv.show("signature", inv.tool("signature_help", arguments), render.signatures)
    return EXIT_OK


def cmd_format(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "apply": not inv.args.dry_run,
    }
    if inv.args.lines:
        start, sep, end = inv.args.lines.partition("-")
        if not (start.isdigit() and end.isdigit() and sep) or not 1 <= int(start) <= int(end):
            raise UsageError(f"--lines wants START-END, such as 3-10, got {inv.args.lines!r}")
        arguments |= {"start_line": int(start), "end_line": int(end)}
    inv.show("format", inv.tool("format_code", arguments, confirm=True), render.edit)
    return EXIT_OK


def cmd_actions(inv: Invocation) -> int:
    spec = inv.args.position
    path, _, lines = spec.rpartition(":")
    start, _, end = lines.partition("-")
    _, (line,) = _position(f"{path}:{start}", 1)
    arguments: dict[str, Any] = {"path": inv.input_path(path), "line": line}
    if end:
        _, (end_line,) = _position(f"{path}:{end}", 1)
        if end_line < line:
            raise UsageError(f"the end line comes before the start line in {spec!r}")
        arguments["end_line"] = end_line
    if inv.args.kinds:
        arguments["kinds"] = inv.args.kinds
    if inv.args.apply is not None:
        choice = inv.args.apply
        arguments["apply"] = int(choice) if choice.isdigit() else choice
    inv.show("actions", inv.tool("get_code_actions", arguments, confirm=True), render.actions)
    return EXIT_OK


def cmd_review(inv: Invocation) -> int:
    arguments: dict[str, Any] = {"since": inv.args.revision}
    if inv.args.path:
        arguments["path"] = inv.input_path(inv.args.path)
    inv.show("review", inv.tool("review_changes", arguments), render.review)
    return EXIT_OK


def cmd_rename(inv: Invocation) -> int:
    if not inv.args.new_name:
        raise UsageError("the new name is empty")
    arguments = _at(inv, inv.args.position) | {
        "new_name": inv.args.new_name,
        "apply": not inv.args.dry_run,
    }
    inv.show("rename", inv.tool("rename_symbol", arguments, confirm=True), render.edit)
    return EXIT_OK


def cmd_edit(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "content": inv.stdin.read(),
        "mode": inv.args.mode,
        "create": inv.args.create,
    }
    if inv.args.expected_hash:
        arguments["expected_hash"] = inv.args.expected_hash
    if inv.args.severity:
        arguments["severity"] = inv.args.severity
    result = inv.tool("edit_file", arguments, confirm=True)
    inv.show("edit", result, render.edit)
    return EXIT_TOOL_ERROR if result.get("refused") else EXIT_OK


def cmd_edit_symbol(inv: Invocation) -> int:
    text = inv.args.text if inv.args.text is not None else inv.stdin.read()
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "symbol": inv.args.symbol,
        "action": inv.args.action,
        "text": text,
        "mode": inv.args.mode,
    }
    if inv.args.expected_hash:
        arguments["expected_hash"] = inv.args.expected_hash
    result = inv.tool("edit_symbol", arguments)
    inv.show("edit-symbol", result, render.edit)
    return EXIT_TOOL_ERROR if result.get("refused") else EXIT_OK


def cmd_move(inv: Invocation) -> int:
    arguments: dict[str, Any] = {
        "path": inv.input_path(inv.args.path),
        "new_path": inv.input_path(inv.args.new_path),
        "mode": "preview" if inv.args.dry_run else "apply",
        "force": inv.args.force,
    }
    inv.show("move", inv.tool("move_file", arguments), render.edit)
    return EXIT_OK


def cmd_trust(inv: Invocation) -> int:
    if inv.args.list:
        if inv.args.target:
            raise UsageError("--list takes no ROOT")
        inv.show("trust", inv.request("trust/list"), render.trust_list)
        return EXIT_OK
    if inv.args.target:
        root = os.path.abspath(inv.cwd / Path(inv.args.target).expanduser())
    else:
        root = str(inv.root)
    result = inv.request("trust/set", {"root": root, "trusted": not inv.args.revoke})
    inv.show("trust", result, render.trust_set)
    return EXIT_OK


def cmd_servers(inv: Invocation) -> int:
    """Runs without the daemon; what it installs, a daemon finds on its next request."""
    from codeward.client import servers

    if inv.args.action is None:
        if inv.args.names:
            raise UsageError("to install servers: codeward servers install NAME...")
        servers.show(inv.stdout, inv.json)
        return EXIT_OK
    if not inv.args.names:
        raise UsageError("name the servers to install (codeward servers lists them)")
    unknown = [n for n in inv.args.names if n not in servers.catalog.BY_NAME]
    if unknown:
        raise UsageError(servers.unknown(unknown))
    return EXIT_OK if servers.install(inv.args.names, inv.stdout, inv.stderr) else EXIT_TOOL_ERROR


def cmd_mcp(inv: Invocation) -> int:
    """The pump (the console script reaches it without loading this module)."""
    from codeward.client import pump

    return pump.run(
        inv.args.socket, inv.root, autostart=inv.autostart,
        stdin=inv.stdin, stdout=inv.stdout, stderr=inv.stderr,
    )  # fmt: skip


def cmd_lsp(inv: Invocation) -> int:
    """The editor's pump (the console script reaches it without loading this module)."""
    from codeward.client import lsp_pump

    return lsp_pump.run(
        inv.args.socket, autostart=inv.autostart,
        stdin=inv.stdin, stdout=inv.stdout, stderr=inv.stderr,
    )  # fmt: skip


# -- main -------------------------------------------------------------------------------------


def _error(inv: Invocation | None, stderr: TextIO, message: str, error: Any = None) -> None:
    if inv is not None and inv.json and error is not None:
        inv.stdout.write(render.to_json({"error": error}) + "\n")
    stderr.write(f"error: {message}\n")


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one command; returns the exit code (the console script passes it to sys.exit)."""
    stdin = _stream(stdin, sys.stdin, "r")
    stdout = _stream(stdout, sys.stdout, "w")
    stderr = _stream(stderr, sys.stderr, "w")
    inv: Invocation | None = None
    args: argparse.Namespace | None = None
    argv = list(sys.argv[1:] if argv is None else argv)
    first = _command_index(argv, 0)
    name = argv[first] if first < len(argv) else None
    parser = build_parser(name if name in COMMANDS else None)
    try:
        head, git_tail = _split_git(argv)
        try:
            args, extra = parser.parse_known_args(head)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        if args.command is None:
            stderr.write(parser.format_help())
            return EXIT_USAGE
        if extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
        if git_tail is not None:  # codeward's flags may follow the subcommand too
            args.git_args, flags = gitargs.take_own_flags(git_tail)
            for flag in flags:
                setattr(args, flag.removeprefix("--").replace("-", "_"), True)
        inv = Invocation(args, stdin, stdout, stderr)
        return args.func(inv)
    except UsageError as exc:  # the usage of the command that was given, if any
        usage = getattr(args, "usage", parser.format_usage)
        stderr.write(exc.usage or str(usage()))
        stderr.write(f"codeward: error: {exc.message}\n")
        return EXIT_USAGE
    except RemoteError as exc:
        kind = exc.kind or f"code {exc.code}"
        _error(inv, stderr, f"{exc.message} [{kind}]", exc.to_json())
        return EXIT_TOOL_ERROR
    except RequestTimeout as exc:
        _error(inv, stderr, exc.message, {"code": "timeout", "message": exc.message})
        return EXIT_TOOL_ERROR
    except (DaemonUnreachable, ConnectionLost) as exc:
        _error(inv, stderr, exc.message, {"code": "unreachable", "message": exc.message})
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        stderr.write("\n")
        return 130
    except BrokenPipeError:  # `codeward references ... | head`
        _silence(stdout)
        return 141


def _stream(given: TextIO | None, default: TextIO | None, mode: Literal["r", "w"]) -> TextIO:
    """`given`, else the standard stream, else /dev/null (a stream can be None under pythonw)."""
    if given is not None:
        return given
    if default is not None:
        return default
    return open(os.devnull, "w" if mode == "w" else "r", encoding="utf-8")


def _silence(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null, so that the interpreter's last flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
