"""The host calls a Lua eval makes: git, tools and logs, on behalf of one caller."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from codeward.daemon.config import PolicyConfig
from codeward.daemon.git import run_git
from codeward.daemon.tools.registry import REGISTRY, Caller, ToolContext
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.session import Session

log = logging.getLogger(__name__)
LOGS_BYTES = 64 * 1024  # the most `codeward.log` text one eval hands back to its caller


class SessionHost:
    """The host calls a Lua eval makes on behalf of one caller."""

    def __init__(
        self, session: Session, caller: Caller, policy: PolicyConfig | None = None
    ) -> None:
        self.session = session
        self.caller = caller
        self.policy = policy or session.policy
        self.messages: list[str] = []  # what `codeward.log` said, for the eval's caller
        self._logged_bytes = 0

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> dict[str, Any]:
        session, caller = self.session, self.caller

        async def approve(summary: str, argv: list[str]) -> bool | None:
            if not caller.can_confirm:
                return None
            return await caller.confirm(session.id, "git_command", summary, argv)

        return await run_git(
            session.root,
            subcommand,
            list(args),
            allow_destructive=bool(opts.get("allow_destructive", False)),
            policy=self.policy,
            limits=session.config.git,
            approve=approve,
            on_files_changed=session.files_changed,
            exclusive=session.writer.exclusive,
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if tool == "run_lua":
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "A script cannot run another script (run_lua); do that work in this one.",
            )
        found = REGISTRY.get(tool)
        args: Any = REGISTRY.validate(found, arguments)
        if tool == "git_command":
            # Already inside a sandboxed eval: run git from here rather than start a second
            # eval, which could wait for a runtime while this one holds its own.
            opts = {"allow_destructive": args.allow_destructive}
            return await self.git(args.subcommand, list(args.args), opts)
        ctx = ToolContext(self.session, self.caller, self.policy)
        try:
            return found.finish(ctx, await found.handler(ctx, args))
        except ToolError as exc:
            raise await found.explained(ctx, args, exc) from None

    def log(self, message: str) -> None:
        log.info("lua[%s]: %s", self.session.id, message)
        if self._logged_bytes >= LOGS_BYTES:
            return
        self._logged_bytes += len(message)
        if self._logged_bytes >= LOGS_BYTES:
            message = "(codeward.log: later lines are only in the daemon log)"
        self.messages.append(message)
