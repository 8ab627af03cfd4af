"""What a server sends on its own: the answers to its requests (settings, registrations,
progress tokens, workspace folders, edits, messages) and its notifications, handed to the
part of the actor each concerns."""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeward.daemon.lsp.capabilities import ServerCapabilities
from codeward.daemon.lsp.capture import REFUSED, EditCapture
from codeward.daemon.lsp.changes import Changes
from codeward.daemon.lsp.connection import ResponseError
from codeward.daemon.lsp.freshness import Freshness
from codeward.daemon.lsp.supervisor import workspace_folders
from codeward.daemon.lsp.sync import DocumentSync
from codeward.daemon.lsp.types import (
    ConfigurationParams,
    LogMessageParams,
    ProgressParams,
    PublishDiagnosticsParams,
    RegistrationParams,
    UnregistrationParams,
    WorkDoneProgressCreateParams,
)
from codeward.protocol.messages import Incoming

log = logging.getLogger("codeward.lsp")

METHOD_NOT_FOUND = -32601


class ServerRequests:
    def __init__(
        self,
        name: str,
        root: Path,
        settings: Callable[[], dict[str, Any]],
        capabilities: Callable[[], ServerCapabilities],
        changes: Changes,
        sync: DocumentSync,
        freshness: Freshness,
        capture: Callable[[], EditCapture | None],
    ) -> None:
        self.name = name
        self.root = root
        self.messages: collections.deque[str] = collections.deque(maxlen=50)
        self._settings = settings
        self._capabilities = capabilities
        self._changes = changes
        self._sync = sync
        self._freshness = freshness
        self._capture = capture

    def _setting(self, section: str | None) -> Any:
        value: Any = self._settings()
        if not section:
            return value
        for part in section.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def on_request(self, method: str, message: Incoming) -> Any:
        """The answer to the server's request (a value, or an awaitable of it)."""
        if method == "workspace/configuration":
            items = message.decode(ConfigurationParams).items
            return [self._setting(item.section) for item in items]
        if method == "client/registerCapability":
            capabilities = self._capabilities()
            for reg in message.decode(RegistrationParams).registrations:
                capabilities.register(reg.id, reg.method, reg.register_options)
            self._changes.touch()
            return None
        if method == "client/unregisterCapability":
            capabilities = self._capabilities()
            for unreg in message.decode(UnregistrationParams).unregisterations:
                capabilities.unregister(unreg.id)
            self._changes.touch()
            return None
        if method == "window/workDoneProgress/create":
            self._freshness.on_created(message.decode(WorkDoneProgressCreateParams).token)
            return None
        if method == "workspace/workspaceFolders":
            return workspace_folders(self.root)
        if method == "workspace/applyEdit":
            capture = self._capture()  # the command running, if any
            return REFUSED if capture is None else capture.receive(message.decode())
        if method == "window/showMessageRequest":
            params = message.decode()
            self.messages.append(str(params.get("message", "")))
            return None
        if method == "window/showDocument":
            return {"success": False}
        if method.endswith("/refresh"):  # diagnostics, semantic tokens, code lens, inlay hints
            self._sync.changed_elsewhere()
            return None
        raise ResponseError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def on_notification(self, method: str, message: Incoming) -> None:
        if self._freshness.listens(method):
            self._freshness.observe(method, message.decode())
        if method == "textDocument/publishDiagnostics":
            params = message.decode(PublishDiagnosticsParams)
            version = params.version
            if version is None:
                doc = self._sync.get(params.uri)
                version = doc.version if doc is not None else None
            self._freshness.on_publish(params, version)
        elif method == "$/progress":
            self._freshness.on_progress(message.decode(ProgressParams))
        elif method in ("window/logMessage", "window/showMessage"):
            params = message.decode(LogMessageParams)
            self.messages.append(params.message)
            log.debug("%s: %s", self.name, params.message)
