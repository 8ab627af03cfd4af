"""JSON-RPC error codes, the tool error kinds, and the exception that carries one."""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Any


class ErrorCode(IntEnum):
    """The standard JSON-RPC 2.0 codes, plus the one code every tool failure uses."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TOOL_ERROR = -32000
    CONNECTION_CLOSED = -32001  # the daemon closes this connection; the message says why
    REQUEST_CANCELLED = -32800
    SERVER_NOT_INITIALIZED = -32002  # LSP: a request before `initialize`
    REQUEST_FAILED = -32803  # LSP: the request was valid but failed (the message says why)


class ErrorKind(StrEnum):
    """`data.kind` of a `-32000` tool error."""

    INVALID_ARGUMENTS = "invalid_arguments"
    NO_SESSION = "no_session"
    SESSION_NOT_FOUND = "session_not_found"
    PATH_OUTSIDE_PROJECT = "path_outside_project"
    FILE_NOT_FOUND = "file_not_found"
    UNSUPPORTED_FILE_TYPE = "unsupported_file_type"
    NOT_A_GIT_REPOSITORY = "not_a_git_repository"
    SUBCOMMAND_NOT_ALLOWED = "subcommand_not_allowed"
    ARGUMENT_NOT_ALLOWED = "argument_not_allowed"
    BLOCKED_DESTRUCTIVE = "blocked_destructive"
    CONFIRMATION_REQUIRED = "confirmation_required"
    CONFIRMATION_DENIED = "confirmation_denied"
    UNSAFE_REPOSITORY_CONFIG = "unsafe_repository_config"
    GIT_FAILED = "git_failed"
    TIMEOUT = "timeout"
    LSP_UNAVAILABLE = "lsp_unavailable"
    LSP_ERROR = "lsp_error"
    UNSUPPORTED_BY_SERVER = "unsupported_by_server"
    STALE_EDIT = "stale_edit"
    WRITE_FAILED = "write_failed"
    LUA_ERROR = "lua_error"
    LUA_TIMEOUT = "lua_timeout"
    LUA_MEMORY = "lua_memory"
    CANCELLED = "cancelled"
    OUTPUT_TOO_LARGE = "output_too_large"


class ToolError(Exception):
    """A tool failure: becomes a `-32000` error whose `data.kind` is `kind`.

    `message` is one human sentence that says what to do next; it never holds an absolute
    path outside the project. `details` are merged into `data` beside `kind`.
    """

    def __init__(self, kind: ErrorKind, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.message = message
        self.details = details

    def to_data(self) -> dict[str, Any]:
        return {"kind": self.kind.value, **self.details}

    def __repr__(self) -> str:
        return f"ToolError({self.kind.value!r}, {self.message!r})"


def find_tool_error(exc: BaseException) -> ToolError | None:
    """The first `ToolError` in `exc`, however deep in exception groups (nurseries wrap)."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_tool_error(inner)
            if found is not None:
                return found
    return None


class RpcError(Exception):
    """A JSON-RPC level failure (parse, request, method, params) with its standard code."""

    def __init__(self, code: ErrorCode, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.data = data
