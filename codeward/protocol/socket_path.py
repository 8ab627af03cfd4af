"""Where the daemon's socket lives, shared by the daemon and the thin client.

Lean on purpose: `codeward lsp` and `codeward mcp` import it at start-up, before they
connect, so it imports neither pathlib nor collections (their cost is a user's first wait).
"""

# (no `from __future__ import annotations`: its module is one more import at every editor's
# start; the annotations naming what only type checkers import are strings)

import os

TYPE_CHECKING = False  # typing itself is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

# The descriptor an autostarting client passes the daemon it starts (a pipe's write end):
# the daemon writes one byte there as soon as it listens, so the client connects at once
# instead of polling.
READY_FD_ENV = "CODEWARD_READY_FD"
# The project root an autostarting `codeward mcp` passes the daemon it starts: the daemon
# starts that root's main language servers first thing, before it loads anything else.
EARLY_ROOT_ENV = "CODEWARD_EARLY_ROOT"
# The daemon runs on the C allocator (`PYTHONMALLOC=malloc`, read by Python at start): the
# memory a closed session freed goes back to the system page by page (`malloc_trim`), where
# Python's own allocator keeps each 1 MiB arena that one long-lived object still uses. Its
# starter sets it (an autostarting client; else the daemon executes itself again with it),
# with ALLOCATOR_ENV beside: set by codeward, it is left out of the servers' environment.
ALLOCATOR_ENV = "CODEWARD_ALLOCATOR"
DAEMON_ALLOCATOR = {"PYTHONMALLOC": "malloc", ALLOCATOR_ENV: "1"}


def socket_file(explicit: str | None = None, env: "Mapping[str, str] | None" = None) -> str:
    """`--socket PATH`, else `$CODEWARD_SOCKET`, else `$XDG_RUNTIME_DIR/codeward/codeward.sock`,
    else `${TMPDIR:-/tmp}/codeward-$UID/codeward.sock` (a string: see `socket_path`)."""
    env = os.environ if env is None else env
    if explicit:
        return explicit
    if env.get("CODEWARD_SOCKET"):
        return env["CODEWARD_SOCKET"]
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "codeward", "codeward.sock")
    tmp = env.get("TMPDIR") or "/tmp"
    return os.path.join(tmp, f"codeward-{os.getuid()}", "codeward.sock")


def socket_path(explicit: str | None = None, env: "Mapping[str, str] | None" = None) -> "Path":
    """The socket's path (`socket_file`) as a Path."""
    from pathlib import Path

    return Path(socket_file(explicit, env))
