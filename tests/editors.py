"""Real editors in the tests: headless Neovim 0.7 and Emacs 28 with eglot, each driven by a
script (tests/editor_drivers/) that takes one command at a time over a Unix socket and
answers it as JSON, against an LSP server command (a real server, or `codeward lsp`).

The editor's own LSP client does the work: Neovim's `vim.lsp` (start_client,
buf_attach_client, buf_request_sync, util.apply_workspace_edit, formatting_sync,
vim.diagnostic) and eglot (eglot-ensure, xref, flymake, eglot-rename, eglot-format-buffer,
eglot-completion-at-point). Every wait in a driver is bounded and waits for a condition.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

Kind = Literal["neovim", "emacs"]
KINDS: tuple[Kind, ...] = ("neovim", "emacs")
DRIVERS = Path(__file__).with_name("editor_drivers")
ELPA = Path("/usr/share/emacs/site-lisp/elpa")
TIMEOUT = 60.0  # seconds a driver waits for a condition (a server's start included)
GRACE = 15.0  # more for the harness, so that the driver's own error arrives first
INSTALL = "sudo apt-get install neovim emacs-nox elpa-eglot (or `make test`)"

# The editor tests' Python project: a definition across files, a type error, a file to format.
LIB = '''\
def compute(value: int) -> int:
    """Double the value."""
    return value * 2
'''
MAIN = """\
from lib import compute

label: str = compute(1)
print(compute(2))
"""
UGLY = "def f( a,b ):\n  return a+b\n"
PRETTY = "def f(a, b):\n    return a + b\n"


class EditorFailed(Exception):
    """The editor's driver answered a command with an error."""


def require_editor(kind: Kind) -> str:
    """The editor's program; the test fails, naming the install command, when it is missing."""
    program = shutil.which("nvim" if kind == "neovim" else "emacs")
    if program is None:
        pytest.fail(f"{kind} is not installed: {INSTALL}")
    if kind == "emacs" and not any(ELPA.glob("eglot-*")) and _emacs_major(program) < 29:
        pytest.fail(f"eglot is not installed for Emacs: {INSTALL}")  # built in from 29
    return program


@functools.cache
def _emacs_major(program: str) -> int:
    said = subprocess.run([program, "--version"], capture_output=True, text=True, check=False)
    words = said.stdout.split()  # "GNU Emacs 28.2 ..."
    return int(words[2].split(".")[0]) if len(words) > 2 and words[2][:1].isdigit() else 0


def argv(kind: Kind) -> list[str]:
    program = require_editor(kind)
    if kind == "neovim":
        script = DRIVERS / "nvim_driver.lua"
        return [program, "--headless", "--clean", "-u", "NONE", "-n", "-c", f"luafile {script}"]
    return [program, "-Q", "--batch", "-l", str(DRIVERS / "eglot_driver.el")]


class Editor:
    """One running editor: `await editor.call("hover", path=..., line=..., character=...)`."""

    def __init__(self, kind: Kind, process: trio.Process, stream: trio.SocketStream, log: Path):
        self.kind = kind
        self.process = process
        self.stream = stream
        self.log = log
        self.hello: dict[str, Any] = {}
        self._buffered = b""
        self._ids = 0
        self._lock = trio.Lock()

    @property
    def pid(self) -> int:
        return self.process.pid

    async def _line(self) -> dict[str, Any]:
        while b"\n" not in self._buffered:
            data = await self.stream.receive_some(65536)
            if not data:
                raise EditorFailed(f"{self.kind} went away; its output:\n{self.output()}")
            self._buffered += data
        line, self._buffered = self._buffered.split(b"\n", 1)
        return json.loads(line)

    async def call(self, op: str, timeout: float = TIMEOUT + GRACE, **args: Any) -> Any:
        """Run one driver command; its result, or EditorFailed with the driver's error."""
        async with self._lock:
            self._ids += 1
            command = {"id": self._ids, "op": op, "args": args}
            answer: dict[str, Any] | None = None
            with trio.move_on_after(timeout):
                await self.stream.send_all(json.dumps(command).encode() + b"\n")
                answer = await self._line()
            if answer is None:
                raise EditorFailed(f"{self.kind} {op}: no answer; its output:\n{self.output()}")
        assert answer.get("id") == self._ids, answer
        if "error" in answer:
            raise EditorFailed(f"{self.kind} {op}: {answer['error']}\n{self.output()}")
        return answer["result"]

    async def kill(self) -> None:
        """The editor dies at once (SIGKILL to it alone): its connection to the language
        server ends without shutdown or exit, as in a crash."""
        self.process.kill()
        await self.process.wait()

    def output(self) -> str:
        """The editor's own output, and Neovim's LSP log (the server's stderr goes there)."""
        logs = [self.log, self.log.parent / ".cache" / "nvim" / "lsp.log"]
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in logs if p.exists())


@asynccontextmanager
async def editor(
    kind: Kind, command: list[str], root: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[Editor]:
    """`kind` running on `root` with `command` as its language server; on exit the driver
    shuts the server down (shutdown, exit) and the editor quits (killed if it does not)."""
    place = Path(tempfile.mkdtemp(prefix="cw-ed-", dir="/tmp"))
    listener = trio.socket.socket(trio.socket.AF_UNIX)
    log = place / "editor.log"
    try:
        await listener.bind(str(place / "driver.sock"))
        listener.listen(1)
        environment = {
            **os.environ,
            **(env or {}),
            "CW_DRIVER_SOCKET": str(place / "driver.sock"),
            "CW_LSP_CMD": json.dumps(command),
            "CW_ROOT": str(root),
            "CW_TIMEOUT_MS": str(int(TIMEOUT * 1000)),
            "HOME": str(place),  # no user configuration of either editor
        }
        with log.open("wb") as out:
            process = await trio.lowlevel.open_process(
                argv(kind), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                env=environment, cwd=root, start_new_session=True,
            )  # fmt: skip
        try:
            running = Editor(kind, process, await _accepted(listener, process, log), log)
            with trio.fail_after(TIMEOUT):
                running.hello = await running._line()
            yield running
            if process.returncode is None:  # not killed by the test
                with trio.move_on_after(TIMEOUT):
                    await running.call("quit")
                    await process.wait()
        finally:
            await _end(process)
    finally:
        listener.close()
        shutil.rmtree(place, ignore_errors=True)


async def _accepted(
    listener: trio.socket.SocketType, process: trio.Process, log: Path
) -> trio.SocketStream:
    """The driver's connection; EditorFailed with the editor's output when it exits first."""
    accepted: list[trio.socket.SocketType] = []
    with trio.move_on_after(TIMEOUT):
        async with trio.open_nursery() as nursery:

            async def ended() -> None:
                await process.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(ended)
            accepted.append((await listener.accept())[0])
            nursery.cancel_scope.cancel()
    if not accepted:
        said = log.read_text(errors="replace")[-4000:]
        raise EditorFailed(f"the editor did not start (exit {process.returncode}):\n{said}")
    return trio.SocketStream(accepted[0])


async def _end(process: trio.Process) -> None:
    """The editor's process group is gone (its language server included) and reaped."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with trio.CancelScope(shield=True):
        await process.wait()


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every living descendant of `pid`."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            children.setdefault(int(ppid), []).append(int(entry.name))
            commands[int(entry.name)] = command.strip()
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        current = todo.pop()
        found[current] = commands[current]
        todo += children.get(current, [])
    return found
