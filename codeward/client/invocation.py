"""One run of the CLI (`Invocation`): its arguments and streams, how it reaches the daemon,
and how it shows results and errors; the exit codes every command returns."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from codeward.client import autostart
from codeward.client.connection import (
    ConfirmHandler,
    Connection,
    ConnectionLost,
    ProgressHandler,
)
from codeward.client.root import project_root
from codeward.protocol.render.notes import RESTRICTED, notes, restricted_remark
from codeward.protocol.render.values import to_json
from codeward.protocol.socket_path import socket_path

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


class UsageError(Exception):
    """Bad command-line input: exit 2."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


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
        """A connection that said `initialize` (and `session/open` when `session`; a daemon
        started for it then starts the root's main servers first thing)."""
        root = self.root if session else None
        sock = autostart.connect(self.socket, autostart=self.autostart, root=root)
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
        self.note(f"approved (--yes): {describe_confirmation(params)}")
        return True

    def _ask(self, params: dict[str, Any]) -> bool:
        self.stderr.write(f"codeward: {describe_confirmation(params)}\nAllow? [y/N] ")
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
            self.stdout.write(to_json(result) + "\n")
            return
        result = result if isinstance(result, dict) else {"result": result}
        for line in lines(result):
            self.stdout.write(line + "\n")
        self.stdout.flush()
        for remark in notes(command, result):
            if remark == RESTRICTED:
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
        return restricted_remark(effects if isinstance(effects, dict) else {})


def describe_confirmation(params: dict[str, Any]) -> str:
    """What the daemon asks to approve, in one line (the command it would run, or the files)."""
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


def read_input(inv: Invocation, name: str, what: str) -> str:
    """The file `name` (`-`: stdin), as text; a usage error when it cannot be read."""
    if name == "-":
        return inv.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the {what} {name!r}: {exc}") from None


def report_error(inv: Invocation | None, stderr: TextIO, message: str, error: Any = None) -> None:
    """`error: MESSAGE` on stderr; with `--json`, the error object on stdout too."""
    if inv is not None and inv.json and error is not None:
        inv.stdout.write(to_json({"error": error}) + "\n")
    stderr.write(f"error: {message}\n")
