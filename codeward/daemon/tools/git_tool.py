"""The `git_command` tool: safe git, run through the session's Lua sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from codeward.daemon.tools.host import SessionHost
from codeward.daemon.tools.registry import ToolContext, tool

if TYPE_CHECKING:
    from codeward.daemon.lua import LuaActor, LuaHost

# The chunk receives the tool's arguments as the JSON texts of `codeward.git`'s three
# arguments, encoded here from the validated arguments: it hands them to the host as they
# are (`codeward.git_json`, which only the daemon's own chunks see), where a script's
# tables would be encoded in Lua first.
SOURCE = """local a = ...
return codeward.git_json(a[1], a[2], a[3])
"""
_encode = msgspec.json.encode


class ByReference:
    """The session's host, except that `codeward.git` hands the chunk a reference to its
    result (its number) rather than a copy: the chunk only returns it, so the result
    (thousands of status entries, a long diff) is not converted into Lua and back to JSON."""

    def __init__(self, host: LuaHost) -> None:
        self.host = host
        self.results: list[dict[str, Any]] = []

    async def git(self, subcommand: str, args: list[str], opts: dict[str, Any]) -> Any:
        self.results.append(await self.host.git(subcommand, args, opts))
        return len(self.results)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.host.call(tool, arguments)

    def log(self, message: str) -> None:
        self.host.log(message)


def chunk_arguments(subcommand: str, args: list[str], allow_destructive: bool) -> list[str]:
    """What `SOURCE` takes: the JSON texts of `codeward.git`'s subcommand, args and opts."""
    opts = {"allow_destructive": allow_destructive}
    return [_encode(subcommand).decode(), _encode(args).decode(), _encode(opts).decode()]


async def run_chunk(lua: LuaActor, host: LuaHost, arguments: list[Any]) -> dict[str, Any]:
    """Evaluate the git_command chunk in the sandbox for `arguments` ([subcommand, args,
    opts]); the git result it returned."""
    subcommand, args, opts = arguments
    by_reference = ByReference(host)
    texts = chunk_arguments(subcommand, args, bool(opts.get("allow_destructive", False)))
    ref = await lua.eval(SOURCE, texts, by_reference, constant=True)
    if type(ref) is not int or not 1 <= ref <= len(by_reference.results):
        raise AssertionError(f"the git_command chunk returned {ref!r}")
    return by_reference.results[ref - 1]


# subcommands that never change anything, whatever their arguments; any other call may
# write, so it runs to completion when its client disconnects
PURE_READS = frozenset(
    {"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "describe", "shortlog",
     "grep"}
)  # fmt: skip


def may_write(args: GitArgs) -> bool:
    """Whether this call may change the repository (then a disconnect does not cancel it)."""
    if args.subcommand == "fetch":  # a read, unless a refspec or pruning changes local refs
        return any(":" in a or a.startswith(("--refmap", "--prune")) for a in args.args)
    return args.subcommand not in PURE_READS


class GitArgs(msgspec.Struct, forbid_unknown_fields=True):
    subcommand: Annotated[
        str, msgspec.Meta(description="The git subcommand, such as `status`, `log` or `commit`.")
    ]
    args: Annotated[
        list[str],
        msgspec.Meta(
            description="Its arguments, one per item, as on git's command line; paths are "
            "relative to the project root, after `--` where git wants one."
        ),
    ] = msgspec.field(default_factory=list)
    allow_destructive: Annotated[
        bool,
        msgspec.Meta(
            description="Allow a destructive command (force push, reset --hard...); it still "
            "needs the user's approval."
        ),
    ] = False


@tool(
    "git_command",
    "Run a git subcommand at the project root. Reads (status, diff, log, show, branch, tag, "
    "remote, stash list, blame, ls-files, rev-parse, describe, shortlog, grep, fetch) run at "
    "once; writes need the user's approval; destructive commands (force push, reset --hard, "
    "clean -f, branch -D, discarding checkouts, stash drop) also need allow_destructive. "
    "Returns exit_code, output, stderr, truncated, and parsed data for status, diff, show, "
    "log, branch, tag, remote and stash list.",
    GitArgs,
    title="Run git",
    destructive=True,
    servers=False,
    writes=lambda args: may_write(args),
)
async def git_command(ctx: ToolContext, args: GitArgs) -> dict[str, Any]:
    opts = {"allow_destructive": args.allow_destructive}
    # writes shield themselves in run_git; reads stay cancellable
    host = SessionHost(ctx.session, ctx.caller, ctx.policy)
    return await run_chunk(ctx.session.lua, host, [args.subcommand, args.args, opts])
