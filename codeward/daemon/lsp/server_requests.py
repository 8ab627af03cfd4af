"""What a server sends on its own: the answers to its requests (settings, registrations,
progress tokens, workspace folders, edits, messages) and its notifications, handed to the
part of the actor each concerns."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types as lsp

from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.capture import REFUSED, EditCapture
from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.connection import ResponseError
from codeward.daemon.lsp.early_initialize import setting
from codeward.daemon.lsp.freshness import Freshness, left_out
from codeward.daemon.lsp.initialize import folders
from codeward.daemon.lsp.questions import Question
from codeward.daemon.lsp.shapes import OffSpec, lenient, structure, unstructure
from codeward.daemon.lsp.sync import DocumentSync
from codeward.protocol.messages import Incoming

log = logging.getLogger("codeward.lsp")

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
T = TypeVar("T")


class ServerRequests:
    def __init__(
        self,
        name: str,
        folders: Callable[[], Sequence[Path]],
        settings: Callable[[], dict[str, Any]],
        capabilities: Callable[[], Capabilities],
        changes: Changes,
        sync: DocumentSync,
        freshness: Freshness,
        capture: Callable[[], EditCapture | None],
        notice: Callable[[str, dict[str, Any]], None],
        question: Callable[[dict[str, Any]], Question],
    ) -> None:
        self.name = name
        self._folders = folders  # its workspace folders now
        self._settings = settings
        self._capabilities = capabilities
        self._changes = changes
        self._sync = sync
        self._freshness = freshness
        self._capture = capture
        self._notice = notice  # a message for the people (window/showMessage, logMessage)
        self._question = question  # a question for them, offered to the editors

    def on_request(self, method: str, message: Incoming) -> Any:
        """The answer to the server's request (a value, or an awaitable of it)."""
        if method == "workspace/configuration":
            items = self._params(message, lsp.ConfigurationParams).items
            return [setting(self._settings(), item.section) for item in items]
        if method == "client/registerCapability":
            self._register(message)
            return None
        if method == "client/unregisterCapability":
            capabilities = self._capabilities()
            for unreg in self._params(message, lsp.UnregistrationParams).unregisterations:
                capabilities.unregister(unreg.id)
            self._changes.touch()
            return None
        if method == "window/workDoneProgress/create":
            self._freshness.on_created(
                self._params(message, lsp.WorkDoneProgressCreateParams).token
            )
            return None
        if method == "workspace/workspaceFolders":
            return unstructure(folders(self._folders()))
        if method == "workspace/applyEdit":
            capture = self._capture()  # the command running, if any
            return REFUSED if capture is None else capture.receive(message.decode())
        if method == "window/showMessageRequest":
            shown = self._params(message, lsp.ShowMessageRequestParams)
            log.debug("%s: %s", self.name, shown.message)
            said = {"type": int(shown.type), "message": shown.message}
            actions = message.decode().get("actions") or []  # (as sent: extra properties too)
            question = self._question({**said, "actions": actions})
            if question.taken:  # an editor asks its person
                return _chosen(question, actions)
            self._notice("window/showMessage", said)  # no one chooses for it: no action
            return None
        if method == "window/showDocument":
            return unstructure(lsp.ShowDocumentResult(success=False))
        if method.endswith("/refresh"):  # diagnostics, semantic tokens, code lens, inlay hints
            self._sync.changed_elsewhere()
            return None
        raise ResponseError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _params(self, message: Incoming, type_: type[T]) -> T:
        """A server request's params as their lsprotocol type; off the spec, the
        invalid-params error answers it (and says so in the log)."""
        try:
            return structure(message.decode(), type_)
        except OffSpec as exc:
            log.warning("%s: %s params off the LSP spec: %s", self.name, message.method, exc.detail)
            raise ResponseError(INVALID_PARAMS, f"{message.method}: {exc.detail}") from None

    def _register(self, message: Incoming) -> None:
        """Record each registration; options off the LSP spec are left out (logged)."""
        capabilities = self._capabilities()
        for reg in self._params(message, lsp.RegistrationParams).registrations:
            detail = capabilities.register(reg.id, reg.method, reg.register_options)
            if detail is not None:
                log.warning(
                    "%s: %s registration off the LSP spec: %s", self.name, reg.method, detail
                )
        self._changes.touch()

    def on_notification(self, method: str, message: Incoming) -> None:
        if self._freshness.listens(method):
            self._freshness.observe(method, message.decode())
        if method == "textDocument/publishDiagnostics":
            try:
                params, wrong = lenient(
                    message.decode(), lsp.PublishDiagnosticsParams, "diagnostics", lsp.Diagnostic
                )
            except OffSpec as exc:
                log.warning("%s: %s off the LSP spec: %s", self.name, method, exc.detail)
                return
            left_out(self.name, method, wrong)
            version = params.version
            if version is None:
                doc = self._sync.get(params.uri)
                version = doc.version if doc is not None else None
            self._freshness.on_publish(params, version)
        elif method == "$/progress":
            progress = self._notice_params(message, lsp.ProgressParams)
            if progress is not None:
                self._freshness.on_progress(progress)
        elif method in ("window/logMessage", "window/showMessage"):
            logged = self._notice_params(message, lsp.LogMessageParams)
            if logged is not None:
                log.debug("%s: %s", self.name, logged.message)
                self._notice(method, {"type": int(logged.type), "message": logged.message})

    def _notice_params(self, message: Incoming, type_: type[T]) -> T | None:
        """A notification's params as their lsprotocol type; None (logged) off the spec."""
        try:
            return structure(message.decode(), type_)
        except OffSpec as exc:
            log.warning("%s: %s off the LSP spec: %s", self.name, message.method, exc.detail)
            return None


async def _chosen(question: Question, actions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The server's own action item the person chose (by its title), or None."""
    item = await question.answer()
    title = item.get("title") if isinstance(item, dict) else None
    return next((action for action in actions if action.get("title") == title), None)
