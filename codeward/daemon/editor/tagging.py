"""The server each item of an answer came from, carried in the item's `data` so that its
follow-up (`completionItem/resolve`, `codeAction/resolve`, `inlayHint/resolve`, the call
and type hierarchies' calls) goes back to that server, whatever answered since.

An item's `data` is sent to the editor wrapped, `{"codewardServer": NAME, "codewardRoot": N,
"data": DATA}` (N: the editor's root, numbered by the `Forwarder`), and put back as it was
before the server sees the follow-up. Items without `data` are left as they are: their
follow-up goes to the server that answered the last request of their kind. A completion
list's `itemDefaults.data` (what its items without `data` of their own take) is wrapped too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
from msgspec import Raw

SERVER = "codewardServer"
ROOT = "codewardRoot"
COMPLETION = "textDocument/completion"
ONE = frozenset({"completionItem/resolve", "codeAction/resolve", "inlayHint/resolve"})
CALLS = {"callHierarchy/incomingCalls": "from", "callHierarchy/outgoingCalls": "to"}
LISTS = frozenset(
    {
        "textDocument/inlayHint",
        "textDocument/codeAction",
        "textDocument/prepareCallHierarchy",
        "textDocument/prepareTypeHierarchy",
        "typeHierarchy/supertypes",
        "typeHierarchy/subtypes",
    }
)
TAGGED = frozenset({COMPLETION, *ONE, *CALLS, *LISTS})  # the answers whose items are tagged
ITEM_PARAMS = frozenset(CALLS) | {"typeHierarchy/supertypes", "typeHierarchy/subtypes"}

_fields = msgspec.json.Decoder(dict[str, Raw])
_lists = msgspec.json.Decoder(list[dict[str, Raw]] | dict[str, Raw] | None)


class Mark:
    """Where items came from: a server of one of the editor's roots (numbered)."""

    __slots__ = ("_head", "root", "server")

    def __init__(self, server: str, root: int) -> None:
        self.server = server
        self.root = root
        name = msgspec.json.encode(server)
        self._head = b'{"%s":%s,"%s":%d,"data":' % (SERVER.encode(), name, ROOT.encode(), root)

    def wrap(self, data: Any) -> Any:
        """`data` wrapped (raw JSON stays raw: spliced, never decoded)."""
        if isinstance(data, Raw):
            return Raw(b"".join((self._head, memoryview(data), b"}")))
        return {SERVER: self.server, ROOT: self.root, "data": data}


def tag(method: str, result: Any, mark: Mark) -> Any:
    """`method`'s result (data) with its items' `data` wrapped."""
    for item in _items(method, result):
        if "data" in item:
            item["data"] = mark.wrap(item["data"])
    return result


def tag_raw(method: str, result: Raw, mark: Mark) -> Any:
    """`method`'s raw result with its items' `data` wrapped; only their fields are decoded
    (their values stay raw JSON), and only when the result has a `data` at all."""
    if b'"data"' not in bytes(result):  # (a copy: far cheaper than a decode)
        return result
    try:
        shaped = _shaped(method, result)
    except msgspec.DecodeError:  # (off the LSP shape: as the server sent it)
        return result
    return tag(method, shaped, mark)


def untag(method: str, params: Any) -> tuple[str, int] | None:
    """The server and root a follow-up's item names (its `data` put back as it was), or
    None when it names none."""
    item: Any = params
    if method in ITEM_PARAMS and isinstance(params, dict):
        item = params.get("item")
    if not isinstance(item, dict):
        return None
    data = item.get("data")
    if isinstance(data, dict) and isinstance(data.get(SERVER), str) and "data" in data:
        root = data.get(ROOT)
        item["data"] = data["data"]
        return data[SERVER], root if isinstance(root, int) else 0
    return None


def _shaped(method: str, result: Raw) -> Any:
    """A raw result decoded down to its items' fields (as `_items` walks it)."""
    if method in ONE:
        return _fields.decode(result)
    value = _lists.decode(result)
    if method == COMPLETION and isinstance(value, dict):
        for key in ("items", "itemDefaults"):
            if key in value:
                value[key] = _lists.decode(value[key])
    elif method in CALLS and isinstance(value, list):
        key = CALLS[method]
        for call in value:
            if key in call:
                call[key] = _lists.decode(call[key])
    return value


def _items(method: str, result: Any) -> Iterator[dict[str, Any]]:
    """The objects of a result that carry an item's `data`."""
    if method in ONE:
        found: Any = [result]
    elif method == COMPLETION and isinstance(result, dict):
        defaults = result.get("itemDefaults")
        found = [*(result.get("items") or ()), defaults]
    elif method in CALLS and isinstance(result, list):
        key = CALLS[method]
        found = [call.get(key) for call in result if isinstance(call, dict)]
    else:
        found = result if isinstance(result, list) else ()
    return (item for item in found if isinstance(item, dict))
