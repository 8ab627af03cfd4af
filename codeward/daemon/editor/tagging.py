"""The server each item of an answer came from, carried in the item's `data` so that its
follow-up (`completionItem/resolve`, `codeAction/resolve`, `inlayHint/resolve`, the call
and type hierarchies' calls) goes back to that server, whatever answered since.

The first server (of a root) to answer a kind of request on a connection is that kind's
own: its items pass as they came (nothing decoded: the common case of one server per kind
costs nothing), and a follow-up whose item names no server goes to it. Any other server's
items are tagged (`tag`, `tag_raw`): an item's `data` goes to the editor wrapped,
`{"codewardServer": NAME, "codewardRoot": N, "data": DATA}` (N: the editor's root, numbered
by the `Forwarder`), and an item without `data` gets one naming its server alone; `untag`
puts the item back as it was before the server sees its follow-up. A completion list's
`itemDefaults.data` (what its items without `data` of their own take) is wrapped too, and
those items are left to take it.
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

    __slots__ = ("_head", "bare", "root", "server")

    def __init__(self, server: str, root: int) -> None:
        self.server = server
        self.root = root
        name = msgspec.json.encode(server)
        self._head = b'{"%s":%s,"%s":%d,"data":' % (SERVER.encode(), name, ROOT.encode(), root)
        self.bare = Raw(b'{"%s":%s,"%s":%d}' % (SERVER.encode(), name, ROOT.encode(), root))

    def wrap(self, data: Any) -> Any:
        """`data` wrapped (raw JSON stays raw: spliced, never decoded)."""
        if isinstance(data, Raw):
            return Raw(b"".join((self._head, memoryview(data), b"}")))
        return {SERVER: self.server, ROOT: self.root, "data": data}


def tag(method: str, result: Any, mark: Mark, *, raw: bool = False) -> Any:
    """`method`'s result (data; `raw`: its items' values raw JSON) with its items' `data`
    wrapped, or made."""
    defaults = result.get("itemDefaults") if isinstance(result, dict) else None
    inherited = isinstance(defaults, dict) and "data" in defaults  # (items take it)
    bare = mark.bare if raw else {SERVER: mark.server, ROOT: mark.root}
    for item in _items(method, result):
        if "data" in item:
            item["data"] = mark.wrap(item["data"])
        elif not inherited:
            item["data"] = bare
    return result


def tag_raw(method: str, result: Raw, mark: Mark) -> Any:
    """`method`'s raw result tagged (`tag`); only its items' fields are decoded (their
    values stay raw JSON)."""
    try:
        shaped = _shaped(method, result)
    except msgspec.DecodeError:  # (off the LSP shape: as the server sent it)
        return result
    return tag(method, shaped, mark, raw=True)


def untag(method: str, params: Any) -> tuple[str, int] | None:
    """The server and root a follow-up's item names (its `data` put back as it was), or
    None when it names none."""
    item: Any = params
    if method in ITEM_PARAMS and isinstance(params, dict):
        item = params.get("item")
    if not isinstance(item, dict):
        return None
    data = item.get("data")
    if not isinstance(data, dict) or not isinstance(data.get(SERVER), str):
        return None
    root = data.get(ROOT)
    if not isinstance(root, int) or not data.keys() <= {SERVER, ROOT, "data"}:
        return None  # (the editor's own data, which only looks tagged)
    if "data" in data:
        item["data"] = data["data"]
    else:  # (it had none)
        del item["data"]
    return data[SERVER], root


def _shaped(method: str, result: Raw) -> Any:
    """A raw result decoded down to its items' fields (as `_items` walks it)."""
    if method in ONE:
        return _fields.decode(result)
    value: Any = _lists.decode(result)  # (its items' `data` are rewritten in place)
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
