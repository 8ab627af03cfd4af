"""The daemon's own answers: its status, sessions, trusted roots and tools."""

from __future__ import annotations

from typing import Any


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "?"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def status(result: dict[str, Any]) -> list[str]:
    return [
        f"codeward {result.get('version', '?')} (pid {result.get('pid', '?')}), "
        f"up {_duration(result.get('uptime'))}",
        f"sessions: {result.get('sessions', 0)}, connections: {result.get('connections', 0)}",
        f"socket: {result.get('socket', '?')}",
    ]


def sessions(result: dict[str, Any]) -> list[str]:
    items = [s for s in result.get("sessions") or [] if isinstance(s, dict)]
    if not items:
        return ["no sessions"]
    lines: list[str] = []
    shared: dict[tuple[str, Any], dict[str, Any]] = {}  # a process several roots use, once
    for session in items:
        trust = "trusted" if session.get("trusted") else "restricted"
        lines.append(
            f"{session.get('id', '?')}  {session.get('root', '?')}  {trust}  "
            f"clients: {session.get('clients', 0)}  idle: {_duration(session.get('idle_seconds'))}"
        )
        for server in session.get("servers") or []:
            if not isinstance(server, dict):
                continue
            name, pid = server.get("name", "?"), server.get("pid")
            if len(server.get("roots") or []) > 1:
                shared.setdefault((name, pid or id(server)), server)
                lines.append(f"  {name}: shared" + (f", pid {pid}" if pid else ""))
            else:
                lines.append(_server_line(server))
    if shared:
        lines.append("shared by the roots of one repository:")
        for server in shared.values():
            lines.append(_server_line(server))
            lines.extend(f"    {root}" for root in server.get("roots") or [])
    return lines


def _server_line(server: dict[str, Any]) -> str:
    pid = server.get("pid")
    return (
        f"  {server.get('name', '?')} ({server.get('language', '?')}): "
        f"{server.get('state', '?')}"
        + (f", pid {pid}" if pid else "")
        + f", restarts {server.get('restarts', 0)}"
    )


def trust_list(result: dict[str, Any]) -> list[str]:
    roots = [str(r) for r in result.get("roots") or []]
    return roots or ["no trusted roots"]


def trust_set(result: dict[str, Any]) -> list[str]:
    root, trusted = result.get("root", "?"), bool(result.get("trusted"))
    if trusted and result.get("inherited"):
        line = f"{root} is trusted through a trusted directory above it"
    elif trusted:
        line = f"{root} is trusted" + ("" if result.get("changed") else " (it already was)")
    else:
        line = f"{root} is not trusted" + ("" if result.get("changed") else " (it was not)")
    restarted = len(result.get("restarted") or [])
    if restarted:
        line += f"; the servers of {restarted} session{'s' if restarted != 1 else ''} restarted"
    return [line]


def tools(result: dict[str, Any]) -> list[str]:
    lines = []
    for item in result.get("tools") or []:
        if isinstance(item, dict):
            summary = str(item.get("description") or "").strip().splitlines()
            lines.append(f"{item.get('name', '?')}: {summary[0] if summary else ''}".rstrip(": "))
    return lines
