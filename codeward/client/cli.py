"""The `codeward` command line: the thin client of the daemon (README.md, "CLI"). `main`
parses the command line (`cli_parser`), runs the command (`commands/`) in an `Invocation`,
and turns what went wrong into an exit code.

Exit codes: 0 ok, 1 tool error (any error reply from the daemon, a git command that
failed, a timed-out request), 2 usage, 3 daemon unreachable (or gone mid-request).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Literal, TextIO

from codeward.client import gitargs
from codeward.client.cli_parser import COMMANDS, build_parser, command_index, split_git
from codeward.client.connection import (
    ConnectionLost,
    DaemonUnreachable,
    RemoteError,
    RequestTimeout,
)
from codeward.client.invocation import (
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    Invocation,
    UsageError,
    report_error,
)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one command; returns the exit code (the console script passes it to sys.exit)."""
    stdin = _stream(stdin, sys.stdin, "r")
    stdout = _stream(stdout, sys.stdout, "w")
    stderr = _stream(stderr, sys.stderr, "w")
    inv: Invocation | None = None
    args: argparse.Namespace | None = None
    argv = list(sys.argv[1:] if argv is None else argv)
    first = command_index(argv, 0)
    name = argv[first] if first < len(argv) else None
    parser = build_parser(name if name in COMMANDS else None)
    try:
        head, git_tail = split_git(argv)
        try:
            args, extra = parser.parse_known_args(head)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        if args.command is None:
            stderr.write(parser.format_help())
            return EXIT_USAGE
        if extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
        if git_tail is not None:  # codeward's flags may follow the subcommand too
            args.git_args, flags = gitargs.take_own_flags(git_tail)
            for flag in flags:
                setattr(args, flag.removeprefix("--").replace("-", "_"), True)
        inv = Invocation(args, stdin, stdout, stderr)
        return args.func(inv)
    except UsageError as exc:  # the usage of the command that was given, if any
        usage = getattr(args, "usage", parser.format_usage)
        stderr.write(exc.usage or str(usage()))
        stderr.write(f"codeward: error: {exc.message}\n")
        return EXIT_USAGE
    except RemoteError as exc:
        kind = exc.kind or f"code {exc.code}"
        report_error(inv, stderr, f"{exc.message} [{kind}]", exc.to_json())
        return EXIT_TOOL_ERROR
    except RequestTimeout as exc:
        report_error(inv, stderr, exc.message, {"code": "timeout", "message": exc.message})
        return EXIT_TOOL_ERROR
    except (DaemonUnreachable, ConnectionLost) as exc:
        report_error(inv, stderr, exc.message, {"code": "unreachable", "message": exc.message})
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        stderr.write("\n")
        return 130
    except BrokenPipeError:  # `codeward references ... | head`
        _silence(stdout)
        return 141


def _stream(given: TextIO | None, default: TextIO | None, mode: Literal["r", "w"]) -> TextIO:
    """`given`, else the standard stream, else /dev/null (a stream can be None under pythonw)."""
    if given is not None:
        return given
    if default is not None:
        return default
    return open(os.devnull, "w" if mode == "w" else "r", encoding="utf-8")


def _silence(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null, so that the interpreter's last flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
