"""`codeward daemon`: run the daemon in the foreground."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import trio

from codeward.daemon.config import ConfigError, load_config
from codeward.daemon.git.runner import keep_descriptors_to_ourselves
from codeward.daemon.listener import ListenerError
from codeward.protocol.socket_path import socket_path


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
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"codeward daemon: {exc}", file=sys.stderr)
        return 2
    setup_logging(args.log_level or config.daemon.log_level)
    from codeward.daemon.server import Daemon  # (it loads the tools once it listens)

    keep_descriptors_to_ourselves()  # before anything starts a process
    daemon = Daemon(config, socket_path(args.socket), args.config, freeze=True)
    try:
        trio.run(daemon.run)
    except ListenerError as exc:
        print(f"codeward daemon: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
