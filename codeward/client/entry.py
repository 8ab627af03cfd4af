"""The `codeward` console script: `codeward mcp` and `codeward lsp` go straight to the lean
pumps, so that an agent's MCP server or an editor's language server starts in milliseconds;
every other command runs the full CLI."""

# (no `from __future__ import annotations`: its module is one more import at every editor's
# start; the annotations naming what only type checkers import are strings)

import sys

TYPE_CHECKING = False  # (typing and collections are not imported at run time)
if TYPE_CHECKING:
    from collections.abc import Sequence

_FLAGS = frozenset({"--json", "--no-autostart", "-y", "--yes"})
_VALUED = frozenset({"--root", "--socket", "--timeout"})


def pump_options(argv: "Sequence[str]") -> tuple[str, dict[str, str]] | None:
    """The command (`mcp` or `lsp`) and global options of a plain `codeward [OPTIONS] mcp
    [OPTIONS]` (or `lsp`), or None for any other command line (the full CLI parses it, and
    says what is wrong)."""
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
        elif arg in ("mcp", "lsp") and command is None:
            command = arg
        else:
            return None
        i += 1
    return None if command is None else (command, options)


def main() -> int:
    found = pump_options(sys.argv[1:])
    if found is not None:
        command, options = found
        if command == "lsp":
            from codeward.client import lsp_pump

            return lsp_pump.main(options)
        from codeward.client import pump

        return pump.main(options)
    from codeward.client.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
