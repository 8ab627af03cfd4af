"""Rules read from the package's source: the JSON-RPC protocol (`codeward/protocol/`) is
sans IO; no lock is kept where actors would share it (a module's or a class's own level):
each actor's order comes from the state it owns; and no module reads or writes another
module's objects' private parts (`obj._x`): an actor's state is its own."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tests.test_import_rules import PACKAGE, _imports, _sources

# What does I/O or schedules it: none of it below the connections.
IO_MODULES = ("trio", "anyio", "asyncio", "socket", "select", "selectors", "subprocess")
# What makes a lock or a limit that callers wait on.
LOCKS = frozenset(
    {"Lock", "RLock", "StrictFIFOLock", "Semaphore", "BoundedSemaphore", "CapacityLimiter"}
    | {"Condition", "ParkingLot"}
)


def _io_imports(source: str, package: str) -> list[str]:
    return [
        f"{line}: {module}"
        for line, module, _ in _imports(source, package)
        if module.split(".")[0] in IO_MODULES
    ]


def test_the_protocol_does_no_io() -> None:
    found: list[str] = []
    checked = 0
    for _, package, path in _sources():
        if path.is_relative_to(PACKAGE / "protocol"):
            checked += 1
            shown = path.relative_to(PACKAGE.parent)
            found += [f"{shown}:{v}" for v in _io_imports(path.read_text(), package)]
    assert checked >= 8  # peer, framing, messages, mcp...
    assert found == []


def _shared_locks(source: str) -> Iterator[str]:
    """`line: name` of each lock made at a module's or a class's level (not per instance)."""
    tree = ast.parse(source)
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for body in bodies:
        for statement in body:
            if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
                continue
            for node in ast.walk(statement.value):
                if isinstance(node, ast.Call):
                    name = ast.unparse(node.func).rpartition(".")[2]
                    if name in LOCKS:
                        yield f"{statement.lineno}: {ast.unparse(statement)}"


def _everywhere(check: Callable[[str], Iterator[str]]) -> list[str]:
    """`path:finding` for what `check` finds in the source of each module of codeward/."""
    return [
        f"{path.relative_to(PACKAGE.parent)}:{finding}"
        for _, _, path in _sources()
        for finding in check(path.read_text())
    ]


def test_no_lock_is_shared_across_actors() -> None:
    assert _everywhere(_shared_locks) == []


def _module_private(tree: ast.Module) -> set[str]:
    """The private names the classes of a module give their instances: `self._x` they
    set, and their `_x` methods."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return names


def _private_reaches(source: str) -> Iterator[str]:
    """`line: obj._x` for each private attribute used on something other than `self`,
    `cls` or an imported module, and not one this module's own classes define."""
    tree = ast.parse(source)
    own = _module_private(tree)
    modules = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or node.attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls", *modules}:
            continue
        yield f"{node.lineno}: {ast.unparse(node)}"


def test_no_module_reaches_into_another_modules_objects() -> None:
    assert _everywhere(_private_reaches) == []


def test_the_checks_see_what_they_look_for() -> None:
    io = "import trio\nfrom socket import socket\nimport json\nfrom . import framing\n"
    assert _io_imports(io, "codeward.protocol") == ["1: trio", "2: socket"]
    locks = (
        "import trio\n"
        "GLOBAL = trio.Lock()\n"
        "class Actor:\n"
        "    shared: trio.CapacityLimiter = trio.CapacityLimiter(1)\n"
        "    def __init__(self) -> None:\n"
        "        self.own = trio.Lock()\n"
        "def work() -> None:\n"
        "    local = trio.Semaphore(2)\n"
        "pairs = {m: trio.StrictFIFOLock() for m in 'ab'}\n"
    )
    assert list(_shared_locks(locks)) == [
        "2: GLOBAL = trio.Lock()",
        "9: pairs = {m: trio.StrictFIFOLock() for m in 'ab'}",
        "4: shared: trio.CapacityLimiter = trio.CapacityLimiter(1)",
    ]
    reaches = (
        "import os\n"
        "class Gate:\n"
        "    def __init__(self) -> None:\n"
        "        self._open = True\n"
        "    def _shut(self) -> None: ...\n"
        "def use(gate: Gate, server: object) -> None:\n"
        "    gate._shut(); gate._open; os._exit; self_._docs\n"
        "    server._freshness.forget()\n"
        "    server._docs = None\n"
    )
    assert sorted(_private_reaches(reaches)) == [
        "7: self_._docs",
        "8: server._freshness",
        "9: server._docs",
    ]
