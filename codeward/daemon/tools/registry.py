"""The one place a tool is declared: name, description, argument Struct, handler.

A table, not a layer: `tools/list` renders the argument Struct's JSON Schema in every
format; a caller (`tools/call`, MCP, a Lua eval's `codeward.call`) looks the tool up,
validates the arguments, awaits `tool.handler` itself and passes the result through
`tool.finish`, so a call goes straight from its caller to the tool.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from codeward.daemon.approvals import approve_edits
from codeward.daemon.lsp import restricted_effects
from codeward.daemon.paths import relative
from codeward.daemon.tools.suggest import suggested
from codeward.protocol.errors import ErrorKind, ToolError
from codeward.protocol.outputs import OUTPUT_SCHEMAS
from codeward.protocol.tools import ToolSpec, tidy_schema

if TYPE_CHECKING:
    from codeward.daemon.config import PolicyConfig
    from codeward.daemon.lsp.overlay import Buffer
    from codeward.daemon.session import Session


class Caller(Protocol):
    """The client on whose behalf a tool runs: what it declared it can do."""

    @property
    def can_confirm(self) -> bool: ...

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool:
        """Ask the client `client/confirm`; False on no, no answer in time, or a disconnect."""
        ...


class NoCaller:
    """A caller that can confirm nothing (scripts, benchmarks, nested calls without a client)."""

    can_confirm = False

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool:
        return False


@dataclass(frozen=True)
class ToolContext:
    """One tool call: made in the task that awaits the handler, where it starts collecting
    what the servers the call consults lose to the root's restriction (`effects`)."""

    session: Session
    caller: Caller
    policy: PolicyConfig | None = None  # the caller's narrowing of the session's policy
    effects: dict[str, str] = field(default_factory=dict)
    # the editors' buffers the call read instead of the disk, and its edits sent to editors
    editor_reads: dict[Path, Buffer] = field(default_factory=dict)
    followed: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # (imported here: they need lsprotocol, which the daemon loads once it listens,
        # and MCP's dialect and the handlers import this module before)
        from codeward.daemon.edits import follow
        from codeward.daemon.lsp import overlay

        restricted_effects.collect(self.effects)
        overlay.collect(self.editor_reads)
        follow.collect(self.followed)


async def approve_writes(ctx: ToolContext, tool: str, paths: Sequence[Path]) -> None:
    """Return when `tool` may write `paths` under the caller's `policy.edits`; raise the
    refusal (`confirmation_required`, `confirmation_denied`) otherwise."""
    policy = ctx.policy or ctx.session.policy
    if policy.edits == "allow":
        return
    root = ctx.session.root
    shown = [relative(path, root) if path.is_relative_to(root) else path.name for path in paths]
    await approve_edits(ctx.session.id, ctx.caller, policy, tool, shown)


Handler = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[msgspec.Struct]
    handler: Handler
    servers: bool = False  # it asks language servers: its result says `restricted`
    # whether a call with these (validated) arguments may change files: such a call runs to
    # completion when its client disconnects (its write itself is shielded where it happens)
    writes: Callable[[Any], bool] | None = None
    title: str | None = None  # a short human name (MCP `title`)
    destructive: bool = False  # a write may overwrite or delete what was there
    idempotent: bool | None = None  # the same call twice does no more (default: read-only)
    write_switch: str | None = None  # the argument that says whether it writes (see ToolSpec)
    # whether it never writes, where `writes` cannot say (a script that may call writing
    # tools); None: from `writes`
    never_writes: bool | None = None

    def finish(self, ctx: ToolContext, result: dict[str, Any]) -> dict[str, Any]:
        """The handler's `result` as the caller returns it: `restricted: true` beside it when
        its servers run in their restricted configuration (an untrusted root), and
        `restricted_effects` naming what that took away from the servers it consulted."""
        if self.servers and ctx.session.restricted:
            result["restricted"] = True
            if ctx.effects:
                result["restricted_effects"] = dict(ctx.effects)
        if ctx.editor_reads:
            result.update(editor_source(ctx))
        if ctx.followed:
            result["editors"] = list(ctx.followed)
        return result

    @functools.cached_property
    def optional_fields(self) -> frozenset[str]:
        """The arguments that have a default."""
        return frozenset(
            f.encode_name for f in msgspec.structs.fields(self.arguments) if not f.required
        )

    async def explained(self, ctx: ToolContext, args: Any, error: ToolError) -> ToolError:
        """The handler's `error` as the caller raises it: a missing `path` names the
        nearest existing files (called on the error path only, so a call's line to its
        server has no step more)."""
        if error.kind is not ErrorKind.FILE_NOT_FOUND:
            return error
        return await suggested(ctx.session.lsp, args, error)

    @property
    def read_only(self) -> bool:
        return self.writes is None if self.never_writes is None else self.never_writes

    def annotations(self) -> dict[str, bool]:
        """MCP's hints about the tool: every tool acts on the project only."""
        read_only = self.read_only
        idempotent = read_only if self.idempotent is None else self.idempotent
        return {
            "readOnlyHint": read_only,
            "destructiveHint": not read_only and self.destructive,
            "idempotentHint": idempotent,
            "openWorldHint": False,
        }

    def spec(self) -> ToolSpec:
        output = OUTPUT_SCHEMAS.get(self.name)
        return ToolSpec(
            self.name,
            self.description,
            argument_schema(self.arguments),
            output,
            title=self.title,
            annotations=self.annotations(),
            write_switch=self.write_switch,
        )


def editor_source(ctx: ToolContext) -> dict[str, Any]:
    """`source: "editor"` with the editor's version (`editor_version`, of the first file
    read) and every such file (`editor_files`), when the call read a buffer an editor
    holds whose text is not the disk's; else nothing."""
    unsaved = ctx.session.lsp.editor_unsaved(list(ctx.editor_reads.values()))
    if not unsaved:
        return {}
    root = ctx.session.root
    files = [
        {
            "path": relative(b.path, root) if b.path.is_relative_to(root) else b.path.name,
            "version": b.version,
            "holder": b.holder.name,
        }
        for b in unsaved
    ]
    return {"source": "editor", "editor_version": unsaved[0].version, "editor_files": files}


def argument_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The flat JSON Schema object of an argument Struct: every `$ref` replaced by what it
    names, so no format has `$defs` (several hosts and models do not follow references)."""
    schema = msgspec.json.schema(struct)
    defs = schema.pop("$defs", {})
    schema = _inline(schema, defs)
    schema.pop("title", None)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    schema["additionalProperties"] = False
    return tidy_schema(schema)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with each `{"$ref": "#/$defs/X"}` replaced by (the inlined) `defs[X]`."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(_inline(defs[ref.removeprefix("#/$defs/")], defs))
        target.pop("title", None)
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return {key: _inline(value, defs) for key, value in node.items()}


class ToolsWatcher(Protocol):
    def tools_changed(self) -> None:
        """The tool set changed (a tool registered or removed)."""
        ...


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._watchers: weakref.WeakSet[ToolsWatcher] = weakref.WeakSet()

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is declared twice")
        self._tools[tool.name] = tool
        self._changed()
        return tool

    def unregister(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self._changed()

    def watch(self, watcher: ToolsWatcher) -> None:
        """Tell `watcher` when the tool set changes, for as long as it lives."""
        self._watchers.add(watcher)

    def _changed(self) -> None:
        for watcher in list(self._watchers):
            watcher.tools_changed()

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(sorted(self._tools)) or "none"
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"There is no tool named {name!r}; call tools/list (known: {known}).",
            ) from None

    def __iter__(self):
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def validate(self, tool: Tool, arguments: Any) -> msgspec.Struct:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"The arguments of {tool.name} must be a JSON object.",
            )
        # null for an optional argument means "not given" (strict schemas send every one)
        optional = tool.optional_fields
        arguments = {k: v for k, v in arguments.items() if v is not None or k not in optional}
        try:
            return msgspec.convert(arguments, type=tool.arguments)
        except msgspec.ValidationError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"Invalid arguments for {tool.name}: {exc}; see tools/list for its schema.",
            ) from None

    def writes(self, name: str, arguments: Any) -> bool:
        """Whether `name` called with `arguments` may change files (False if invalid)."""
        tool = self._tools.get(name)
        if tool is None or tool.writes is None:
            return False
        try:
            return tool.writes(self.validate(tool, arguments))
        except ToolError:
            return False


REGISTRY = ToolRegistry()


def tool(
    name: str,
    description: str,
    arguments: type[msgspec.Struct],
    *,
    title: str,
    servers: bool = True,
    writes: Callable[[Any], bool] | None = None,
    destructive: bool = False,
    idempotent: bool | None = None,
    write_switch: str | None = None,
    read_only: bool | None = None,
) -> Callable[[Handler], Handler]:
    """Declare a tool in the registry: `@tool("name", "what it does", ArgsStruct,
    title="Short name")`; `servers=False` for a tool that never asks a language server;
    `writes` tells from a call's arguments whether it may change files (none: a read-only
    tool); `destructive`, `idempotent` are MCP's hints about its writes; `write_switch`
    names the argument that says whether a call writes (required on MCP); `read_only=False`
    for a tool whose writes `writes` cannot tell (a script's)."""

    def register(handler: Handler) -> Handler:
        declared = Tool(name, description, arguments, handler, servers, writes, title,
                        destructive, idempotent, write_switch, read_only)  # fmt: skip
        REGISTRY.register(declared)
        return handler

    return register
