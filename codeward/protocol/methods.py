"""Params and results of every daemon method (docs/PROTOCOL.md), as msgspec Structs."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType, field

PROTOCOL_VERSION = 1

Approval = Literal["allow", "confirm", "deny"]


class ClientInfo(Struct, forbid_unknown_fields=False):
    name: str = ""
    version: str = ""


class ClientCapabilities(Struct, forbid_unknown_fields=False):
    confirm: bool = False
    progress: bool = False


class InitializeParams(Struct, forbid_unknown_fields=False):
    protocol_version: int = PROTOCOL_VERSION
    client: ClientInfo = field(default_factory=ClientInfo)
    capabilities: ClientCapabilities = field(default_factory=ClientCapabilities)


class ServerInfo(Struct):
    name: str
    version: str


class InitializeResult(Struct):
    protocol_version: int
    server: ServerInfo
    pid: int


class PolicyParams(Struct, forbid_unknown_fields=True):
    git_write: Approval | UnsetType = UNSET
    git_destructive: Approval | UnsetType = UNSET
    edits: Literal["allow", "confirm"] | UnsetType = UNSET


class SessionOpenParams(Struct, forbid_unknown_fields=True):
    root: str | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    policy: PolicyParams | UnsetType = UNSET


class SessionOpenResult(Struct):
    session_id: str
    root: str
    created: bool
    languages: list[str]
    trusted: bool = False


class TrustSetParams(Struct, forbid_unknown_fields=True):
    root: str
    trusted: bool = True


class TrustSetResult(Struct):
    root: str
    trusted: bool  # the root's trust now (itself or through a trusted parent)
    changed: bool  # whether the trusted roots changed
    restarted: list[str]  # the sessions whose servers restarted
    inherited: bool = False  # trusted through a trusted directory above it


class TrustListResult(Struct):
    roots: list[str]


class SessionCloseParams(Struct, forbid_unknown_fields=True):
    terminate: bool = False


class ToolsListParams(Struct, forbid_unknown_fields=True):
    format: Literal["native", "openai", "anthropic", "mcp"] = "native"
    strict: bool = False  # openai: schemas for strict function calling


class ToolsListResult(Struct):
    tools: list[dict[str, Any]]


class ToolsCallParams(Struct, forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


class LuaEvalParams(Struct, forbid_unknown_fields=True):
    source: str
    args: Any = None


class LuaEvalResult(Struct):
    result: Any
    logs: list[str] = field(default_factory=list)  # what the script said with codeward.log


class ConfirmParams(Struct):
    session_id: str
    tool: str
    summary: str
    argv: list[str]


class ConfirmResult(Struct, forbid_unknown_fields=False):
    approved: bool = False


class ProgressParams(Struct, omit_defaults=True):
    session_id: str
    server: str
    token: int | str
    kind: str
    title: str | UnsetType = UNSET
    message: str | UnsetType = UNSET
    percentage: int | UnsetType = UNSET
