"""`codeward mcp`: an MCP stdio server that is only a pump into the daemon, which speaks MCP.

It connects to the daemon (starting it when none answers). When its stdin and stdout are
pipes or sockets (as every MCP host gives them), it hands both to the daemon with the
handoff line (`SCM_RIGHTS`): the daemon then reads the host's requests and writes its
answers itself, with no hop through this process, which only waits for the daemon to say
that the session ended. Otherwise (a terminal, a file, or a daemon that does not know the
handoff) it sends the binding line that names the project root and copies stdin to the
socket and the socket to stdout until either side closes. Lean on purpose: the standard
library's os and socket (no trio, no msgspec, no MCP SDK; threading only to copy, pathlib
only to find the root), so that an agent's server answers `initialize` in milliseconds and
costs a few MiB.
"""

# (no `from __future__ import annotations`: its module is one more import at every editor's
# start; the annotations naming what only type checkers import are strings)

import _socket  # the socket module's own imports (selectors...) cost more than it gives here
import os
import stat  # (os imports it: free)
import sys

from codeward.protocol.socket_path import socket_file

TYPE_CHECKING = False  # typing itself is not imported at run time: it is not cheap
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TextIO

    from codeward.client.autostart import Starting


BIND_METHOD = "codeward/mcp"  # as codeward.protocol.mcp.BIND_METHOD (whose module needs msgspec)
HANDOFF_METHOD = "codeward/mcp-stdio"  # as codeward.protocol.mcp.HANDOFF_METHOD
HANDED = b'"result"'  # in the answer to the handoff: the daemon took stdin and stdout
ENDED_BY_HOST = b'"by":"host"'  # in the daemon's last line: the host ended the session
EXIT_OK = 0
EXIT_UNREACHABLE = 3
CHUNK = 65536
DRAIN_TIMEOUT = 10.0  # seconds the daemon gets to finish and close after stdin closed


class Unreachable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def json_string(text: str) -> str:
    """`text` as a JSON string (the json module is not needed for one path)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if any(ord(c) < 0x20 for c in escaped):
        escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 else c for c in escaped)
    return f'"{escaped}"'


def binding_line(root: "Path") -> bytes:
    """The first line: a JSON-RPC notification that binds the connection to `root`."""
    params = '{"root":' + json_string(str(root)) + "}"
    line = '{"jsonrpc":"2.0","method":"' + BIND_METHOD + '","params":' + params + "}\n"
    return line.encode("utf-8", "surrogateescape")


def handoff_line(root: "Path", pending: bytes = b"", answered: str = "") -> bytes:
    """The first line when stdin and stdout go to the daemon: a request (id 0) naming `root`
    (with the bytes read from stdin already, and the id, in JSON, of the `initialize`
    among them answered already)."""
    params = '{"root":' + json_string(str(root))
    if pending:
        import binascii

        params += ',"pending":"' + binascii.b2a_base64(pending, newline=False).decode() + '"'
    if answered:
        params += ',"answered":' + answered
    params += "}"
    line = '{"jsonrpc":"2.0","id":0,"method":"' + HANDOFF_METHOD + '","params":' + params + "}\n"
    return line.encode("utf-8", "surrogateescape")


def can_hand_off(in_fd: int, out_fd: int) -> bool:
    """Whether both ends are pipes or sockets: what the daemon can read and write itself
    (a terminal or a file stays here: non-blocking mode would leak to the shell)."""
    try:
        modes = [os.fstat(fd).st_mode for fd in (in_fd, out_fd)]
    except OSError:
        return False
    return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in modes)


def hand_off(
    sock: _socket.socket,
    root: "Path",
    in_fd: int,
    out_fd: int,
    greeted: "Greeted | None" = None,
) -> bool | None:
    """Give stdin and stdout to the daemon (and what `greet` read from stdin), then wait for
    the session to end: True when the host ended it (closed stdin), False when the daemon
    did; None when the daemon did not take them (an older daemon: the socket is then
    unusable; connect again and copy)."""
    fds = in_fd.to_bytes(4, sys.byteorder, signed=True) + out_fd.to_bytes(
        4, sys.byteorder, signed=True
    )
    line = handoff_line(root, *greeted) if greeted else handoff_line(root)
    sock.sendmsg([line], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    received = b""
    while b"\n" not in received:
        data = sock.recv(CHUNK)
        if not data:
            return False if received else None
        received += data
    first, _, rest = received.partition(b"\n")
    if HANDED not in first:
        return None
    while data := sock.recv(CHUNK):
        rest += data
    return ENDED_BY_HOST in rest


def connect(path: str, *, autostart: bool, root: "Path | None" = None) -> _socket.socket:
    """A socket connected to the daemon at `path`; the autostart machinery only when none
    answers (a daemon it starts is told `root`: its servers start first thing)."""
    found = begin(path, autostart=autostart, root=root)
    return found if isinstance(found, _socket.socket) else wait(found)


def begin(path: str, *, autostart: bool, root: "Path | None" = None) -> "_socket.socket | Starting":
    """A socket connected to the daemon at `path`, or the daemon just started (`wait` for
    it)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
    from pathlib import Path

    from codeward.client import autostart as starter
    from codeward.client.reach import DaemonUnreachable

    try:
        found = starter.begin(Path(path), autostart=autostart, root=root)
    except DaemonUnreachable as exc:
        raise Unreachable(exc.message) from None
    if isinstance(found, _socket.socket):
        found.settimeout(None)
    return found


def wait(starting: "Starting") -> _socket.socket:
    """A socket connected to the daemon `begin` started, once it listens."""
    from codeward.client.reach import DaemonUnreachable

    try:
        sock = starting.wait()
    except DaemonUnreachable as exc:
        raise Unreachable(exc.message) from None
    sock.settimeout(None)
    return sock


Greeted = tuple[bytes, str]  # the bytes read from stdin; the JSON id answered, or ""


def greet(starting: "Starting", root: "Path", in_fd: int, out_fd: int) -> Greeted:
    """While the daemon `starting` starts: read the host's first line, and when it is MCP's
    `initialize`, answer it (the answer needs no daemon: `mcp_greeting`). Stops reading
    as soon as the daemon listens (it answers then) or stdin ends."""
    import select
    import time

    from codeward.protocol.mcp_greeting import answer

    read = b""
    try:
        while b"\n" not in read:
            remaining = starting.deadline - time.monotonic()
            ready = select.select([in_fd, starting.ready_fd], [], [], max(remaining, 0))[0]
            if in_fd not in ready:  # the daemon listens (or exited, or is late): it answers
                return read, ""
            data = os.read(in_fd, CHUNK)
            if not data:
                return read, ""
            read += data
        answered = answer(read.partition(b"\n")[0], str(root))
        if answered is None:
            return read, ""
        view = memoryview(answered[0])
        while view:
            view = view[os.write(out_fd, view) :]
    except OSError:  # stdin or stdout broke: the daemon finds out when it takes them
        return read, ""
    return read, _json_id(answered[1])


def _json_id(msg_id: int | str) -> str:
    return str(msg_id) if isinstance(msg_id, int) else json_string(msg_id)


def _shutdown(sock: _socket.socket, how: int) -> None:
    try:  # noqa: SIM105 - contextlib is one more import on the lean path
        sock.shutdown(how)
    except OSError:
        pass  # already closed by the other side


def copy(sock: _socket.socket, in_fd: int, out_fd: int, answered: str = "") -> bool:
    """Copy stdin to the socket and the socket to stdout until either side closes
    (`answered`: the JSON id of the `initialize` `greet` answered, whose answer from the
    daemon, which cannot know, is dropped).

    Returns True when the host closed stdin (or stdout) first, False when the daemon closed
    the connection. After stdin closes, the socket's write half is shut so the daemon sees
    the end; it closes in turn, or is cut off after `DRAIN_TIMEOUT`.
    """
    import threading  # (here only: a handoff needs no thread)

    host_done = threading.Event()
    daemon_done = threading.Event()

    def upstream() -> None:
        try:
            while data := os.read(in_fd, CHUNK):
                sock.sendall(data)
        except OSError:
            pass  # stdin broke, or the daemon is gone (then downstream ends too)
        host_done.set()
        _shutdown(sock, _socket.SHUT_WR)
        if not daemon_done.wait(DRAIN_TIMEOUT):
            _shutdown(sock, _socket.SHUT_RDWR)

    threading.Thread(target=upstream, name="stdin", daemon=True).start()
    try:
        if answered:
            _skip_answer(sock, out_fd, answered)
        while data := sock.recv(CHUNK):
            _write(out_fd, data)
    except BrokenPipeError:
        host_done.set()  # the host stopped reading: it is going away
    except OSError:
        pass
    daemon_done.set()
    return host_done.is_set()


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _skip_answer(sock: _socket.socket, out_fd: int, answered: str) -> None:
    """Copy the socket to stdout up to the daemon's answer to the `initialize` of JSON id
    `answered`, which is dropped (or up to the end)."""
    kept = b""  # a line begun
    while True:
        data = sock.recv(CHUNK)
        passed, kept, dropped = _drop_answer(kept + data, answered, ended=not data)
        _write(out_fd, passed)
        if dropped or not data:
            return


def _drop_answer(read: bytes, answered: str, ended: bool) -> tuple[bytes, bytes, bool]:
    """The daemon's bytes `read` to pass on, those held back (a line not whole yet, unless
    the daemon `ended`) and whether the answer to `answered` was among the lines, dropped."""
    import json  # (only in a copied session whose initialize `greet` answered)

    wanted = json.loads(answered)
    lines = read.split(b"\n")
    kept = lines.pop()  # (what follows the last newline)
    for i, line in enumerate(lines):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        found = message.get("id") if isinstance(message, dict) else None
        if type(found) is type(wanted) and found == wanted and "method" not in message:
            rest = lines[:i] + lines[i + 1 :]
            return b"".join(line + b"\n" for line in rest) + kept, b"", True
    passed = b"".join(line + b"\n" for line in lines)
    return (passed + kept, b"", False) if ended else (passed, kept, False)


def run(
    socket_arg: str | None,
    root: "Path",
    *,
    autostart: bool = True,
    stdin: "TextIO | None" = None,
    stdout: "TextIO | None" = None,
    stderr: "TextIO | None" = None,
) -> int:
    """Pump one MCP stdio session into the daemon: 0 when the host ended it, 3 when the
    daemon could not be reached or went away."""
    err = stderr or sys.stderr
    greeted: Greeted = (b"", "")
    try:
        found = begin(socket_file(socket_arg), autostart=autostart, root=root)
        in_fd, out_fd = (stdin or sys.stdin).fileno(), (stdout or sys.stdout).fileno()
        handing = can_hand_off(in_fd, out_fd)
        if isinstance(found, _socket.socket):
            sock = found
        else:  # a daemon starting: the host's `initialize` need not wait for it
            if handing:
                greeted = greet(found, root, in_fd, out_fd)
            sock = wait(found)
    except Unreachable as exc:
        err.write(f"codeward: {exc.message}\n")
        return EXIT_UNREACHABLE
    host_first: bool | None = None
    try:
        if handing:
            host_first = hand_off(sock, root, in_fd, out_fd, greeted)
            if host_first is None:  # not taken: copy, on a connection of its own
                sock.close()
                sock = connect(socket_file(socket_arg), autostart=False)
        if host_first is None:
            sock.sendall(binding_line(root) + greeted[0])
            host_first = copy(sock, in_fd, out_fd, greeted[1])
    except Unreachable as exc:
        err.write(f"codeward: {exc.message}\n")
        return EXIT_UNREACHABLE
    except OSError:
        host_first = False
    finally:
        sock.close()
    if host_first:
        return EXIT_OK
    err.write("codeward: the daemon closed the connection (stopped?); restart the MCP server.\n")
    return EXIT_UNREACHABLE


def main(options: dict[str, str]) -> int:
    """`codeward [--socket PATH] [--root DIR] [--no-autostart] mcp`, from the console script."""
    from codeward.client.root import project_root  # (pathlib: `codeward lsp` needs none)

    try:
        root = project_root(options.get("root"))
        return run(options.get("socket"), root, autostart="no-autostart" not in options)
    except KeyboardInterrupt:
        return 130
