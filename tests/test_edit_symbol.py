"""edit_symbol on real servers: basedpyright (a class and its methods, a decorated function,
a top-level function) and gopls (brace bodies), each action, the modes, and bad inputs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.editloop_support import SharedDaemon, no_leaked_processes, shared_client, shared_daemon
from tests.rpc import RpcClient, RpcFailure

__all__ = ["no_leaked_processes", "shared_client", "shared_daemon"]  # the module's fixtures
pytestmark = pytest.mark.servers("basedpyright", "ruff", "gopls")

SHAPES = '''\
import functools


class Greeter:
    """Says hello."""

    def __init__(self, name: str) -> None:
        self.name = name

    def hello(
        self, loud: bool = False
    ) -> str:
        """The greeting."""
        text = "hello " + self.name
        return text.upper() if loud else text


@functools.lru_cache
def cached(n: int) -> int:
    return n * 2


def main() -> None:
    print(Greeter("x").hello(), cached(2))


def one_liner() -> int: return 1
'''

GO = """package main

import "fmt"

type Box struct{ n int }

// Size is the box's size.
func (b *Box) Size() map[string]struct{} {
\tif b.n > 0 {
\t\tfmt.Println("{")
\t}
\treturn nil
}

func main() {
\tfmt.Println((&Box{}).Size())
}
"""


async def create(client: RpcClient, path: str, text: str) -> str:
    result = await client.tool("edit_file", path=path, content=text, create=True)
    assert result["written"], result
    return result["content_hash"]


async def failure(client: RpcClient, **arguments: Any) -> RpcFailure:
    with pytest.raises(RpcFailure) as info:
        await client.tool("edit_symbol", **arguments)
    return info.value


def introduced(result: dict[str, Any], file: str) -> list[str]:
    """The errors the edit introduced in `file`."""
    return [d["message"] for f in result["diagnostics_after"] if f["file"] == file
            for d in f["introduced"] if d["severity"] == "error"]  # fmt: skip


async def test_python_actions(shared_client: RpcClient, shared_daemon: SharedDaemon) -> None:
    client, root = shared_client, shared_daemon.root
    await create(client, "shapes.py", SHAPES)

    # replace_body of a method with a multi-line header: the docstring and body go, the
    # header stays, the text is indented to the body's level.
    result = await client.tool(
        "edit_symbol", path="shapes.py", symbol="Greeter.hello", action="replace_body",
        text='return "hi " + self.name\n',
    )  # fmt: skip
    assert result["written"] and result["symbol"]["name_path"] == "Greeter.hello", result
    assert result["symbol"]["kind"] == "method"
    text = (root / "shapes.py").read_text()
    assert '    ) -> str:\n        return "hi " + self.name\n\n\n@functools' in text
    assert "The greeting" not in text
    assert introduced(result, "shapes.py") == []

    # replace a decorated function: the decorator is in basedpyright's range.
    new_cached = "@functools.cache\ndef cached(n: int) -> int:\n    return n * 3\n"
    result = await client.tool(
        "edit_symbol", path="shapes.py", symbol="cached", action="replace", text=new_cached
    )
    text = (root / "shapes.py").read_text()
    assert "@functools.cache\ndef cached(n: int) -> int:\n    return n * 3\n" in text
    assert "lru_cache" not in text, text

    # insert a method before and after another, given indented or not: at the method's level.
    await client.tool(
        "edit_symbol", path="shapes.py", symbol="Greeter.hello", action="insert_before",
        text="def before(self) -> int:\n    return 1\n\n",
    )  # fmt: skip
    result = await client.tool(
        "edit_symbol", path="shapes.py", symbol="Greeter.hello", action="insert_after",
        text="\n        def after(self) -> int:\n            return 2\n",
    )  # fmt: skip
    text = (root / "shapes.py").read_text()
    assert "    def before(self) -> int:\n        return 1\n\n    def hello(" in text
    assert "self.name\n\n    def after(self) -> int:\n        return 2\n\n\n@functools" in text
    assert introduced(result, "shapes.py") == []

    # a top-level function's body; a one-line body becomes a block.
    await client.tool(
        "edit_symbol", path="shapes.py", symbol="main", action="replace_body",
        text="g = Greeter('y')\nprint(g.hello(loud=True))",
    )  # fmt: skip
    await client.tool(
        "edit_symbol", path="shapes.py", symbol="one_liner", action="replace_body", text="return 2"
    )
    text = (root / "shapes.py").read_text()
    assert "def main() -> None:\n    g = Greeter('y')\n    print(g.hello(loud=True))\n" in text
    assert text.endswith("def one_liner() -> int:\n    return 2\n")
    # the class itself: replace_body keeps `class Greeter:`
    result = await client.tool(
        "edit_symbol", path="shapes.py", symbol="Greeter", action="replace_body",
        text="def hello(self, loud: bool = False) -> str:\n    return 'x'\n",
        mode="preview",
    )  # fmt: skip
    assert not result["written"] and "+class Greeter:" not in result["diff"]
    assert "+        return 'x'" in result["diff"]
    assert (root / "shapes.py").read_text() == text  # preview wrote nothing


async def test_python_modes_and_errors(
    shared_client: RpcClient, shared_daemon: SharedDaemon
) -> None:
    client, root = shared_client, shared_daemon.root
    content_hash = await create(client, "modes.py", SHAPES)

    # safe refuses an edit that introduces an error, and writes nothing.
    result = await client.tool(
        "edit_symbol", path="modes.py", symbol="main", action="replace_body",
        text="print(undefined_name)", mode="safe",
    )  # fmt: skip
    assert result["refused"] and not result["written"], result
    assert any("undefined_name" in m for m in introduced(result, "modes.py"))
    assert (root / "modes.py").read_text() == SHAPES
    # safe writes one that breaks nothing; the old hash is then stale.
    result = await client.tool(
        "edit_symbol", path="modes.py", symbol="main", action="replace_body",
        text="print(cached(3))", mode="safe", expected_hash=content_hash,
    )  # fmt: skip
    assert result["written"] and "print(cached(3))" in (root / "modes.py").read_text()
    stale = await failure(
        client, path="modes.py", symbol="main", action="replace_body", text="pass",
        expected_hash=content_hash,
    )  # fmt: skip
    assert stale.kind == "stale_edit"

    # an ambiguous name lists the candidates with their lines; an unknown one the nearest.
    await create(client, "twice.py", "class A:\n    def run(self): pass\n\n\nclass B:\n"
                 "    def run(self): pass\n")  # fmt: skip
    err = await failure(client, path="twice.py", symbol="run", action="replace_body", text="x=1")
    assert err.kind == "invalid_arguments" and "A.run" in err.message and "B.run" in err.message
    assert "line 2" in err.message and "line 6" in err.message
    assert [c["name_path"] for c in err.data["candidates"]] == ["A.run", "B.run"]
    err = await failure(client, path="modes.py", symbol="Greeter.helo", action="replace",
                        text="x = 1")  # fmt: skip
    assert err.kind == "invalid_arguments" and "Greeter.hello" in err.message
    err = await failure(client, path="modes.py", symbol="Nothing.here", action="replace",
                        text="x = 1")  # fmt: skip
    assert "Greeter" in err.message and "main" in err.message  # its top-level names

    # bad inputs: nothing is written.
    before = (root / "modes.py").read_text()
    err = await failure(client, path="modes.py", symbol="main", action="replace", text="  \n")
    assert err.kind == "invalid_arguments" and "empty" in err.message
    err = await failure(client, path="modes.py", symbol="main", action="rewrite", text="x")
    assert err.kind == "invalid_arguments" and "replace_body" in err.message
    err = await failure(client, path="../outside.py", symbol="main", action="replace", text="x")
    assert err.kind == "path_outside_project"
    err = await failure(client, path="modes.py", symbol="...", action="replace", text="x")
    assert err.kind == "invalid_arguments" and "name path" in err.message
    err = await failure(client, path="modes.py", symbol="Greeter.name", action="replace_body",
                        text="x")  # fmt: skip
    assert err.kind == "invalid_arguments" and "no body" in err.message, err.message
    assert (root / "modes.py").read_text() == before


async def test_go_brace_bodies(shared_client: RpcClient, shared_daemon: SharedDaemon) -> None:
    client, root = shared_client, shared_daemon.root
    await create(client, "go.mod", "module example.com/shapes\n\ngo 1.19\n")
    await create(client, "main.go", GO)

    # the body between the function's own braces, not the `struct{}` of its return type
    # nor the "{" in a string; indented with the file's tabs.
    result = await client.tool(
        "edit_symbol", path="main.go", symbol="Box.Size", action="replace_body",
        text="if b == nil {\n    return nil\n}\nreturn map[string]struct{}{}",
    )  # fmt: skip
    assert result["symbol"]["name_path"] == "Box.Size", result
    text = (root / "main.go").read_text()
    assert (
        "func (b *Box) Size() map[string]struct{} {\n\tif b == nil {\n\t    return nil\n\t}\n"
        "\treturn map[string]struct{}{}\n}\n"
    ) in text, text
    assert introduced(result, "main.go") == []

    await client.tool(
        "edit_symbol", path="main.go", symbol="main", action="insert_before",
        text="// helper doubles.\nfunc helper(n int) int { return n * 2 }\n\n",
    )  # fmt: skip
    result = await client.tool(
        "edit_symbol", path="main.go", symbol="main", action="replace",
        text='func main() {\n\tfmt.Println(helper(2), (&Box{}).Size())\n}',
    )  # fmt: skip
    text = (root / "main.go").read_text()
    assert text.endswith(
        "func helper(n int) int { return n * 2 }\n\n"
        "func main() {\n\tfmt.Println(helper(2), (&Box{}).Size())\n}\n"
    ), text
    assert introduced(result, "main.go") == []
    # safe refuses a body that does not compile
    result = await client.tool(
        "edit_symbol", path="main.go", symbol="helper", action="replace_body",
        text='return "two"', mode="safe",
    )  # fmt: skip
    assert result["refused"] and "return n * 2" in (root / "main.go").read_text()


def test_cli_edit_symbol(shared_daemon: SharedDaemon) -> None:
    env, root = shared_daemon.env, shared_daemon.root
    (root / "cli.py").write_text("def main() -> None:\n    print(1)\n")
    preview = env.run(
        "--root", str(root), "edit-symbol", "cli.py", "main", "replace_body", "--mode",
        "preview", cwd=root, stdin="print(2)\n",
    )  # fmt: skip
    assert preview.returncode == 0, preview.stderr
    assert "+    print(2)" in preview.stdout and "preview: nothing written" in preview.stderr
    assert (root / "cli.py").read_text() == "def main() -> None:\n    print(1)\n"
    done = env.run(
        "--root", str(root), "edit-symbol", "cli.py", "main", "insert_after", "--text",
        "\n\nX = 1", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (root / "cli.py").read_text() == "def main() -> None:\n    print(1)\n\n\nX = 1\n"
    unknown = env.run(
        "--root", str(root), "edit-symbol", "cli.py", "mian", "replace", "--text", "x", cwd=root
    )
    assert unknown.returncode == 1 and "main" in unknown.stderr
    assert "[invalid_arguments]" in unknown.stderr
