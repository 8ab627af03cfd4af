"""`codeward daemon`: run the daemon in the foreground.

An autostarting `codeward mcp` names its root in `$CODEWARD_EARLY_ROOT`: that root's main
language servers start first thing (`lsp.early`), before trio and the daemon's modules load.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from codeward.daemon.config import Config, ConfigError, load_config
from codeward.protocol.socket_path import (
    ALLOCATOR_ENV,
    DAEMON_ALLOCATOR,
    EARLY_ROOT_ENV,
    socket_path,
)

TYPE_CHECKING = False  # (typing is not imported before the servers start)
if TYPE_CHECKING:
    from codeward.daemon.lsp.early import Spawned


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="codeward daemon", description=__doc__)
    parser.add_argument(
        "--socket",
        help="the socket path (default: $CODEWARD_SOCKET, else "
        "$XDG_RUNTIME_DIR/codeward/codeward.sock, else "
        "${TMPDIR:-/tmp}/codeward-$UID/codeward.sock)",
    )
    parser.add_argument("--config", type=Path, help="config.toml (default: $XDG_CONFIG_HOME)")
    parser.add_argument("--log-level", help="debug, info, warning or error")
    return parser.parse_args(argv)


def setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    on_c_allocator()
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"codeward daemon: {exc}", file=sys.stderr)
        return 2
    setup_logging(args.log_level or config.daemon.log_level)
    early = start_early(config)
    import trio

    from codeward.daemon.git.runner import keep_descriptors_to_ourselves
    from codeward.daemon.listener import ListenerError
    from codeward.daemon.server import Daemon  # (it loads the tools once it listens)

    keep_descriptors_to_ourselves()  # before trio starts a process (Popen closes them all)
    daemon = Daemon(config, socket_path(args.socket), args.config, freeze=True, early=early)
    try:
        trio.run(daemon.run)
    except ListenerError as exc:
        print(f"codeward daemon: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def on_c_allocator() -> None:
    """Make sure the daemon runs on the C allocator (`socket_path.DAEMON_ALLOCATOR`): a
    daemon started without it (by hand, by a service manager) executes itself again with it
    (the same process: its descriptors and pid stay); an allocator the user chose stands.
    Set by codeward, it leaves the environment, so the servers run on their own default."""
    if os.environ.pop(ALLOCATOR_ENV, None) is not None:
        os.environ.pop("PYTHONMALLOC", None)
        return
    if "PYTHONMALLOC" in os.environ or sys.flags.ignore_environment:
        return  # (under -E or -I, Python would not read it: it would start again and again)
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**os.environ, **DAEMON_ALLOCATOR}
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def start_early(config: Config) -> tuple[Path, list[Spawned]] | None:
    """The servers of the root in `$CODEWARD_EARLY_ROOT` (which leaves the environment),
    started now; None when none is named (or it names no directory)."""
    root = os.environ.pop(EARLY_ROOT_ENV, "")
    if not root:
        return None
    from codeward.daemon.lsp.early import canonical_root, spawn

    path = canonical_root(root)
    if path is None:
        return None
    try:
        return path, spawn(path, config)
    except Exception:  # only a head start: the session starts its servers anyway
        logging.getLogger(__name__).exception("starting %s's servers early failed", path)
        return None


if __name__ == "__main__":
    sys.exit(main())
