"""The CLI's argument parser: every command's arguments, the global options (before or after
the command), and the split of `codeward git ...` before what goes to git verbatim."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from codeward import __version__
from codeward.client.commands.daemon import (
    cmd_daemon,
    cmd_lsp,
    cmd_mcp,
    cmd_servers,
    cmd_sessions,
    cmd_status,
    cmd_stop,
    cmd_tools,
    cmd_trust,
)
from codeward.client.commands.edits import (
    cmd_actions,
    cmd_edit,
    cmd_edit_symbol,
    cmd_format,
    cmd_move,
    cmd_rename,
)
from codeward.client.commands.intel import (
    POSITION_COMMANDS,
    cmd_calls,
    cmd_diagnostics,
    cmd_review,
    cmd_signature,
    cmd_symbols,
    cmd_types,
)
from codeward.client.commands.passthrough import cmd_call, cmd_git, cmd_lua
from codeward.client.commands.positions import POSITION, POSITION_HELP
from codeward.client.invocation import Invocation, UsageError

DEFAULT_TIMEOUT = 600.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


_VALUE_OPTIONS = frozenset({"--root", "--socket", "--timeout"})


def command_index(argv: list[str], start: int) -> int:
    """Index of the first positional token at or after `start` (options skipped)."""
    i = start
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        i += 2 if argv[i] in _VALUE_OPTIONS else 1
    return i


def split_git(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """Split `... git [OPTIONS] SUBCOMMAND ARGS...` before ARGS, which go to git verbatim
    (argparse would drop a `--`, which git needs)."""
    i = command_index(argv, 0)
    if i >= len(argv) or argv[i] != "git":
        return argv, None
    j = command_index(argv, i + 1)
    if j >= len(argv):
        return argv, None
    return argv[: j + 1], argv[j + 1 :]


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
    for name, func, help_text in POSITION_COMMANDS:
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
    _directions(calls, ("incoming", "callers (default)"), ("outgoing", "callees"))
    types = command("types", cmd_types, "supertypes (default) or subtypes of a type")
    types.add_argument("position", metavar=POSITION, help=POSITION_HELP)
    _directions(
        types,
        ("supertypes", "what it extends or implements (default)"),
        ("subtypes", "what extends or implements it"),
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


def _directions(parser: argparse.ArgumentParser, *choices: tuple[str, str]) -> None:
    """`--NAME` flags of which one sets `direction` to NAME; the first is the default."""
    group = parser.add_mutually_exclusive_group()
    for name, help_text in choices:
        group.add_argument(
            f"--{name}",
            dest="direction",
            action="store_const",
            const=name,
            default=choices[0][0],
            help=help_text,
        )
