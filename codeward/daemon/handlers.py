"""The daemon's JSON-RPC methods (docs/PROTOCOL.md).

Light to import: the daemon answers its early methods before it has loaded the sessions
and the tools (`server.SERVICES`); a handler that needs those imports them when it runs."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from codeward import __version__
from codeward.daemon.config import PolicyConfig
from codeward.daemon.connection import Connection
from codeward.daemon.dispatch import Dispatch
from codeward.daemon.tools.registry import REGISTRY, ToolContext
from codeward.protocol.errors import ErrorCode, ErrorKind, RpcError, ToolError
from codeward.protocol.messages import Incoming
from codeward.protocol.methods import (
    PROTOCOL_VERSION,
    InitializeParams,
    InitializeResult,
    LuaEvalParams,
    LuaEvalResult,
    ServerInfo,
    SessionCloseParams,
    SessionOpenParams,
    SessionOpenResult,
    ToolsCallParams,
    ToolsListParams,
    ToolsListResult,
    TrustListResult,
    TrustSetParams,
    TrustSetResult,
)
from codeward.protocol.tools import ToolFormat, render_tool

if TYPE_CHECKING:
    from codeward.daemon.session import Session

Handler = Callable[[Connection, Incoming], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}
# Requests that change the connection's state: they take effect before any later one starts.
STATEFUL_METHODS = frozenset({"initialize", "session/open", "session/close"})
# Answered at once from the daemon's start, while it still loads its sessions and tools.
EARLY_METHODS = frozenset({"initialize", "daemon/status", "daemon/shutdown"})
DETECT_LIMIT = 5000  # files session/open looks at to tell the project's languages


def method(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        HANDLERS[name] = handler
        return handler

    return register


def outlives_client(item: Incoming) -> bool:
    """Whether a request runs to completion when its client disconnects: it may change
    files, or it changes the connection's state that later requests wait for."""
    if item.method in STATEFUL_METHODS:
        return True
    if item.method != "tools/call":
        return False  # lua/eval included: a script's git write, once started, still finishes
    try:
        params = item.decode(ToolsCallParams)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    return REGISTRY.writes(params.name, params.arguments)


def require_session(conn: Connection) -> Session:
    if conn.session is None or not conn.session.alive:
        raise ToolError(
            ErrorKind.NO_SESSION, "This connection has no session; call session/open first."
        )
    return conn.session


@method("initialize")
async def initialize(conn: Connection, item: Incoming) -> InitializeResult:
    params = item.params(InitializeParams)
    conn.capabilities = params.capabilities
    if conn.session is not None:  # re-bind so progress forwarding follows the capability
        conn.bind(conn.session)
    return InitializeResult(
        protocol_version=PROTOCOL_VERSION,
        server=ServerInfo(name="codeward", version=__version__),
        pid=os.getpid(),
    )


@method("session/open")
async def session_open(conn: Connection, item: Incoming) -> SessionOpenResult:
    params = item.params(SessionOpenParams)
    manager = conn.daemon.sessions
    if isinstance(params.session_id, str):
        session, created = manager.get(params.session_id), False
        session.lsp.restart_failed()
    elif isinstance(params.root, str) and params.root:
        session, created = await manager.open(params.root)
    else:
        raise RpcError(
            ErrorCode.INVALID_PARAMS,
            "Invalid params for session/open: give `root` or `session_id`.",
        )
    policy = session.policy
    if not isinstance(params.policy, msgspec.UnsetType):
        asked = PolicyConfig(
            git_write=params.policy.git_write or policy.git_write,  # type: ignore[arg-type]
            git_destructive=params.policy.git_destructive or policy.git_destructive,  # type: ignore[arg-type]
            edits=params.policy.edits or policy.edits,  # type: ignore[arg-type]
        )
        policy = policy.narrowed(asked)
    conn.policy = policy
    conn.bind(session)
    return SessionOpenResult(
        session_id=session.id,
        root=str(session.root),
        created=created,
        languages=session.lsp.project_languages(limit=DETECT_LIMIT),
        trusted=session.trusted,
    )


@method("session/close")
async def session_close(conn: Connection, item: Incoming) -> dict[str, Any]:
    params = item.params(SessionCloseParams)
    session = require_session(conn)
    conn.unbind()
    conn.policy = None
    if params.terminate:
        session.stop()
        stopped = session.stopped
        del session  # not held while its end collects it (see `SessionManager._run_session`)
        await stopped.wait()
    return {}


@method("session/list")
async def session_list(conn: Connection, item: Incoming) -> dict[str, Any]:
    return {"sessions": [s.info() for s in conn.daemon.sessions.sessions.values()]}


@method("trust/list")
async def trust_list(conn: Connection, item: Incoming) -> TrustListResult:
    return TrustListResult(roots=[str(r) for r in conn.daemon.sessions.trust.listed()])


@method("trust/set")
async def trust_set(conn: Connection, item: Incoming) -> TrustSetResult:
    """Trust or revoke a root; live sessions at or below it restart their servers at once."""
    params = item.params(TrustSetParams)
    manager = conn.daemon.sessions
    root, changed = manager.trust.change(params.root, params.trusted)
    restarted = await manager.apply_trust()
    by = manager.trust.trusted_by(root)
    return TrustSetResult(
        root=str(root),
        trusted=by is not None,
        changed=changed,
        restarted=restarted,
        inherited=by is not None and by != root,
    )


@method("daemon/status")
async def daemon_status(conn: Connection, item: Incoming) -> dict[str, Any]:
    return conn.daemon.status()


@method("daemon/shutdown")
async def daemon_shutdown(conn: Connection, item: Incoming) -> dict[str, Any]:
    conn.daemon.request_stop()
    return {}


@method("tools/list")
async def tools_list(conn: Connection, item: Incoming) -> ToolsListResult:
    params = item.params(ToolsListParams)
    fmt = ToolFormat(params.format)
    return ToolsListResult(
        tools=[render_tool(t.spec(), fmt, strict=params.strict) for t in REGISTRY]
    )


@method("tools/call")
async def tools_call(conn: Connection, item: Incoming) -> Any:
    params = item.params(ToolsCallParams)
    session = require_session(conn)
    tool = REGISTRY.get(params.name)
    arguments = REGISTRY.validate(tool, params.arguments)
    ctx = ToolContext(session, conn, conn.policy)
    # Straight to the tool (the registry is its declaration, not a layer in between). A
    # tool that writes shields the write itself (run_git, the edit layer): everything
    # before it stays cancellable, so $/cancelRequest reaches the language server.
    try:
        result = await tool.handler(ctx, arguments)
    except ToolError as exc:
        raise await tool.explained(ctx, arguments, exc) from None
    return tool.finish(ctx, result)


@method("lua/eval")
async def lua_eval(conn: Connection, item: Incoming) -> LuaEvalResult:
    params = item.params(LuaEvalParams)
    session = require_session(conn)
    from codeward.daemon.tools.lua_tool import evaluate  # loaded with the services

    result, logs = await evaluate(session, conn, conn.policy, params.source, params.args)
    return LuaEvalResult(result=result, logs=logs)


DISPATCH = Dispatch(HANDLERS, STATEFUL_METHODS, outlives_client, EARLY_METHODS)
