"""The `codeward` console script: `codeward mcp` goes straight to the lean pump, so that an
agent's MCP server starts in milliseconds; every other command runs the full CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence

_FLAGS = frozenset({"--json", "--no-autostart", "-y", "--yes"})
_VALUED = frozenset({"--root", "--socket", "--timeout"})


def mcp_options(argv: Sequence[str]) -> dict[str, str] | None:
    """The global options of a plain `codeward [OPTIONS] mcp [OPTIONS]`, or None for any
    other command line (the full CLI parses it, and says what is wrong)."""
    options: dict[str, str] = {}
    command: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg in _FLAGS:
            options[arg.lstrip("-")] = ""
        elif name in _VALUED and eq:
            options[name[2:]] = value
        elif arg in _VALUED and i + 1 < len(argv):
            options[arg[2:]] = argv[i + 1]
            i += 1
        elif arg == "mcp" and command is None:
            command = arg
        else:
            return None
        i += 1
    return options if command == "mcp" else None


def main() -> int:
    options = mcp_options(sys.argv[1:])
    if options is not None:
        from codeward.client import pump

        return pump.main(options)
    from codeward.client.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
