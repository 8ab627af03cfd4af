"""The user's approval of a write that the policy says to confirm: git writes (see
`git.command`) and file edits (`[policy] edits = "confirm"`), asked of the caller's client
(`client/confirm` natively, `elicitation/create` over MCP)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.config import PolicyConfig


class Asker(Protocol):
    """Who is asked: the tool's caller (`tools.registry.Caller`)."""

    @property
    def can_confirm(self) -> bool: ...

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool: ...


# How a refused confirmation goes on, said in every `confirmation_required`.
CONFIRM_WAYS = (
    "use a client that confirms (one that answers client/confirm, such as the CLI with "
    "--yes, or an MCP client that declares elicitation)"
)
SHOWN_FILES = 5  # files named in an edit's approval summary


async def approve_edits(
    session_id: str, caller: Asker, policy: PolicyConfig, tool: str, files: Sequence[str]
) -> None:
    """Return when `tool` may write `files` (root-relative); raise the refusal otherwise."""
    if policy.edits == "allow" or not files:
        return
    named = ", ".join(files[:SHOWN_FILES]) + (
        f" and {len(files) - SHOWN_FILES} more" if len(files) > SHOWN_FILES else ""
    )
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    summary = f"writing {count} ({named})"
    if not caller.can_confirm:
        raise ToolError(
            ErrorKind.CONFIRMATION_REQUIRED,
            f"{tool} would write {count} ({named}), which needs the user's approval "
            f'(policy.edits = "confirm") and this client cannot confirm; {CONFIRM_WAYS}, '
            'or set policy.edits = "allow" in the codeward config; nothing was written.',
            files=list(files),
        )
    if not await caller.confirm(session_id, tool, summary, []):
        raise ToolError(
            ErrorKind.CONFIRMATION_DENIED,
            f"The user declined {tool} writing {count} ({named}); nothing was written, so "
            "ask before trying otherwise.",
            files=list(files),
        )
