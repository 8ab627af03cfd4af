"""The arguments of the edit tools that write a server's edits (format_code, get_code_actions,
rename_symbol), and the check of their line range."""

from __future__ import annotations

from typing import Annotated

import msgspec

from codeward.daemon.intel.inputs import SourceFile, check_position
from codeward.daemon.tools.positions import Path_, PositionArgs
from codeward.protocol.errors import ErrorKind, ToolError

Apply = Annotated[
    bool,
    msgspec.Meta(description="Write the change (true) or only show its diff (false)."),
]


class FormatArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Path_
    start_line: Annotated[
        int | None, msgspec.Meta(description="Format only from this 1-based line.")
    ] = None
    end_line: Annotated[
        int | None, msgspec.Meta(description="Format only up to this 1-based line (included).")
    ] = None
    apply: Apply = True


class CodeActionArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Path_
    line: Annotated[
        int | None,
        msgspec.Meta(description="The 1-based first line of the range (none: the whole file)."),
    ] = None
    end_line: Annotated[
        int | None, msgspec.Meta(description="The last line of the range (default: `line`).")
    ] = None
    kinds: Annotated[
        list[str] | None,
        msgspec.Meta(description="Only actions of these kinds (`quickfix`, `source.fixAll`...)."),
    ] = None
    apply: Annotated[
        int | str | None,
        msgspec.Meta(
            description="Apply this action: its index in `actions`, or its exact title; or "
            '"preferred": every preferred quick fix offered (and, when `kinds` asks for '
            "`source.fixAll`, every fix-all action), in one atomic write."
        ),
    ] = None
    symbol: Annotated[
        str | None,
        msgspec.Meta(
            description="Instead of `line`: a name path in the file (`Class.method`); the "
            "range is its name's line (to `end_line` when given)."
        ),
    ] = None


class RenameArgs(PositionArgs, forbid_unknown_fields=True, kw_only=True):
    new_name: Annotated[str, msgspec.Meta(description="The symbol's new name.")]
    apply: Apply = True


def check_lines(source: SourceFile, first: int, last: int) -> None:
    check_position(source, first, 1)
    check_position(source, last, 1)
    if last < first:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The end line {last} comes before the start line {first}; give end_line >= line.",
        )
