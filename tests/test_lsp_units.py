"""The sans-IO parts of the language-server layer: positions, documents, capabilities, globs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeward.daemon.config import Config, LanguageConfig, ServerConfig
from codeward.daemon.intel.symbols import find_word
from codeward.daemon.lsp import texts
from codeward.daemon.lsp.capabilities import Capabilities
from codeward.daemon.lsp.defaults import (
    HEAP_SHARE,
    command_available,
    default_servers,
    effective_languages,
    effective_servers,
    language_of,
)
from codeward.daemon.lsp.documents import DocumentStore
from codeward.daemon.lsp.ignored import is_ignored
from codeward.daemon.lsp.initialize import initialize_params, server_capabilities
from codeward.daemon.lsp.overlay import Overlay
from codeward.daemon.lsp.positions import (
    LineIndex,
    Lines,
    line_starts,
    negotiated,
    split_lines,
    to_code_points,
    to_units,
)
from codeward.daemon.lsp.preview import Gate
from codeward.daemon.lsp.service import Found
from codeward.daemon.lsp.shapes import OffSpec
from codeward.daemon.lsp.uris import uri_to_path
from codeward.daemon.lsp.watcher import glob_matches
from codeward.daemon.tools.diagnostics import shape

LINE = "aé😀中b"


def test_units_per_encoding() -> None:
    assert [to_units(LINE, n, "utf-16") for n in range(6)] == [0, 1, 2, 4, 5, 6]
    assert [to_units(LINE, n, "utf-8") for n in range(6)] == [0, 1, 3, 7, 10, 11]
    assert [to_units(LINE, n, "utf-32") for n in range(6)] == [0, 1, 2, 3, 4, 5]
    assert to_units(LINE, 99, "utf-16") == 6  # clamped to the line
    assert to_code_points(LINE, 3, "utf-16") == 3  # inside the emoji: counts it
    assert to_code_points(LINE, 99, "utf-8") == 5
    assert to_code_points(LINE, -1, "utf-32") == 0


@given(st.text(), st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_round_trip(text: str, encoding: str) -> None:
    line = split_lines(text)[0]
    for n in range(len(line) + 1):
        assert to_code_points(line, to_units(line, n, encoding), encoding) == n  # type: ignore[arg-type]


@given(st.text(alphabet="ab\r\n\u2028é"))
def test_line_starts_and_split_lines_count_the_same_lines(text: str) -> None:
    """The one line splitter and the one line-offset table: the same lines, only `\\n`,
    `\\r\\n` and `\\r` ending one (not U+2028, as str.splitlines would)."""
    starts = line_starts(text)
    ends = [*starts[1:], len(text)]
    assert [text[a:b].rstrip("\r\n") for a, b in zip(starts, ends, strict=True)] == split_lines(
        text
    )


@given(st.text(alphabet="ab\r\n\u2028é\x00"))
def test_lines_are_split_lines_cut_when_asked(text: str) -> None:
    """A LineIndex's `Lines` (the text and where each line starts, not a string per line,
    the small strings of a large project's cached texts having held the allocator's arenas
    after the session) are the lines `split_lines` gives: each by index, from the end too,
    in order, their count, a slice; equal to that list; out of range an IndexError."""
    expected = split_lines(text)
    lines = Lines(text)
    assert len(lines) == len(expected)
    assert [lines[n] for n in range(len(lines))] == expected
    assert [lines[-n] for n in range(1, len(lines) + 1)] == expected[::-1]
    assert list(lines) == expected and lines == expected and lines == Lines(text)
    assert lines[1:3] == expected[1:3]
    with pytest.raises(IndexError):
        lines[len(expected)]
    with pytest.raises(IndexError):
        lines[-len(expected) - 1]
    assert LineIndex(text).plain == ("\x00" not in text)


def test_line_index() -> None:
    index = LineIndex(f"x\r\n{LINE}\rlast")
    assert index.lines == ["x", LINE, "last"]
    assert index.to_server(2, 4, "utf-16") == {"line": 1, "character": 4}
    assert index.to_client(1, 4, "utf-16") == (2, 4)
    assert index.line(7) == "" and index.to_client(9, 3, "utf-8") == (10, 1)
    assert negotiated("utf-8") == "utf-8" and negotiated("latin-1") == "utf-16"


def test_document_store_versions_and_lru(tmp_path: Path) -> None:
    store = DocumentStore(max_open=2)
    paths = [tmp_path / f"{n}.py" for n in range(3)]
    doc, notices = store.sync(paths[0], paths[0].as_uri(), "python", b"a", world=0)
    assert [m for m, _ in notices] == ["textDocument/didOpen"] and doc.version == 1
    assert store.sync(paths[0], paths[0].as_uri(), "python", b"a", world=0)[1] == []
    doc, notices = store.sync(paths[0], paths[0].as_uri(), "python", b"b", world=1)
    assert notices[0][1]["textDocument"]["version"] == 2 and doc.text == "b"
    doc, notices = store.sync(paths[0], paths[0].as_uri(), "python", b"b", world=1, force=True)
    assert doc.version == 3 and notices[0][0] == "textDocument/didChange"
    store.sync(paths[1], paths[1].as_uri(), "python", b"x", world=1)
    _, notices = store.sync(paths[2], paths[2].as_uri(), "python", b"y", world=1)
    assert notices[-1] == ("textDocument/didClose", {"textDocument": {"uri": paths[0].as_uri()}})
    # Reopened later, its version keeps growing: servers never see a version go back.
    doc, _ = store.sync(paths[0], paths[0].as_uri(), "python", b"z", world=1)
    assert doc.version == 4
    assert [n[1]["textDocument"]["uri"] for n in store.reopen_all()] == [
        paths[2].as_uri(),
        paths[0].as_uri(),
    ]
    assert store.close("file:///nowhere") == []


def test_a_pinned_document_is_never_evicted(tmp_path: Path) -> None:
    """A document an editor holds stays open; the least recently used other one goes."""
    store = DocumentStore(max_open=2)
    uris = [(tmp_path / f"{n}.py").as_uri() for n in range(4)]
    for n, uri in enumerate(uris[:2]):
        store.sync(tmp_path / f"{n}.py", uri, "python", b"x", world=0)
    store.pinned.add(uris[0])
    _, notices = store.sync(tmp_path / "2.py", uris[2], "python", b"x", world=0)
    assert notices[-1] == ("textDocument/didClose", {"textDocument": {"uri": uris[1]}})
    store.pinned.add(uris[2])  # every other one pinned: the store grows past its cap
    _, notices = store.sync(tmp_path / "3.py", uris[3], "python", b"x", world=0)
    assert [m for m, _ in notices] == ["textDocument/didOpen"] and len(store) == 3
    store.close(uris[0])
    assert store.pinned == {uris[2]}


def _capabilities(result: dict[str, Any]) -> Capabilities:
    return server_capabilities("fake", {"capabilities": result})


def test_capabilities_static_and_dynamic() -> None:
    caps = _capabilities(
        {
            "hoverProvider": True,
            "renameProvider": {"prepareProvider": True},
            "definitionProvider": False,
        }
    )
    assert caps.supports("textDocument/hover")
    assert caps.supports("textDocument/prepareRename")
    assert not caps.supports("textDocument/definition")
    assert not caps.supports("codeAction/resolve")
    caps.register("1", "textDocument/codeAction", {"resolveProvider": True})
    caps.register(
        "2",
        "textDocument/diagnostic",
        {"interFileDependencies": True, "workspaceDiagnostics": False},
    )
    caps.register("3", "textDocument/formatting", None)
    assert caps.supports("codeAction/resolve") and caps.supports("textDocument/formatting")
    assert caps.supports("textDocument/diagnostic") and not caps.supports("workspace/diagnostic")
    assert not caps.supports("custom/thing")
    caps.register("4", "custom/thing", {"anything": [1]})  # no lsprotocol type: kept as is
    assert caps.supports("custom/thing") and caps.registered("custom/thing") == [{"anything": [1]}]
    caps.unregister("3")
    assert not caps.supports("textDocument/formatting")
    assert caps.position_encoding == "utf-16"
    assert _capabilities({"positionEncoding": "utf-8"}).position_encoding == "utf-8"
    clangd = server_capabilities("clangd", {"capabilities": {}, "offsetEncoding": "utf-8"})
    assert clangd.position_encoding == "utf-8"
    caps.register(
        "5",
        "workspace/didChangeWatchedFiles",
        {
            "watchers": [
                {"globPattern": "**/*.py"},
                {"globPattern": {"baseUri": "file:///p", "pattern": "*.toml"}, "kind": 7},
            ]
        },
    )
    assert caps.watched_file_globs() == ["**/*.py", {"baseUri": "file:///p", "pattern": "*.toml"}]
    assert Capabilities().static is None and not Capabilities().supports("textDocument/hover")


def test_capabilities_remembered_answers_follow_registrations() -> None:
    """`supports` is remembered per method, and forgotten on every (un)registration."""
    caps = _capabilities({"hoverProvider": True})
    assert not caps.supports("textDocument/rename")  # asked (and remembered) before
    caps.register("r", "textDocument/rename", {"prepareProvider": True})
    assert caps.supports("textDocument/rename") and caps.supports("textDocument/prepareRename")
    caps.unregister("r")
    assert not caps.supports("textDocument/rename")
    assert not caps.supports("textDocument/prepareRename")
    caps.static = None  # a new process's answer replaces the last one's
    assert not caps.supports("textDocument/hover")


def test_the_static_capabilities_as_data_are_made_once() -> None:
    """What every editor's `initialize` merges: the server's answer as JSON data, made once
    (the same object for the next editor), made again for a new answer."""
    caps = _capabilities({"hoverProvider": True, "renameProvider": {"prepareProvider": True}})
    data = caps.static_data()
    assert data["hoverProvider"] is True and data["renameProvider"] == {"prepareProvider": True}
    assert caps.static_data() is data
    caps.static = None
    assert caps.static_data() == {}
    assert Capabilities().static_data() == {}


def test_capabilities_off_the_spec_are_left_out() -> None:
    caps = _capabilities(
        {
            "hoverProvider": True,
            "semanticTokensProvider": {"full": True},  # its legend is missing
            "signatureHelpProvider": 5,
            # ruff's notebook selector names cells only (lsprotocol needs a hook for it)
            "notebookDocumentSync": {"notebookSelector": [{"cells": [{"language": "python"}]}]},
        }
    )
    assert caps.supports("textDocument/hover")
    assert caps.unreadable == ["semanticTokensProvider", "signatureHelpProvider"]
    assert caps.static is not None and caps.static.notebook_document_sync is not None
    # Registration options off the spec: the method is offered, none of its sub-options.
    detail = caps.register("w", "workspace/didChangeWatchedFiles", {"watchers": 3})
    assert detail is not None and "watchers" in detail
    assert caps.registered("workspace/didChangeWatchedFiles") == [None]
    assert caps.watched_file_globs() == []
    assert caps.register("d", "textDocument/diagnostic", {"workspaceDiagnostics": True})
    assert caps.supports("textDocument/diagnostic") and not caps.supports("workspace/diagnostic")
    assert caps.unreadable[2:] == [
        "workspace/didChangeWatchedFiles registration",
        "textDocument/diagnostic registration",
    ]
    for result in (None, [], {"capabilities": None}, {"capabilities": [1]}):
        with pytest.raises(OffSpec):
            server_capabilities("fake", result)


def test_initialize_params_declare_what_the_tools_use(tmp_path: Path) -> None:
    params = initialize_params([tmp_path], {"opt": 1})
    assert params["rootUri"] == tmp_path.as_uri() and params["rootPath"] == str(tmp_path)
    assert params["workspaceFolders"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
    assert params["initializationOptions"] == {"opt": 1} and params["trace"] == "off"
    assert initialize_params([tmp_path])["initializationOptions"] is None
    declared = params["capabilities"]
    assert declared["general"]["positionEncodings"] == ["utf-8", "utf-16"]
    assert declared["offsetEncoding"] == ["utf-8", "utf-16"]  # clangd's own name
    assert declared["textDocument"]["hover"]["contentFormat"][0] == "markdown"
    assert declared["textDocument"]["rename"]["prepareSupport"]
    assert declared["textDocument"]["documentSymbol"]["hierarchicalDocumentSymbolSupport"]
    assert declared["textDocument"]["definition"] == {
        "dynamicRegistration": True,
        "linkSupport": True,
    }
    kinds = declared["textDocument"]["codeAction"]["codeActionLiteralSupport"]["codeActionKind"]
    assert "source.fixAll" in kinds["valueSet"] and "" in kinds["valueSet"]
    assert declared["workspace"]["workspaceEdit"]["resourceOperations"] == [
        "create",
        "rename",
        "delete",
    ]
    assert declared["workspace"]["symbol"]["symbolKind"]["valueSet"] == list(range(1, 27))
    assert declared["window"]["workDoneProgress"]


def test_globs() -> None:
    path = Path("/work/p/src/pkg/mod.py")
    assert glob_matches("**/*.py", path)
    assert glob_matches("**/*.{py,pyi}", path)
    assert glob_matches("**", path)
    assert glob_matches("src/**/mod.?y", path)
    assert not glob_matches("**/*.ts", path)
    assert glob_matches("**/[a-m]od.py", path) and not glob_matches("**/[!m]od.py", path)
    assert glob_matches({"baseUri": "file:///work/p", "pattern": "src/**"}, path)
    assert glob_matches(
        {"baseUri": {"uri": "file:///work/p/src", "name": "s"}, "pattern": "**/*.py"}, path
    )
    assert not glob_matches({"baseUri": "file:///elsewhere", "pattern": "**"}, path)
    assert not glob_matches({"baseUri": "http://x", "pattern": "**"}, path)
    assert not glob_matches(42, path)
    assert glob_matches("/work/p/**/*.py", path)


def test_ignored_folders() -> None:
    root = Path("/r")
    assert is_ignored(Path("/r/.git/index"), root)
    assert is_ignored(Path("/r/a/node_modules/x.js"), root)
    assert is_ignored(Path("/r/pkg.egg-info/PKG-INFO"), root)
    assert is_ignored(Path("/r/pkg.egg-info"), root)  # the folder itself, as the walk asks
    assert is_ignored(Path("/elsewhere/x.py"), root)
    assert not is_ignored(Path("/r/src/build.py"), root)


def test_defaults_and_languages(tmp_path: Path) -> None:
    servers = default_servers()
    assert servers["gopls"].env["GOPROXY"] == "off"
    assert servers["basedpyright"].command[-1] == "--stdio"
    assert "node" in servers["basedpyright"].command[0]  # node itself: nothing to orphan
    mine = ServerConfig(command=["my-pyright"])
    config = Config(
        servers={"basedpyright": mine},
        languages={"python": LanguageConfig(patterns=["*.py"], servers=["ruff"])},
    )
    theirs = effective_servers(config)["basedpyright"]
    assert theirs.command == ["my-pyright"] and theirs.settings == {}
    # What the user's entry leaves empty keeps the built-in's (cap, workarounds); its hint
    # is to fix the entry, whose own command installing the built-in would not change.
    assert theirs.install_hint == "fix servers.basedpyright.command in the config"
    same = ServerConfig(command=servers["basedpyright"].command)
    kept = effective_servers(Config(servers={"basedpyright": same}))["basedpyright"]
    assert kept.install_hint == "run `codeward servers install basedpyright`"
    assert theirs.max_rss_mb == 4096
    assert "textDocument/references" in theirs.exclusive_methods and theirs.broken_when
    capped = ServerConfig(command=["ruff", "server"], max_rss_mb=64, install_hint="get it")
    ours = effective_servers(Config(servers={"ruff": capped}))["ruff"]
    assert (ours.max_rss_mb, ours.install_hint) == (64, "get it")
    mine = ServerConfig(command=["my-gopls"])
    assert effective_servers(Config(servers={"gopls": mine}))["gopls"].diagnosis_progress
    mine = ServerConfig(command=["my-svelte"])
    svelte = effective_servers(Config(servers={"svelte-language-server": mine}))
    assert svelte["svelte-language-server"].code_actions_at == "diagnostic"
    assert effective_languages(config)["python"].servers == ["ruff"]
    languages = effective_languages(Config())
    assert language_of(tmp_path / "a.py", tmp_path, languages) == "python"
    assert language_of(tmp_path / "x.tsx", tmp_path, languages) == "typescriptreact"
    assert language_of(tmp_path / "README", tmp_path, languages) is None
    nested = {"docs": LanguageConfig(patterns=["docs/*.md"], servers=[])}
    assert language_of(tmp_path / "docs" / "a.md", tmp_path, nested) == "docs"
    assert language_of(Path("/other/docs/a.md"), tmp_path, nested) is None
    assert command_available(["sh"]) and not command_available(["no-such-xyz"])
    assert not command_available([])


def test_a_node_servers_heap_is_sized_to_its_memory_cap() -> None:
    """basedpyright's V8 heap is limited to a share of its cap (it empties its type cache
    at 90% of its heap, below the share of the cap where it stops being asked), after the
    NODE_OPTIONS an entry gives; a user's cap sizes it too; an entry can turn it off."""
    built_in = effective_servers(Config())["basedpyright"]
    assert built_in.env["NODE_OPTIONS"] == f"--max-old-space-size={int(4096 * HEAP_SHARE)}"
    command = default_servers()["basedpyright"].command
    mine = ServerConfig(command=command, max_rss_mb=1000, env={"NODE_OPTIONS": "--trace-gc"})
    theirs = effective_servers(Config(servers={"basedpyright": mine}))["basedpyright"]
    assert theirs.env["NODE_OPTIONS"] == "--trace-gc --max-old-space-size=600"
    off = ServerConfig(command=command, node_heap=False)
    assert effective_servers(Config(servers={"basedpyright": off}))["basedpyright"].env == {}
    assert "NODE_OPTIONS" not in effective_servers(Config())["ruff"].env


def test_uris() -> None:
    assert uri_to_path("file:///a%20b/c.py") == Path("/a b/c.py")
    assert uri_to_path("untitled:1") is None


def _found(file: str, line: int, severity: int, message: str = "m") -> Found:
    return Found(file, line, 1, line, 2, severity, message, None, "s")


def test_shape_sorts_filters_dedupes_and_limits() -> None:
    found = [
        _found("b.py", 1, 2),
        _found("a.py", 9, 1),
        _found("a.py", 2, 1),
        _found("a.py", 2, 1),
        _found("a.py", 1, 4),
    ]
    result = shape(found, None, 10)
    assert [(d["file"], d["line"], d["severity"]) for d in result["diagnostics"]] == [
        ("a.py", 2, "error"),
        ("a.py", 9, "error"),
        ("b.py", 1, "warning"),
        ("a.py", 1, "hint"),
    ]
    assert result["count"] == 4 and not result["truncated"]
    warnings = shape(found, "warning", 10)
    assert [d["severity"] for d in warnings["diagnostics"]] == ["error", "error", "warning"]
    limited = shape(found, None, 1)
    assert limited["count"] == 4 and limited["truncated"] and len(limited["diagnostics"]) == 1


def test_texts_keep_the_recently_used_within_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files' texts read for locations stay while they fit (by bytes, not a count), the
    least recently used dropped first: references across many files are not read again."""
    paths = []
    for name in "abc":
        path = tmp_path / f"{name}.py"
        path.write_text("x = 1  # padding to a hundred bytes..............................\n" * 10)
        paths.append(path)
    a, b, c = paths
    cost = a.stat().st_size + texts.LINE_COST * 11
    monkeypatch.setattr(texts, "CACHED_BYTES", 2 * cost + cost // 2)  # two of them fit
    monkeypatch.setattr(texts, "RACY_NS", -(10**12))  # stats trusted at once (no wait)
    reads: list[str] = []
    real = texts.read_file

    def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(path.name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(texts, "read_file", counted)
    kept = texts.Texts(tmp_path, 1 << 20, {}, {}, Gate(), Overlay())
    for path in (a, b, a, c, a, b):
        index = kept.line_index(path)
        assert index is not None and len(index.lines) == 11  # the last one empty
    # a used again before c came in: b was the least recently used, dropped for c
    assert reads == ["a.py", "b.py", "c.py", "b.py"]


@given(
    st.text(alphabet="ab_1é. (", max_size=30),
    st.text(alphabet="ab_1é", min_size=1, max_size=4),
)
def test_find_word_finds_what_a_whole_word_pattern_finds(text: str, word: str) -> None:
    found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)
    assert find_word(text, word) == (found.start() if found else -1)
