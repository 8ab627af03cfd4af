"""The commands whose input goes through as it is: a tool's JSON arguments (`call`), a git
command line (`git`) and a Lua script (`lua`)."""

from __future__ import annotations

from typing import Any

from codeward.client import gitargs
from codeward.client.connection import RemoteError
from codeward.client.invocation import (
    EXIT_OK,
    EXIT_TOOL_ERROR,
    Invocation,
    UsageError,
    read_input,
)
from codeward.protocol.render.passthrough import lua
from codeward.protocol.render.values import to_json


def _json_arguments(text: str) -> dict[str, Any]:
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError('the arguments must be a JSON object, such as \'{"path": "a.py"}\'')
    return value


def cmd_call(inv: Invocation) -> int:
    text = read_input(inv, "-", "arguments") if inv.args.arguments == "-" else inv.args.arguments
    arguments = _json_arguments(text)
    result = inv.tool(inv.args.name, arguments, confirm=True)
    inv.stdout.write(to_json(result) + "\n")
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
        inv.stdout.write(to_json(result) + "\n")
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
    source = read_input(inv, inv.args.file, "script")
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
    inv.show("lua", result, lua)
    return EXIT_OK


def _print_logs(inv: Invocation, logs: Any) -> None:
    """A script's `codeward.log` lines on stderr (they are in the result with `--json`)."""
    if inv.json or not isinstance(logs, list):
        return
    for line in logs:
        inv.stderr.write(f"{line}\n")
    inv.stderr.flush()
