"""The `initialize` request a server started early is sent at once (`early.spawn`), so its
own start and its answer overlap the daemon's loading of its modules.

Built without lsprotocol (the daemon has not loaded it then): `initialize_params` is the
plain data `initialize.initialize_params` gives for the same roots and options (tests check
it, `initialize.py` stays the source of truth), its client capabilities shipped as data
(`client_capabilities.json`, written from `initialize.initialize_params`). The session
that takes the process compares what it would send with what was sent (`normalised`) and
adopts the answer only when they are equal.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from codeward.protocol.framing import Framing, encode_frame

# The request's id; the connection that takes the process numbers its own after it.
INITIALIZE_ID = 1
CAPABILITIES = Path(__file__).with_name("client_capabilities.json")
CLIENT_INFO = {"name": "codeward", "version": "0.1.0"}


def initialize_params(roots: Sequence[Path], init_options: Any = None) -> dict[str, Any]:
    """The params of `initialize` for a server of `roots` (the first its root), as
    `initialize.initialize_params` makes them (normalised)."""
    root = roots[0]
    return {
        "processId": os.getpid(),
        "clientInfo": dict(CLIENT_INFO),
        "locale": "en",
        "rootPath": str(root),
        "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": r.as_uri(), "name": r.name} for r in roots],
        "capabilities": msgspec.json.decode(CAPABILITIES.read_bytes()),
        "initializationOptions": init_options,
        "trace": "off",
    }


def request(params: dict[str, Any]) -> bytes:
    """The framed `initialize` request (id `INITIALIZE_ID`) carrying `params`."""
    body = {"jsonrpc": "2.0", "id": INITIALIZE_ID, "method": "initialize", "params": params}
    return encode_frame(Framing.CONTENT_LENGTH, msgspec.json.encode(body))


def normalised(params: Any) -> Any:
    """`params` as the server reads them: JSON values (an enum as its value, a tuple as a
    list), so that two builds of the same params compare equal."""
    return msgspec.json.decode(msgspec.json.encode(params))


def differences(sent: Any, wanted: Any) -> list[str]:
    """The top-level fields in which the normalised params `sent` and `wanted` differ."""
    if not isinstance(sent, dict) or not isinstance(wanted, dict):
        return ["params"]
    return sorted(k for k in sent.keys() | wanted.keys() if sent.get(k) != wanted.get(k))


def setting(settings: Any, section: str | None) -> Any:
    """The answer to one item of `workspace/configuration`: the `section` (dotted) of
    `settings`, all of them without one, None when they have no such section."""
    value = settings
    if not section:
        return value
    for part in section.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
