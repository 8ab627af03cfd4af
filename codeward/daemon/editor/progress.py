"""The servers' work-done progress, to the editors it concerns.

A request's progress goes to the editor that asked: the `workDoneToken` an editor's request
carries is sent to the server as `codeward-editor-<connection>-<token>` (`own_token`), so
the progress the session publishes under it is told back to that editor only, under its own
token. Any other progress is the server's own work (indexing, loading the project) and goes
to every editor of the root: each editor that declared `window.workDoneProgress` gets it
under a token made with `window/workDoneProgress/create`, its `begin` sent once the editor
answered that request, in order.

The servers' messages for the people (`window/showMessage`, `window/logMessage`) come the
same way: the session hands one to the editors whose request was in flight on that server
when it was sent, else to every editor of the root (`notice`). A server's question
(`window/showMessageRequest`) is offered likewise (`lsp.questions`): the editor that takes it
asks its person, and the action item chosen goes back to the server (null when the editor
answers with an error, takes too long or goes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from codeward.daemon.lsp.service import Question
from codeward.protocol.lsp import Reply

PREFIX = "codeward-editor-"
Send = Callable[[str, Any], None]  # a notification to the editor
Ask = Callable[[str, Any], Awaitable[Reply | None]]  # a request to the editor, its reply


class Progress:
    """One editor's share of its roots' progress (see the module docstring)."""

    def __init__(
        self, connection: int, supported: bool, send: Send, ask: Ask, questions: bool = False
    ) -> None:
        self.mine = f"{PREFIX}{connection}-"
        self.supported = supported  # the editor declared window.workDoneProgress
        self.questions = questions  # it declared window.showMessage (showMessageRequest)
        self.send = send
        self.ask = ask
        self.tokens: dict[str, int | str] = {}  # rewritten -> the editor's own token
        self._made: dict[tuple[str, str], str] = {}  # (server, its token) -> the editor's
        self._out, self._in = trio.open_memory_channel[tuple[str, str, dict[str, Any]]](
            float("inf")
        )
        self._numbers = 0

    def rewrite(self, token: int | str) -> str:
        """An editor request's token, as sent to the server."""
        rewritten = f"{self.mine}{token!s}"
        self.tokens[rewritten] = token
        return rewritten

    def published(self, params: dict[str, Any]) -> None:
        """A progress event of a session (its listener: called in the session's task)."""
        token = params.get("token")
        value = {k: params[k] for k in ("kind", "title", "message", "percentage")
                 if params.get(k) is not None}  # fmt: skip
        if isinstance(token, str) and token.startswith(PREFIX):
            original = self.tokens.get(token)
            if original is not None:  # progress of this editor's request
                self.send("$/progress", {"token": original, "value": value})
                if params.get("kind") == "end":
                    self.tokens.pop(token, None)
            return  # (another editor's request)
        if self.supported:
            key = (str(params.get("session_id", "")), f"{params.get('server')}:{token!s}")
            self._out.send_nowait((key[0], key[1], value))

    def notice(self, params: dict[str, Any]) -> None:
        """A server's message for the people (the session's notice listener)."""
        method, message = params.get("notice"), params.get("message")
        question = params.get("question")
        if isinstance(question, Question):
            if question.stage == "asked" or self.questions:
                server = str(params.get("server"))
                question.take(lambda asked: self._choose(server, asked))
            return
        if method in ("window/showMessage", "window/logMessage") and isinstance(message, str):
            kind = params.get("type")
            self.send(method, {"type": kind if isinstance(kind, int) else 4,
                               "message": f"{params.get('server')}: {message}"})  # fmt: skip

    async def _choose(self, server: str, asked: dict[str, Any]) -> Any:
        """Ask the person (`window/showMessageRequest`): the action item chosen, or None."""
        params = {"type": asked["type"], "message": f"{server}: {asked['message']}"}
        if asked.get("actions"):
            params["actions"] = asked["actions"]
        reply = await self.ask("window/showMessageRequest", params)
        if reply is None or reply.error is not None or reply.result is None:
            return None
        try:
            return msgspec.json.decode(reply.result)
        except msgspec.DecodeError:
            return None

    async def run(self) -> None:
        """Tell the root's own progress, in order (owner: the dialect's background scope)."""
        async for session, server_token, value in self._in:
            key = (session, server_token)
            made = self._made.get(key)
            if made is None:
                if value.get("kind") != "begin":
                    continue  # begun before this editor came: it sees the next one
                self._numbers += 1
                made = f"codeward-{self._numbers}"
                await self.ask("window/workDoneProgress/create", {"token": made})
                self._made[key] = made
            if value.get("kind") == "begin" and "title" not in value:
                value = {**value, "title": server_token.split(":", 1)[0]}
            self.send("$/progress", {"token": made, "value": value})
            if value.get("kind") == "end":
                self._made.pop(key, None)
