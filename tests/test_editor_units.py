"""The editor dialect's parts without I/O: buffers, position conversion, the merged
capabilities and registrations, the routing of progress, the servers items came from, answers in
the markup the editor takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.editor import diagnostics, tagging
from codeward.daemon.editor.buffers import BadChange, Buffers
from codeward.daemon.editor.convert import Converter, tokens
from codeward.daemon.editor.markup import Markup
from codeward.daemon.editor.offers import merged, registrations
from codeward.daemon.editor.progress import Progress
from codeward.daemon.lsp.positions import LineIndex
from codeward.daemon.lsp.service import Offer

TEXT = "a = '😀é'\nb = 1\r\nc = 2\n"


def change(line: int, character: int, end_line: int, end_character: int, text: str) -> Any:
    return {
        "range": {
            "start": {"line": line, "character": character},
            "end": {"line": end_line, "character": end_character},
        },
        "text": text,
    }


@pytest.mark.parametrize(("encoding", "after_emoji"), [("utf-16", 7), ("utf-8", 9), ("utf-32", 6)])
def test_incremental_changes_in_the_editors_encoding(encoding: Any, after_emoji: int) -> None:
    buffers = Buffers(encoding)
    buffers.did_open("u", Path("/p/a.py"), "python", 1, TEXT)
    # replace é (right after the emoji) with x
    buffer = buffers.did_change("u", 2, [change(0, after_emoji, 0, after_emoji + (
        2 if encoding == "utf-8" else 1), "x")])  # fmt: skip
    assert buffer.text == "a = '😀x'\nb = 1\r\nc = 2\n" and buffer.version == 2
    # across a CRLF line end; a line past the end is the end
    buffer = buffers.did_change("u", 3, [change(1, 4, 2, 0, "2\n"), change(9, 0, 9, 0, "d")])
    assert buffer.text == "a = '😀x'\nb = 2\nc = 2\nd"
    assert buffer.index.lines[-1] == "d"
    # a whole text, then a character past its line's end (clamped)
    buffer = buffers.did_change("u", 4, [{"text": "xy\n"}, change(0, 99, 0, 99, "!")])
    assert buffer.text == "xy!\n"


@pytest.mark.parametrize(
    "bad",
    [
        [change(0, 2, 0, 1, "x")],
        [{"range": {"start": {"line": 0}}, "text": "x"}],
        [{"range": change(0, 0, 0, 0, "")["range"]}],
        [change(-1, 0, 0, 0, "")],
    ],
)
def test_a_bad_change_is_refused_and_the_buffer_kept(bad: list[Any]) -> None:
    buffers = Buffers("utf-16")
    buffers.did_open("u", None, "python", 1, "abc\n")
    with pytest.raises(BadChange):
        buffers.did_change("u", 2, bad)
    buffer = buffers.get("u")
    assert buffer is not None and buffer.text == "abc\n" and buffer.version == 1
    with pytest.raises(BadChange):
        buffers.did_change("other", 2, [])


def test_positions_are_converted_on_their_own_documents_lines() -> None:
    texts = {"file:///a": LineIndex("x = '😀é' + y\n"), "file:///b": LineIndex("ascii only\n")}
    to_utf8 = Converter("utf-16", "utf-8", texts.get)
    at = {"line": 0, "character": 8}  # after é in UTF-16 (the emoji is two units)
    assert to_utf8({"position": at}, "file:///a") == {"position": {"line": 0, "character": 11}}
    result = to_utf8([
        {"uri": "file:///a", "range": {"start": at, "end": at}},
        {"uri": "file:///b", "range": {"start": at, "end": at}},
        {"targetUri": "file:///b", "targetRange": {"start": at, "end": at},
         "originSelectionRange": {"start": at, "end": at}},
        {"changes": {"file:///a": [{"range": {"start": at, "end": at}, "newText": "z"}]}},
        {"textDocument": {"uri": "file:///a", "version": 1}, "edits": [{"range": {
            "start": at, "end": at}}]},
    ], "file:///b")  # fmt: skip
    assert result[0]["range"]["start"] == {"line": 0, "character": 11}
    assert result[1]["range"]["start"] == at  # ascii: the same
    assert result[2]["targetRange"]["start"] == at
    assert result[2]["originSelectionRange"]["start"] == at  # the asking document's (b)
    assert result[3]["changes"]["file:///a"][0]["range"]["end"]["character"] == 11
    assert result[4]["edits"][0]["range"]["start"]["character"] == 11
    back = Converter("utf-8", "utf-16", texts.get)
    assert back({"line": 0, "character": 11}, "file:///a") == at
    assert back({"line": 0, "character": 11}, "file:///unknown") == {"line": 0, "character": 11}


def test_semantic_tokens_are_converted_on_their_lines() -> None:
    index = LineIndex("x = '😀é' + y\nb\n")
    utf16 = [0, 0, 1, 0, 0, 0, 4, 5, 1, 0, 0, 8, 1, 2, 0, 1, 0, 1, 0, 0]
    utf8 = [0, 0, 1, 0, 0, 0, 4, 8, 1, 0, 0, 11, 1, 2, 0, 1, 0, 1, 0, 0]
    assert tokens(utf16, index, "utf-16", "utf-8") == utf8
    assert tokens(utf8, index, "utf-8", "utf-16") == utf16
    whole = {"legend": {}, "full": {"delta": True}}
    converted = merged([offer("s", {"semanticTokensProvider": whole})], "utf-8")
    assert converted["semanticTokensProvider"]["full"] is True  # no delta to convert
    same = merged([offer("s", {"semanticTokensProvider": whole})], "utf-16")
    assert same["semanticTokensProvider"] == whole


def offer(name: str, capabilities: dict[str, Any], supports: tuple[str, ...] = (),
          encoding: Any = "utf-16") -> Offer:  # fmt: skip
    return Offer(name, capabilities, encoding, lambda method: method in supports)


def test_capabilities_merged_in_routing_order() -> None:
    offers = [
        offer("pyright", {"hoverProvider": True, "completionProvider": {"triggerCharacters": ["."]},
                          "executeCommandProvider": {"commands": ["a", "b"]}}),
        offer("ruff", {"hoverProvider": {"workDoneProgress": False},
                       "codeActionProvider": {"codeActionKinds": ["quickfix"]},
                       "executeCommandProvider": {"commands": ["b", "c"]}},
              supports=("textDocument/formatting",)),
    ]  # fmt: skip
    capabilities = merged(offers, "utf-16")
    assert capabilities["hoverProvider"] is True  # the first's
    assert capabilities["completionProvider"] == {"triggerCharacters": ["."]}
    assert capabilities["codeActionProvider"] == {"codeActionKinds": ["quickfix"]}
    assert capabilities["documentFormattingProvider"] is True  # registered dynamically
    assert capabilities["executeCommandProvider"] == {"commands": ["a", "b", "c"]}
    assert capabilities["positionEncoding"] == "utf-16"
    assert "renameProvider" not in capabilities and "semanticTokensProvider" not in capabilities
    assert capabilities["textDocumentSync"]["change"] == 2


def test_a_later_servers_capabilities_are_registered_for_its_language() -> None:
    announced = {"hoverProvider"}
    client = {"textDocument": {"hover": {"dynamicRegistration": True},
                               "foldingRange": {"dynamicRegistration": True},
                               "semanticTokens": {"dynamicRegistration": True},
                               "rename": {"dynamicRegistration": False}}}  # fmt: skip
    later = [offer("tombi", {"hoverProvider": True, "foldingRangeProvider": True,
                             "renameProvider": True,
                             "semanticTokensProvider": {"legend": {}, "full": True}})]  # fmt: skip
    found = registrations(later, announced, "toml", client)
    assert [r["method"] for r in found] == ["textDocument/foldingRange",
                                            "textDocument/semanticTokens"]  # fmt: skip
    assert found[1]["registerOptions"] == {"legend": {}, "full": True,
                                           "documentSelector": [{"language": "toml"}]}  # fmt: skip
    assert "foldingRangeProvider" in announced
    assert registrations(later, announced, "toml", client) == []  # told once


ODD_DATA = [{"x": 1, "y": [1.5, "é😀", None]}, "text", 7, None, [], {}]  # data of every kind


def raw_and_data(method: str, result: Any, mark: tagging.Mark) -> list[Any]:
    """`result` tagged both ways (from raw JSON, and as data), as the editor decodes it."""
    raw = tagging.tag_raw(method, msgspec.Raw(msgspec.json.encode(result)), mark)
    data = tagging.tag(method, msgspec.json.decode(msgspec.json.encode(result)), mark)
    return [msgspec.json.decode(msgspec.json.encode(raw)), data]


@pytest.mark.parametrize(
    ("method", "shape", "follow", "wrap"),
    [
        ("textDocument/completion", lambda items: items, "completionItem/resolve", None),
        ("textDocument/completion", lambda items: {"isIncomplete": False, "items": items},
         "completionItem/resolve", None),
        ("completionItem/resolve", lambda items: items[0], "completionItem/resolve", None),
        ("textDocument/inlayHint", lambda items: items, "inlayHint/resolve", None),
        ("inlayHint/resolve", lambda items: items[0], "inlayHint/resolve", None),
        ("textDocument/codeAction", lambda items: items, "codeAction/resolve", None),
        ("codeAction/resolve", lambda items: items[0], "codeAction/resolve", None),
        ("textDocument/prepareCallHierarchy", lambda items: items,
         "callHierarchy/incomingCalls", "item"),
        ("callHierarchy/incomingCalls", lambda items: [{"from": i, "fromRanges": []}
                                                       for i in items],
         "callHierarchy/outgoingCalls", "item"),
        ("callHierarchy/outgoingCalls", lambda items: [{"to": i, "fromRanges": []}
                                                       for i in items],
         "callHierarchy/incomingCalls", "item"),
        ("textDocument/prepareTypeHierarchy", lambda items: items, "typeHierarchy/subtypes",
         "item"),
        ("typeHierarchy/supertypes", lambda items: items, "typeHierarchy/supertypes", "item"),
    ],
)  # fmt: skip
def test_each_item_carries_its_server_and_root_and_gets_its_data_back_as_it_was(
    method: str, shape: Any, follow: str, wrap: str | None
) -> None:
    items = [{"label": f"i{n}", "data": data} for n, data in enumerate(ODD_DATA)]
    items.append({"label": "bare"})  # no data: given one naming its server alone
    mark = tagging.Mark('odd "name"', 3)
    for tagged in raw_and_data(method, shape(items), mark):
        inner = tagged["items"] if isinstance(tagged, dict) and "items" in tagged else tagged
        found = inner if isinstance(inner, list) else [inner]
        found = [f.get("from") or f.get("to") or f for f in found]
        for item, original in zip(found, items, strict=False):
            params = {"item": item} if wrap else item
            assert item.get("data") != original.get("data")
            assert tagging.untag(follow, params) == ('odd "name"', 3)
            assert item == original  # its data put back, as it was
            assert tagging.untag(follow, params) is None  # (once)


def test_a_completion_lists_default_data_is_tagged_and_its_items_left_to_take_it() -> None:
    mark = tagging.Mark("basedpyright", 0)
    result = {"isIncomplete": True, "itemDefaults": {"data": {"k": 1}}, "items": [{"label": "a"}]}
    for tagged in raw_and_data("textDocument/completion", result, mark):
        assert tagged["items"] == [{"label": "a"}]
        item = {**tagged["items"][0], **tagged["itemDefaults"]}  # (as the editor applies it)
        assert tagging.untag("completionItem/resolve", item) == ("basedpyright", 0)
        assert item == {"label": "a", "data": {"k": 1}}
    odd = msgspec.Raw(b'[1, {"data": 2}]')  # off the LSP shape: passed on as it came
    assert tagging.tag_raw("textDocument/inlayHint", odd, mark) is odd
    # an editor's own data that only looks tagged is left alone
    for data in ({"codewardServer": "x"}, {"codewardServer": "x", "codewardRoot": 0, "y": 1}):
        assert tagging.untag("codeAction/resolve", {"data": data}) is None


async def test_progress_goes_to_the_editor_it_concerns() -> None:
    sent: list[tuple[str, Any]] = []
    asked: list[tuple[str, Any]] = []

    async def ask(method: str, params: Any) -> None:
        asked.append((method, params))

    mine = Progress(7, True, lambda m, p: sent.append((m, p)), ask)
    token = mine.rewrite("t1")
    assert token == "codeward-editor-7-t1"
    mine.published({"server": "s", "token": token, "kind": "begin", "title": "Finding"})
    mine.published({"server": "s", "token": "codeward-editor-8-t1", "kind": "begin",
                    "title": "another editor's"})  # fmt: skip
    assert sent == [("$/progress", {"token": "t1", "value": {"kind": "begin",
                                                             "title": "Finding"}})]  # fmt: skip
    sent.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mine.run)
        mine.published({"session_id": "x", "server": "s", "token": 1, "kind": "report"})
        mine.published({"session_id": "x", "server": "s", "token": 2, "kind": "begin",
                        "title": "Indexing"})  # fmt: skip
        mine.published({"session_id": "x", "server": "s", "token": 2, "kind": "end"})
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert asked == [("window/workDoneProgress/create", {"token": "codeward-1"})]
    assert [p["value"]["kind"] for _, p in sent] == ["begin", "end"]
    assert {p["token"] for _, p in sent} == {"codeward-1"}


def test_every_servers_diagnostics_in_the_editors_encoding() -> None:
    def one(character: int, source: str | None) -> lsp.Diagnostic:
        at = lsp.Position(0, character)
        return lsp.Diagnostic(lsp.Range(at, at), "m", source=source, data={"fix": 1})

    answers: Any = {"ruff": (3, [one(11, "Ruff")]), "pyright": (2, [one(8, None)])}
    lines = {"file:///a": LineIndex("x = '😀é' + y\n")}.get
    items = diagnostics.merged(answers, {"ruff": "utf-8", "pyright": "utf-16"}, "utf-16",
                               lines, "file:///a")  # fmt: skip
    assert [(d["source"], d["range"]["start"]["character"], d["data"]) for d in items] == [
        ("pyright", 8, {"fix": 1}), ("Ruff", 8, {"fix": 1})
    ]  # fmt: skip


def test_uris_that_name_no_file_of_a_root_are_outside(tmp_path: Path) -> None:
    from codeward.daemon.editor.workspace import Root, Workspace

    workspace = Workspace(None, 1, lambda _: None)  # type: ignore[arg-type]
    workspace.roots.append(Root(tmp_path, None))  # type: ignore[arg-type]
    (tmp_path / "a.py").write_text("")
    assert workspace.locate((tmp_path / "a.py").as_uri()) == (workspace.roots[0], tmp_path / "a.py")
    for bad in ("file:///a%00b", "file://[/x", "untitled:Untitled-1", "file:///etc/hostname"):
        assert workspace.locate(bad) is None


PLAIN = ["plaintext"]
DOC = "```python\ndef f(x: int) -> str\n```\n---\nReturns \\_x\\_ &lt;as text&gt;."
AS_TEXT = "def f(x: int) -> str\n\nReturns _x_ <as text>."


def test_markdown_is_plain_text_for_an_editor_that_takes_only_plain_text() -> None:
    caps = {"textDocument": {
        "hover": {"contentFormat": PLAIN},
        "completion": {"completionItem": {"documentationFormat": PLAIN}},
        "signatureHelp": {"signatureInformation": {"documentationFormat": PLAIN}},
    }}  # fmt: skip
    markup = Markup(caps)
    doc = {"kind": "markdown", "value": DOC}
    text = {"kind": "plaintext", "value": AS_TEXT}
    hover = msgspec.Raw(msgspec.json.encode({"contents": doc}))
    assert markup("textDocument/hover", hover) == {"contents": text}
    marked = {"contents": [DOC, {"language": "python", "value": "x: int"}]}
    assert markup("textDocument/hover", marked) == {
        "contents": {"kind": "plaintext", "value": AS_TEXT + "\n\nx: int"}
    }
    items = {"isIncomplete": False, "items": [{"label": "f", "documentation": doc}, {"label": "g"}]}
    assert markup("textDocument/completion", items)["items"] == [
        {"label": "f", "documentation": text},
        {"label": "g"},
    ]
    assert markup("completionItem/resolve", {"label": "f", "documentation": doc}) == {
        "label": "f",
        "documentation": text,
    }
    plain_already = msgspec.Raw(b'[{"label":"f","documentation":"plain"}]')
    assert markup("textDocument/completion", plain_already) is plain_already  # not read
    signatures = {
        "signatures": [
            {
                "label": "f(x)",
                "documentation": doc,
                "parameters": [{"label": "x", "documentation": doc}],
            }
        ]
    }
    assert markup("textDocument/signatureHelp", signatures) == {
        "signatures": [{"label": "f(x)", "documentation": text,
                        "parameters": [{"label": "x", "documentation": text}]}]
    }  # fmt: skip


@pytest.mark.parametrize("formats", [None, ["markdown", "plaintext"], []])
def test_an_editor_that_takes_markdown_or_says_nothing_gets_the_answer_as_it_came(
    formats: list[str] | None,
) -> None:
    caps = {} if formats is None else {"textDocument": {"hover": {"contentFormat": formats}}}
    raw = msgspec.Raw(msgspec.json.encode({"contents": {"kind": "markdown", "value": DOC}}))
    converted = Markup(caps)("textDocument/hover", raw)
    assert (converted is raw) == (formats != [])
