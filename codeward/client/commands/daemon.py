"""The commands about the daemon itself: run, status, stop, its sessions and tools, the
trusted roots, the language servers to install, and the MCP and LSP pumps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codeward.client import autostart
from codeward.client.connection import Connection, ConnectionLost, RemoteError
from codeward.client.invocation import (
    EXIT_OK,
    EXIT_TOOL_ERROR,
    Invocation,
    UsageError,
    report_error,
)
from codeward.protocol.render.daemon import sessions, status, tools, trust_list, trust_set
from codeward.protocol.render.values import to_json

STOP_TIMEOUT = 30.0


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
    inv.show("status", inv.request("daemon/status"), status)
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
        inv.stdout.write(to_json({"stopped": stopped}) + "\n")
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
        inv.show("sessions", inv.request("session/list"), sessions)
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
        inv.stdout.write(to_json({"closed": closed}) + "\n")
    for root in [] if inv.json else closed:
        inv.stdout.write(f"closed {root}\n")
    if wanted is not None and not closed:
        report_error(
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
        inv.stdout.write(to_json(result) + "\n")
        return EXIT_OK
    inv.show("tools", result, tools)
    return EXIT_OK


def cmd_trust(inv: Invocation) -> int:
    if inv.args.list:
        if inv.args.target:
            raise UsageError("--list takes no ROOT")
        inv.show("trust", inv.request("trust/list"), trust_list)
        return EXIT_OK
    if inv.args.target:
        root = os.path.abspath(inv.cwd / Path(inv.args.target).expanduser())
    else:
        root = str(inv.root)
    result = inv.request("trust/set", {"root": root, "trusted": not inv.args.revoke})
    inv.show("trust", result, trust_set)
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
