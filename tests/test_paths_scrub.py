"""The one path scrubber: paths in free text root-relative inside the root, `<path>` outside."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from hypothesis import example, given
from hypothesis import strategies as st
from lsprotocol import types as lsp

from codeward.daemon.config import Config, DaemonConfig
from codeward.daemon.intel import calls
from codeward.daemon.intel.locations import Locator
from codeward.daemon.lsp.service import LanguageService
from codeward.daemon.lsp.shapes import result_type, structure
from codeward.daemon.paths import scrub, shown_path
from tests.conftest import OpenClient
from tests.intel_support import write
from tests.lsp_support import needs

ROOT = Path("/home/u/proj")

# Words that merely contain slashes, and URLs: never paths.
UNTOUCHED = [
    "see markdown/README.md and text/markdown",
    "Cannot load 'markdown'/x/y",
    "(markdown)/x/y and *markdown*/a/b and _markdown_/a/b",
    "<b>markdown</b>/a/b and </div>",
    "and/or, 1/2/3, x[0]/y, a/b/../c, ~/x, ./a/b, ../a/b",
    "see https://github.com/x/markdown/y and http://localhost:8080/a/b",
    "$ref #/definitions/a/b, s/a/b/g, 2024/01/02",
    "type /help for help",  # one part: a command, not a file
    "kind: markdown//x/y",
    "Request textDocument/references failed",
]


@pytest.mark.parametrize("text", UNTOUCHED)
def test_words_with_slashes_are_left_alone(text: str) -> None:
    assert scrub(text, ROOT) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/home/u/proj/src/a.py:3:4: error", "src/a.py:3:4: error"),
        ("yaml-schema: file:///home/u/proj/schema.json", "yaml-schema: schema.json"),
        ("file:///home/u/proj/a%20b.py", "a b.py"),
        ("file:///home/u/proj/:/home/u/proj", ".:."),  # a `:` ends a URI as it ends a path
        ("the root /home/u/proj is open", "the root . is open"),
        ("see /home/u/proj/a.py.", "see a.py."),
        ("'/home/u/proj/a b/c.py' is bad", "'a b/c.py' is bad"),
        ("(/home/u/proj/lib/x.py)", "(lib/x.py)"),
        ("/home/u/proj/src/../a.py", "a.py"),
        ("call in /home/u/proj/pkg/b.ts", "call in pkg/b.ts"),
        (
            "error: /home/u/proj/src/x.py: bad; also /home/u/proj, /tmp/x.",
            "error: src/x.py: bad; also ., <path>.",
        ),
    ],
)
def test_paths_inside_the_root_become_relative(text: str, expected: str) -> None:
    assert scrub(text, ROOT) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("failed at /usr/lib/x.so and file:///etc/passwd", "failed at <path> and <path>"),
        ("/home/u/projx/a.py", "<path>"),  # a sibling sharing the root's prefix
        ("/home/u/proj/../secret/a.py", "<path>"),
        ("(/usr/lib/x) and [/usr/lib/y]", "(<path>) and [<path>]"),
        ("--root=/srv/a/b", "--root=<path>"),
        ("PATH=/usr/bin:/usr/local/bin", "PATH=<path>:<path>"),
        ("in `/opt/a/b`.", "in `<path>`."),
        ("fatal: '/tmp/a b/c' is not here", "fatal: '<path>' is not here"),
        ('hint: "/tmp/q q" and', 'hint: "<path>" and'),
        ("```markdown\n/usr/x/y\n```", "```markdown\n<path>\n```"),
        ("\t/usr/lib/node_modules/@scope/pkg/index.js", "\t<path>"),
        ("/home/ü/dir/x", "<path>"),
        ('{"uri":"file:///etc/x"}', '{"uri":"<path>"}'),
        ("error: /home/u/other/x.py: bad.", "error: <path>: bad."),
        ("a list /a/b,/c/d", "a list <path>,<path>"),
        ("file:///tmp/r and a/b/../c and ~/x", "<path> and a/b/../c and ~/x"),
    ],
)
def test_paths_outside_the_root_are_hidden(text: str, expected: str) -> None:
    assert scrub(text, ROOT) == expected


@pytest.mark.parametrize(
    ("path", "root", "shown"),
    [
        ("/home/u/proj", ROOT, "."),
        ("/home/u/proj/src/a.py", ROOT, "src/a.py"),
        ("/home/u/projects/a.py", ROOT, None),  # a sibling that starts with the root's name
        ("/home/u/other.py", ROOT, None),
        ("/etc/passwd", Path("/"), "etc/passwd"),
        ("/", Path("/"), "."),
    ],
)
def test_shown_path_is_root_relative_or_none(path: str, root: Path, shown: str | None) -> None:
    """The one root-relative view of a resolved path, for messages, reads and scrubbing."""
    assert shown_path(path, root) == shown


def test_a_caller_may_show_paths_its_own_way() -> None:
    def show(path: str) -> str | None:
        return "python:os" if path.startswith("/usr/lib/python3") else shown_path(path, ROOT)

    text = "see /usr/lib/python3.11/os.py and /etc/x/y and /home/u/proj/a.py"
    assert scrub(text, ROOT, show) == "see python:os and <path> and a.py"


_FRAGMENTS = st.sampled_from(
    [" ", "/", "a", ".", "'", '"', "`", ":", "(", ")", "file://", "/home/u/proj", "/usr",
     "markdown", "\n", "%20", "<path>", "..", "~", "-", ",", "é"]
)  # fmt: skip


@given(st.lists(_FRAGMENTS, max_size=12).map("".join))
@example("file:///home/u/proj/:/home/u/proj")  # once found: the URI took the `:` and a path
def test_scrubbing_twice_changes_nothing_more(text: str) -> None:
    once = scrub(text, ROOT)
    assert scrub(once, ROOT) == once


# -- free-text fields of tool answers ---------------------------------------------------------


@pytest.fixture
def daemon_config() -> Config:
    return Config(daemon=DaemonConfig(idle_timeout=600.0))  # the built-in servers


@needs("yaml-language-server")
async def test_a_diagnostic_source_names_the_schema_root_relative(
    open_client: OpenClient, project: Path
) -> None:
    # yaml-language-server says which schema a diagnostic comes from, as a file URI.
    write(
        project,
        {
            "schemas/config.json": '{"type": "object", "properties": {"name": {"type": "string"}}}',
            "c.yaml": "# yaml-language-server: $schema=./schemas/config.json\nname: 3\n",
        },
    )
    client = await open_client(project)
    with trio.fail_after(60):
        result = await client.tool("get_diagnostics", path="c.yaml")
    [found] = result["diagnostics"]
    assert (found["line"], found["source"]) == (2, "yaml-schema: schemas/config.json")
    assert str(project) not in str(result)


def test_call_names_show_paths_as_the_tools_do(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"pkg/a.ts": "f();\n", "pkg/b.ts": "g();\n"})
    locator = Locator(LanguageService(root, Config(), lambda _: None))

    def item(name: str, file: str) -> dict[str, object]:
        rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
        uri = (root / file).as_uri()
        return {"name": name, "kind": 2, "uri": uri, "range": rng, "selectionRange": rng}

    # A module-level caller is named after its file; a name may name a file outside.
    result = [
        {"from": item(str(root / "pkg/a.ts"), "pkg/a.ts"), "fromRanges": []},
        {"from": item(f"run {tmp_path}/secret/x.ts", "pkg/b.ts"), "fromRanges": []},
    ]
    incoming = structure(result, result_type("callHierarchy/incomingCalls"))
    shown = calls.incoming(incoming, locator, "utf-16")
    assert [c["name"] for c in shown] == ["pkg/a.ts", "run <path>"]
    outgoing = calls.outgoing(
        structure(
            [{"to": item(str(root / "pkg/b.ts"), "pkg/b.ts"), "fromRanges": []}],
            result_type("callHierarchy/outgoingCalls"),
        ),
        structure(item("f", "pkg/a.ts"), lsp.CallHierarchyItem),
        locator,
        "utf-16",
    )
    assert [c["name"] for c in outgoing] == ["pkg/b.ts"]
