"""The MCP dialect of a connection: `initialize`, `tools/list`, `tools/call` on the session of
the root that the binding line names, with cancellation and progress.

`McpDialect.receive` takes each line of a connection whose first line opened MCP
(`codeward.protocol.mcp.is_opening`); tool calls run in the connection's request nursery,
so a disconnect cancels them as it cancels native requests.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from codeward import __version__
from codeward.daemon.tools.registry import REGISTRY, Tool, ToolContext
from codeward.protocol import mcp
from codeward.protocol.errors import ErrorCode, ErrorKind, ToolError, find_tool_error
from codeward.protocol.framing import Parts
from codeward.protocol.mcp_greeting import SERVER_NAME, instructions
from codeward.protocol.messages import Id
from codeward.protocol.tools import ToolFormat, render_tool

if TYPE_CHECKING:
    from codeward.daemon.config import PolicyConfig
    from codeward.daemon.session import Session, SessionManager

log = logging.getLogger(__name__)
STOPPING = "The daemon is stopping; call the tool again once it is back."


class _Sessions(Protocol):
    @property
    def sessions(self) -> SessionManager: ...

    @property
    def sessions_loaded(self) -> trio.Event: ...

    @property
    def loaded(self) -> trio.Event: ...

    def start_early(self, root: str) -> None: ...


class Link(Protocol):
    """The connection the dialect speaks over (`daemon.connection.Connection`), as it uses it:
    named by this protocol so that the connection, which makes the dialect, is imported by
    nothing it imports."""

    @property
    def id(self) -> int: ...

    @property
    def daemon(self) -> _Sessions: ...

    @property
    def session(self) -> Session | None: ...

    @property
    def policy(self) -> PolicyConfig | None: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def gone(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    @property
    def can_confirm(self) -> bool: ...

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool:
        """Ask the client `client/confirm` (see `tools.registry.Caller`)."""
        ...

    def send_body(self, body: bytes | Parts) -> None: ...

    def request_started(self) -> None: ...

    def request_finished(self) -> None: ...

    def bind(self, session: Session) -> None: ...

    def hand_over(self, ack: bytes, ended: bytes, unread: bytes = b"") -> bool:
        """Serve the rest on the stdin and stdout the first line passed (see
        `Connection.hand_over`)."""
        ...


class _Call:
    """A tool call in flight: its cancel scope, whether it may change files, and, if the
    client asked, its progress."""

    def __init__(self, token: int | str | None, writes: bool) -> None:
        self.scope = trio.CancelScope()
        self.token = token
        self.writes = writes  # a disconnect lets it finish
        self.progress = 0


class McpDialect:
    def __init__(self, conn: Link) -> None:
        self.conn = conn
        self.machine = mcp.McpMachine()
        self.root: str | None = None
        self._bound = trio.Event()  # the binding line's session is open (or failed)
        self._bind_error: ToolError | None = None
        self._calls: dict[Id, _Call] = {}
        # the daemon's requests to the client (elicitations) awaiting a reply, by id
        self._asked: dict[Id, trio.MemorySendChannel[bytes | None]] = {}
        # The model was told that the root's servers run restricted (said once, not on
        # every answer; again after an answer from unrestricted servers).
        self._told_restricted = False
        self._answered: Id | None = None  # the handoff's `initialize`, answered by the pump
        REGISTRY.watch(self)

    # -- lines in ---------------------------------------------------------------------------

    def receive(self, frame: bytes, requests: trio.Nursery) -> None:
        event = self.machine.receive(frame)
        if event is None:
            return
        if isinstance(event, mcp.ListTools | mcp.CallTool) and not self.conn.daemon.loaded.is_set():
            requests.start_soon(self._when_loaded, event, requests)  # the tools are not there yet
        else:
            self._event(event, requests)

    async def _when_loaded(self, event: mcp.Event, requests: trio.Nursery) -> None:
        await self.conn.daemon.loaded.wait()
        self._event(event, requests)

    def _event(self, event: mcp.Event, requests: trio.Nursery) -> None:
        if isinstance(event, mcp.Send):
            self.conn.send_body(event.data)
        elif isinstance(event, mcp.Bind):
            if self.root is None:
                self.root = event.root
                self.conn.daemon.start_early(event.root)
                requests.start_soon(self._bind)
        elif isinstance(event, mcp.Handoff):
            if self.conn.hand_over(self.machine.handoff_message(event.id),
                                   self.machine.ended_message(), event.pending):  # fmt: skip
                self.root = event.root
                self._answered = event.answered
                self.conn.daemon.start_early(event.root)
                requests.start_soon(self._bind)
            else:
                self.conn.send_body(self.machine.error_message(
                    event.id, ErrorCode.INVALID_REQUEST, "The handoff carries stdin and stdout: "
                    "two pipes or sockets (SCM_RIGHTS); send the binding line instead."
                ))  # fmt: skip
        elif isinstance(event, mcp.Initialize):
            self._initialize(event)
        elif isinstance(event, mcp.ListTools):
            tools = [_tool(spec) for spec in (t.spec() for t in REGISTRY)]
            self.conn.send_body(self.machine.tools_message(event.id, tools))
        elif isinstance(event, mcp.CallTool):
            self._start_call(event, requests)
        elif isinstance(event, mcp.Cancel):
            call = self._calls.get(event.request_id)
            if call is not None:
                call.scope.cancel()
        elif isinstance(event, mcp.Reply):
            waiting = self._asked.pop(event.id, None)
            if waiting is not None:
                waiting.send_nowait(event.result)  # (a buffer of one: never blocks)

    def _initialize(self, event: mcp.Initialize) -> None:
        if not self._bound.is_set() and self.root is None:
            self._bound.set()  # no binding line: calls will say what is missing
        if self._answered is not None and event.id == self._answered:
            self._answered = None  # `codeward mcp` answered it while the daemon started
            return
        server = mcp.Implementation(SERVER_NAME, __version__)
        message = self.machine.initialize_message(event.id, server, instructions(self.root))
        self.conn.send_body(message)

    def _start_call(self, event: mcp.CallTool, requests: trio.Nursery) -> None:
        if event.name not in REGISTRY:
            known = ", ".join(t.name for t in REGISTRY)
            message = f"Unknown tool: {event.name!r}; call tools/list (known: {known})."
            self.conn.send_body(self.machine.error_message(event.id, ErrorCode.INVALID_PARAMS,
                                                           message))  # fmt: skip
            return
        if event.id in self._calls:
            self.conn.send_body(self.machine.error_message(
                event.id, ErrorCode.INVALID_REQUEST, "This id is already in flight; use a new id."
            ))  # fmt: skip
            return
        if self.conn.stopping:
            self.conn.send_body(self.machine.error_message(
                event.id, ErrorCode.REQUEST_CANCELLED, STOPPING
            ))  # fmt: skip
            return
        call = _Call(event.progress_token, REGISTRY.writes(event.name, event.arguments))
        if self.conn.gone and not call.writes:
            return  # read after its client left: nobody wants its answer
        self._calls[event.id] = call
        self.conn.request_started()
        requests.start_soon(self._call, event, call)

    def cancel(self, *, writes: bool) -> None:
        """Cancel the calls in flight that change no files (`writes`: every call)."""
        for call in self._calls.values():
            if writes or not call.writes:
                call.scope.cancel()

    # -- the session ------------------------------------------------------------------------

    async def _bind(self) -> None:
        try:
            session = await self._open()
            # an agent's questions are about the root's main languages: their servers
            # start now, not on the first call (which may wait for the tools to load)
            session.lsp.warm()
        except ToolError as exc:
            self._bind_error = exc
        finally:
            self._bound.set()

    async def _open(self) -> Session:
        assert self.root is not None
        if not self.conn.daemon.sessions_loaded.is_set():
            await self.conn.daemon.sessions_loaded.wait()
        session, _ = await self.conn.daemon.sessions.open(self.root)
        self.conn.bind(session)
        session.attach(self.conn.id, self._on_progress)
        return session

    async def _session(self) -> Session:
        if not self._bound.is_set():  # (a set event's wait() is a needless trip round the loop)
            await self._bound.wait()
        if self.root is None:
            raise ToolError(
                ErrorKind.NO_SESSION,
                "This MCP connection names no project; connect through `codeward mcp`, "
                f"which sends the {mcp.BIND_METHOD} line with the root first.",
            )
        if self._bind_error is not None:
            raise self._bind_error
        session = self.conn.session
        if session is None or session.stopped.is_set():  # closed meanwhile: open it again
            session = await self._open()
        return session

    # -- tool calls -------------------------------------------------------------------------

    async def _call(self, event: mcp.CallTool, call: _Call) -> None:
        try:
            with call.scope:
                try:
                    body = await self._run(event)
                except Exception:
                    log.exception("internal error in tools/call %s", event.name)
                    body = self.machine.error_message(
                        event.id,
                        ErrorCode.INTERNAL_ERROR,
                        "Internal error; the daemon log has details.",
                    )
                self.conn.send_body(body)
            # cancelled by notifications/cancelled or a disconnect: MCP sends no reply
            if call.scope.cancelled_caught and self.conn.stopping:
                self.conn.send_body(self.machine.error_message(
                    event.id, ErrorCode.REQUEST_CANCELLED, STOPPING
                ))  # fmt: skip
        finally:
            self._calls.pop(event.id, None)
            self.conn.request_finished()

    async def _run(self, event: mcp.CallTool) -> bytes:
        try:
            session = await self._session()
            tool = REGISTRY.get(event.name)
            _stated(tool, event.arguments)
            arguments = REGISTRY.validate(tool, event.arguments)
            ctx = ToolContext(session, self, self.conn.policy)
            try:
                result = tool.finish(ctx, await tool.handler(ctx, arguments))
            except ToolError as exc:
                raise await tool.explained(ctx, arguments, exc) from None
        except ToolError as exc:
            return self._error_result(event.id, exc)
        except ExceptionGroup as group:
            exc = find_tool_error(group)
            if exc is None:
                raise
            return self._error_result(event.id, exc)
        told, restricted = self._told_restricted, bool(result.get("restricted"))
        if tool.servers:
            self._told_restricted = restricted
        from codeward.protocol.render.tool_text import tool_text  # loaded with the services

        # (the text is rendered from plain data: a bulk result's rows are Structs)
        text = tool_text(event.name, msgspec.to_builtins(result), told_restricted=told)
        # a write the tool refused (a `safe` edit that would break something) is an error
        # to the model, with what it found
        return self.machine.result_message(event.id, text, result,
                                           is_error=result.get("refused") is True)  # fmt: skip

    def _error_result(self, msg_id: Id, exc: ToolError) -> bytes:
        from codeward.protocol.render.tool_text import error_text

        text = error_text(exc.message, exc.kind.value, exc.details)
        return self.machine.result_message(msg_id, text, None, is_error=True)

    # -- approvals: the client's elicitation ------------------------------------------------

    @property
    def can_confirm(self) -> bool:
        """Whether the client declared form elicitation (and is still there)."""
        return self.machine.elicitation and not self.conn.closed

    async def confirm(self, session_id: str, tool: str, summary: str, argv: list[str]) -> bool:
        """Ask the user through the client's `elicitation/create`: True only when they
        accepted and approved; False on decline, cancel, no answer in time or a disconnect."""
        if not self.can_confirm:
            return False
        session = self.conn.session
        policy = self.conn.policy or (session.policy if session is not None else None)
        timeout = policy.confirm_timeout if policy is not None else 60.0
        msg_id, body = self.machine.elicit_message(approval_message(tool, summary), APPROVAL)
        send, receive = trio.open_memory_channel[bytes | None](1)
        self._asked[msg_id] = send
        try:
            self.conn.send_body(body)
            with trio.move_on_after(timeout):
                raw = await receive.receive()
                return approved(raw)
            return False
        finally:
            self._asked.pop(msg_id, None)

    # -- notifications out ------------------------------------------------------------------

    def _on_progress(self, params: dict[str, Any]) -> None:
        """Language-server work-done progress, to every call in flight that carried a token."""
        message = _progress_text(params)
        for call in list(self._calls.values()):
            if call.token is not None:
                call.progress += 1
                self.conn.send_body(self.machine.progress_message(call.token, call.progress,
                                                                  message))  # fmt: skip

    def tools_changed(self) -> None:
        if self.machine.initialized and not self.conn.closed:
            self.conn.send_body(self.machine.list_changed_message())


def _tool(spec: Any) -> mcp.Tool:
    shown = render_tool(spec, ToolFormat.MCP)
    return mcp.Tool(shown["name"], shown["description"], shown["inputSchema"],
                    shown.get("outputSchema", msgspec.UNSET), shown.get("title", msgspec.UNSET),
                    shown.get("annotations", msgspec.UNSET))  # fmt: skip


APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run it (true) or refuse it (false).",
            "default": True,
        }
    },
    "required": ["approve"],
}


def approval_message(tool: str, summary: str) -> str:
    """What the user reads: the command (or edit) and its tier, from the tool's summary."""
    return f"codeward {tool}: approve {summary}?"


def approved(raw: bytes | None) -> bool:
    """Whether an elicitation's result accepts: `action: accept` with `approve` not false."""
    if raw is None:
        return False
    try:
        result = msgspec.json.decode(raw, type=mcp.ElicitResult)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    if result.action != "accept":
        return False
    return (result.content or {}).get("approve", True) is True


def _stated(tool: Tool, arguments: dict[str, Any]) -> None:
    """On MCP a tool that can write has no default for its write switch: the call names it."""
    switch = tool.write_switch
    if switch is not None and arguments.get(switch) is None:
        if switch == "mode":
            how = ('`"apply"` writes, `"preview"` only shows the diagnostics, `"safe"` writes '
                   "only when it breaks nothing")  # fmt: skip
        else:
            how = "true writes the change, false only shows its diff"
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{tool.name} needs `{switch}` here, which says whether it writes: {how}; call "
            "it again with it.",
        )


def _progress_text(params: dict[str, Any]) -> str:
    """`basedpyright: Analyzing 40%`, `gopls: done`."""
    parts = [str(params[k]) for k in ("title", "message") if params.get(k)]
    if isinstance(params.get("percentage"), int):
        parts.append(f"{params['percentage']}%")
    if params.get("kind") == "end":
        parts.append("done")
    return f"{params.get('server', 'server')}: {' '.join(parts) or params.get('kind', '')}"
