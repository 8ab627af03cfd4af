"""Units of the code-intelligence layer: indicators, hover parsing, locations, symbols, calls."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import trio
from lsprotocol import types as lsp

from codeward.daemon.config import Config
from codeward.daemon.intel import calls, hover
from codeward.daemon.intel.indicators import (
    GoEnv,
    c_header,
    elixir_module,
    erlang_module,
    go_env,
    go_package,
    indicator,
    python_module,
)
from codeward.daemon.intel.inputs import check_position, source_file
from codeward.daemon.intel.locations import Locator, finish, targets
from codeward.daemon.intel.symbols import Budget, document_symbols, information, kind_name, rank
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.shapes import OffSpec, result_type, structure
from codeward.daemon.lsp.types import Location, Position, Range
from codeward.daemon.tools.hover import module_of
from codeward.protocol.errors import ToolError
from tests.intel_support import write

P = PurePosixPath


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("/x/site-packages/basedpyright/dist/typeshed-fallback/stdlib/os/path.pyi", "os.path"),
        ("/x/typeshed/stdlib/builtins.pyi", "builtins"),
        ("/x/typeshed/stdlib/json/__init__.pyi", "json"),
        ("/x/typeshed-fallback/stubs/requests/requests/api.pyi", "requests.api"),
        ("/home/u/venv/lib/python3.12/site-packages/requests/api.py", "requests.api"),
        ("/home/u/venv/lib/python3.12/site-packages/attr/__init__.py", "attr"),
        ("/usr/lib/python3/dist-packages/yaml/loader.py", "yaml.loader"),
        ("/x/site-packages/pandas-stubs/core/frame.pyi", "pandas.core.frame"),
        ("/usr/lib/python3.11/os.py", "os"),
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/email/mime/text.py", "email.mime.text"),
        ("/usr/lib/python3.13t/json/decoder.py", "json.decoder"),
        ("/x/site-packages/foo-1.0.dist-info/RECORD.py", None),
        ("/x/site-packages/pkg/data.txt", None),
        ("/home/u/other/project/mod.py", None),
        ("/x/typeshed/stubs/only.pyi", None),
        ("/x/site-packages/__init__.py", None),
    ],
)
def test_python_module(path: str, module: str | None) -> None:
    assert python_module(P(path)) == module


def test_go_package() -> None:
    roots, caches = ["/usr/lib/go-1.19", "/usr/share/go-1.19"], ["/home/u/go/pkg/mod"]
    assert go_package(P("/usr/share/go-1.19/src/fmt/print.go"), roots, caches) == "fmt"
    assert go_package(P("/usr/lib/go-1.19/src/net/http/server.go"), roots, caches) == "net/http"
    assert (
        go_package(P("/usr/lib/go-1.19/src/vendor/golang.org/x/net/idna/idna.go"), roots, caches)
        == "golang.org/x/net/idna"
    )
    assert go_package(P("/usr/lib/go-1.19/src/go.mod"), roots, caches) is None
    assert (
        go_package(P("/home/u/go/pkg/mod/github.com/!burnt!sushi/toml@v1.2.0/decode.go"), roots, [])
        == "github.com/BurntSushi/toml"
    )
    assert (
        go_package(P("/home/u/go/pkg/mod/golang.org/x/tools@v0.1.0/go/ast/x.go"), [], caches)
        == "golang.org/x/tools/go/ast"
    )
    assert go_package(P("/home/u/go/pkg/mod/cache/download/x@v1/a.go"), [], caches) is None
    assert go_package(P("/home/u/elsewhere/main.go"), roots, caches) is None
    assert go_package(P("/usr/lib/go-1.19/src/fmt/doc.txt"), roots, caches) is None
    assert indicator(Path("/opt/go/src/fmt/print.go"), GoEnv(("/opt/go",), ())) == "go:fmt"
    assert indicator(Path("/secret/x.go"), GoEnv(("/opt/go",), ())) is None


def test_go_env_is_real_paths() -> None:
    env = go_env()
    assert all(os.path.isabs(p) and p == os.path.realpath(p) for p in env.goroots + env.modcaches)


def test_elixir_and_erlang(tmp_path: Path) -> None:
    lib = tmp_path / "usr/lib/elixir/lib/elixir/lib/file"
    write(lib, {"stat.ex": "# the stat\ndefmodule File.Stat do\nend\n", "plain.ex": "x = 1\n"})
    assert elixir_module(lib / "stat.ex") == "File.Stat"
    assert elixir_module(lib / "plain.ex") == "Plain"
    assert elixir_module(lib / "missing.ex") == "Missing"
    assert elixir_module(tmp_path / "other/lib/thing.ex") is None
    assert elixir_module(lib / "stat.erl") is None
    assert indicator(lib / "stat.ex") == "elixir:File.Stat"
    assert erlang_module(P("/usr/lib/erlang/lib/kernel-9.0/src/file.erl")) == "file"
    assert erlang_module(P("/usr/lib/erlang/lib/stdlib-5.1/include/qlc.hrl")) == "qlc"
    assert erlang_module(P("/home/u/code/src/mine.erl")) is None
    assert erlang_module(P("/usr/lib/erlang/lib/kernel-9.0/src/file.ex")) is None
    assert indicator(Path("/usr/lib/erlang/lib/kernel-9.0/src/file.erl")) == "erlang:file"


def test_c_headers() -> None:
    assert c_header(P("/usr/include/stdio.h")) == "c:stdio.h"
    assert c_header(P("/usr/include/x86_64-linux-gnu/sys/types.h")) == "c:sys/types.h"
    assert c_header(P("/usr/include/c++/12/vector")) == "cpp:vector"
    assert c_header(P("/usr/include/c++/12/bits/stl_vector.h")) == "c:bits/stl_vector.h"
    assert c_header(P("/usr/local/include/boost/any.hpp")) == "cpp:boost/any.hpp"
    assert c_header(P("/usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h")) == "c:stddef.h"
    assert c_header(P("/usr/lib/gcc/x86_64-linux-gnu/12/include/stdarg.h")) == "c:stdarg.h"
    assert c_header(P("/usr/include/foo.c")) is None
    assert c_header(P("/home/u/lib/include/x.h")) is None
    assert c_header(P("/usr/include/")) is None
    assert indicator(Path("/home/u/secret/notes.md")) is None


# -- hover ---------------------------------------------------------------------------------


def test_hover_basedpyright() -> None:
    parsed = hover.parse(
        "```python\n(function) def helper(x: int) -> int\n```\n---\nDouble x.\n\nMore."
    )
    assert parsed is not None
    assert (parsed.kind, parsed.signature, parsed.docs) == (
        "function",
        "def helper(x: int) -> int",
        "Double x.\n\nMore.",
    )
    assert parsed.type is None and parsed.module is None
    var = hover.parse("```python\n(variable) sq: Square\n```")
    assert var is not None and (var.kind, var.type, var.docs) == ("variable", "Square", None)
    module = hover.parse("```python\n(module) os\n```\n---\nOS routines.")
    assert module is not None and module.module == "os"
    alias = hover.parse("```python\n(type alias) Vec: type[list[float]]\n```")
    assert alias is not None and alias.type == "type[list[float]]"


def test_hover_gopls() -> None:
    markdown = (
        "```go\nfunc fmt.Println(a ...any) (n int, err error)\n```\n\nPrintln formats.\n\n"
        "[`fmt.Println` on pkg.go.dev](https://pkg.go.dev/fmt#Println)"
    )
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert parsed.kind == "func" and parsed.module == "fmt" and parsed.docs == "Println formats."
    var = hover.parse("```go\nvar total int\n```")
    assert var is not None and (var.kind, var.type) == ("var", "int")
    field = hover.parse(
        "```go\nfield Side float64\n```\n\n[`x.Side` on pkg.go.dev](https://pkg.go.dev/example.com/m@v1.0.0/x#T.Side)"
    )
    assert field is not None and (field.type, field.module) == ("float64", "example.com/m")


def test_hover_clangd() -> None:
    markdown = (
        "### function `add`  \n\n---\n→ `int`  \nParameters:  \n- `int a`\n\nAdds.  \n\n---\n"
        "```cpp\n// In namespace util\nint add(int a, int b)\n```"
    )
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert (parsed.kind, parsed.signature, parsed.module) == (
        "function",
        "int add(int a, int b)",
        "util",
    )
    assert parsed.docs is not None and "Adds." in parsed.docs and "###" not in parsed.docs
    var = hover.parse(
        "### variable `total`  \n\n---\nType: `int`  \n\n---\n"
        "```cpp\n// In main\nint total = 1\n```"
    )
    assert var is not None and (var.kind, var.type) == ("variable", "int")


def _hover(contents: Any) -> str:
    hovered = structure({"contents": contents}, lsp.Hover)
    return hover.markdown_of(hovered.contents)


def test_hover_contents_shapes() -> None:
    assert _hover({"kind": "markdown", "value": "**x**"}) == "**x**"
    assert _hover({"kind": "plaintext", "value": "x"}) == "x"
    assert _hover({"language": "python", "value": "x: int"}) == "```python\nx: int\n```"
    assert _hover(["doc", {"language": "c", "value": "int x"}, ""]) == ("doc\n\n```c\nint x\n```")
    assert _hover("plain") == "plain" and _hover(3) == ""  # lsprotocol lets a number through
    with pytest.raises(OffSpec):
        _hover({"value": 3})
    assert hover.parse("") is None and hover.parse("  \n ") is None
    plain = hover.parse("just words")
    assert plain is not None and plain.signature is None and plain.docs == "just words"


# -- locations -----------------------------------------------------------------------------


def test_targets_and_finish() -> None:
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    sel = {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 8}}
    assert targets(None) == []
    assert targets({"uri": "file:///a", "range": rng}) == [("file:///a", rng)]
    assert targets(
        [{"targetUri": "file:///b", "targetRange": rng, "targetSelectionRange": sel}, 3, {}]
    ) == [("file:///b", sel)]
    assert targets([{"targetUri": "file:///c", "targetRange": rng}]) == [("file:///c", rng)]

    def loc(path: str, line: int, character: int = 1) -> dict[str, Any]:
        return {"path": path, "line": line, "character": character, "end_line": line,
                "end_character": character + 1, "preview": ""}  # fmt: skip

    items = [
        loc("python:os", 3),
        loc("b.py", 2),
        None,
        loc("a.py", 9),
        loc("b.py", 2),
        loc("a.py", 1),
    ]
    assert [(x["path"], x["line"]) for x in finish(items)] == [
        ("a.py", 1),
        ("a.py", 9),
        ("b.py", 2),
        ("python:os", 3),
    ]


async def test_locator_classifies_and_scrubs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(
        root, {"a.py": "x = 'é'\n\ty = 2\n", ".venv/lib/python3.11/site-packages/m.py": "m = 1\n"}
    )
    write(
        tmp_path,
        {"secret/s.py": "s = 1\n", "v/lib/python3.11/site-packages/ext/__init__.py": "e = 1\n"},
    )
    (root / "link.py").symlink_to(tmp_path / "secret" / "s.py")
    (root / "alias.py").symlink_to(root / "a.py")
    manager = LanguageService(root, Config(), lambda _: None)
    locator = Locator(manager)
    assert locator.place((root / "a.py").as_uri()) == ("a.py", True)
    assert locator.place((root / "alias.py").as_uri()) == ("a.py", True)
    assert locator.place((root / ".venv/lib/python3.11/site-packages/m.py").as_uri()) == (
        ".venv/lib/python3.11/site-packages/m.py",
        True,
    )
    ext = (tmp_path / "v/lib/python3.11/site-packages/ext/__init__.py").as_uri()
    assert locator.place(ext) == ("python:ext", False)
    assert locator.place((tmp_path / "secret/s.py").as_uri()) is None
    assert locator.place((root / "link.py").as_uri()) is None  # a link out of the root
    assert locator.place("untitled:Untitled-1") is None
    await locator.prepare([(tmp_path / "secret/x.go").as_uri(), (root / "a.go").as_uri()])
    # UTF-16 units to code points; the preview is the trimmed line.
    uri = (root / "a.py").as_uri()
    found = locator.location(uri, Range(Position(0, 5), Position(0, 7)), "utf-16")
    assert found == {"path": "a.py", "line": 1, "character": 6, "end_line": 1,
                     "end_character": 8, "preview": "x = 'é'"}  # fmt: skip
    utf8 = locator.location(
        uri, {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 8}}, "utf-8"
    )
    assert utf8 is not None and (utf8["character"], utf8["end_character"]) == (7, 8)
    assert locator.preview(uri, 2) == "y = 2" and locator.preview("untitled:x", 1) == ""
    assert locator.span("untitled:x", _r(0, 1, 1, 2), "utf-8") == (1, 2, 2, 3)
    text = (
        f"see {tmp_path}/secret/s.py and file://{root}/a.py, also {ext} "
        f"but a/b, 1/2, x[0]/y and {tmp_path / 'v/lib/python3.11/site-packages/ext/__init__.py'}"
    )
    scrubbed = locator.scrub(text)
    assert str(tmp_path) not in scrubbed
    assert scrubbed == ("see <path> and a.py, also python:ext but a/b, 1/2, x[0]/y and python:ext")


# -- symbols and calls ---------------------------------------------------------------------


def _r(l0: int, c0: int, l1: int, c1: int) -> dict[str, Any]:
    return {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}


def test_symbol_kinds_and_rank() -> None:
    assert [kind_name(k) for k in (1, 5, 12, 22, 26, 0, 27, True, "5")] == [
        "file", "class", "function", "enum_member", "type_parameter",
        "unknown", "unknown", "unknown", "unknown",
    ]  # fmt: skip
    assert [rank("Foo", n) for n in ("Foo", "FooBar", "foobar", "MyFoo")] == [0, 1, 2, 3]
    budget = Budget(1)
    assert budget.take() and not budget.take() and budget.truncated


def test_document_and_workspace_symbols(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"a.py": "class A:\n    def f(self): pass\n"})
    locator = Locator(LanguageService(root, Config(), lambda _: None))
    uri = (root / "a.py").as_uri()
    tree = _symbols([
        {"name": "A", "kind": 5, "range": _r(0, 0, 1, 21), "selectionRange": _r(0, 6, 0, 7),
         "children": [{"name": "f", "kind": 6, "detail": "(self)", "range": _r(1, 4, 1, 21),
                       "selectionRange": _r(1, 4, 1, 21)}]},
    ])  # fmt: skip
    shaped = document_symbols(tree, uri, locator, "utf-16", Budget(10))
    assert shaped == [
        {"name": "A", "kind": "class", "detail": None, "line": 1, "character": 7,
         "range": {"line": 1, "character": 1, "end_line": 2, "end_character": 22},
         "children": [{"name": "f", "kind": "method", "detail": "(self)", "line": 2,
                       "character": 5, "range": {"line": 2, "character": 5, "end_line": 2,
                                                 "end_character": 22}, "children": []}]},
    ]  # fmt: skip
    assert document_symbols(None, uri, locator, "utf-16", Budget(10)) == []
    flat = _symbols([
        {"name": "A", "kind": 5, "location": {"uri": uri, "range": _r(0, 6, 0, 7)}},
        {"name": "f", "kind": 6, "containerName": "A",
         "location": {"uri": uri, "range": _r(1, 8, 1, 9)}},
        {"name": "s", "kind": 13,
         "location": {"uri": (tmp_path / "s.py").as_uri(), "range": _r(0, 0, 0, 1)}},
    ])  # fmt: skip
    budget = Budget(1)
    shaped = document_symbols(flat, uri, locator, "utf-16", budget)
    assert [s["name"] for s in shaped] == ["A"] and budget.truncated
    f = information(flat[1], locator, "utf-16")
    assert f is not None and (f["container"], f["path"], f["line"], f["preview"]) == (
        "A", "a.py", 2, "def f(self): pass",
    )  # fmt: skip
    assert information(flat[2], locator, "utf-16") is None
    assert information(_workspace_symbol(uri), locator, "utf-16") == {
        "name": "x", "kind": "variable", "container": None, "path": "a.py",
    }  # fmt: skip
    outside = _workspace_symbol((tmp_path / "s.py").as_uri())
    assert information(outside, locator, "utf-16") is None


def _symbols(items: list[dict[str, Any]]) -> Any:
    return structure(items, result_type("textDocument/documentSymbol"))


def _workspace_symbol(uri: str) -> lsp.WorkspaceSymbol:
    """A `WorkspaceSymbol` without a range: the file only."""
    return structure({"name": "x", "kind": 13, "location": {"uri": uri}}, lsp.WorkspaceSymbol)


def _calls(direction: str, data: list[dict[str, Any]]) -> Any:
    return structure(data, result_type(f"callHierarchy/{direction}Calls"))


def test_call_shapes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"a.py": "def f():\n    g()\n    g()\n\ndef g(): pass\n"})
    write(tmp_path, {"secret.py": "def h(): pass\n"})
    locator = Locator(LanguageService(root, Config(), lambda _: None))
    uri, secret = (root / "a.py").as_uri(), (tmp_path / "secret.py").as_uri()
    f = {
        "name": "f",
        "kind": 12,
        "uri": uri,
        "range": _r(0, 0, 2, 7),
        "selectionRange": _r(0, 4, 0, 5),
    }
    g = {
        "name": "g",
        "kind": 12,
        "uri": uri,
        "range": _r(4, 0, 4, 13),
        "selectionRange": _r(4, 4, 4, 5),
    }
    h = {"name": "h", "kind": 12, "uri": secret, "range": _r(0, 4, 0, 5),
         "selectionRange": _r(0, 4, 0, 5)}  # fmt: skip
    incoming = calls.incoming(
        _calls("incoming", [{"from": f, "fromRanges": [_r(2, 4, 2, 5), _r(1, 4, 1, 5)]},
                            {"from": h, "fromRanges": []}]),
        locator, "utf-16",
    )  # fmt: skip
    assert [(c["name"], c["kind"], c["line"], c["preview"]) for c in incoming] == [
        ("f", "function", 2, "g()"),
        ("f", "function", 3, "g()"),
    ]
    outgoing = calls.outgoing(
        _calls("outgoing", [{"to": g, "fromRanges": [_r(2, 4, 2, 5), _r(1, 4, 1, 5)]},
                            {"to": h, "fromRanges": []}]),
        structure(f, lsp.CallHierarchyItem), locator, "utf-16",
    )  # fmt: skip
    assert outgoing == [
        {"name": "g", "kind": "function", "path": "a.py", "line": 5, "character": 5,
         "end_line": 5, "end_character": 6, "preview": "def g(): pass",
         "call_sites": [{"path": "a.py", "line": 2, "character": 5},
                        {"path": "a.py", "line": 3, "character": 5}]},
    ]  # fmt: skip
    assert calls.incoming(None, locator, "utf-16") == []


def test_module_of() -> None:
    assert module_of("python:os.path", "python") == "os.path"
    assert module_of("pkg/mod.py", "python") == "pkg.mod"
    assert module_of("pkg/__init__.py", "python") == "pkg"
    assert module_of(".venv/lib/python3.11/site-packages/inpkg/core.py", "python") == "inpkg.core"
    assert module_of("lib/lib.go", "go") == "lib"
    assert module_of("go:fmt", "go") == "fmt"
    assert module_of("src/x.c", "c") == "src/x.c"


# -- inputs --------------------------------------------------------------------------------


def test_inputs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"a.py": "one\ntwo\n", "b.py": "no newline", "e.py": "", "c.txt": "x"})
    manager = LanguageService(root, Config(), lambda _: None)
    source = source_file(manager, "a.py")
    assert (source.shown, source.language, source.line_count) == ("a.py", "python", 2)
    check_position(source, 1, 4)  # the end of a line
    check_position(source, 3, 1)  # after the final newline
    for line, character, words in (
        (3, 2, "0 characters"),
        (0, 1, "has 2 lines"),
        (1, 5, "3 characters"),
    ):
        with pytest.raises(ToolError, match=words):
            check_position(source, line, character)
    assert source_file(manager, "b.py").line_count == 1
    empty = source_file(manager, "e.py")
    assert empty.line_count == 1
    check_position(empty, 1, 1)
    with pytest.raises(ToolError, match="has 1 line;"):
        check_position(empty, 2, 1)
    with pytest.raises(ToolError) as info:
        source_file(manager, "c.txt")
    assert info.value.kind == "unsupported_file_type" and "python" in info.value.message
    os.chmod(root / "a.py", 0)
    try:
        if os.geteuid() != 0:
            with pytest.raises(ToolError) as info:
                source_file(manager, "a.py")
            assert info.value.kind == "file_not_found"
    finally:
        os.chmod(root / "a.py", 0o644)


async def test_lists_of_locations_decode_from_structs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"a.py": "x = 1\n"})
    locator = Locator(LanguageService(root, Config(), lambda _: None))
    items = [Location((root / "a.py").as_uri(), Range(Position(0, 0), Position(0, 1)))] * 3
    with trio.fail_after(5):
        await locator.prepare({i.uri for i in items})
    assert len(finish(locator.location(i.uri, i.range, "utf-8") for i in items)) == 1
