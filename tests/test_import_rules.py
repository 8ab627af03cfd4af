"""Rules of the import graph, checked by reading every import of the package.

The language-server layer is closed: outside `codeward/daemon/lsp/`, code imports only its
interface (`lsp.service`) and the value types it declares public, never a server's internals
(the actor, its connection, documents or process), and uses a LanguageService only through
its interface (no server actor, no part of the service). And modules import in one
direction: the session never imports the tools that use it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import codeward
import codeward.daemon.lsp as layer
from codeward.daemon.lsp import service

PACKAGE = Path(codeward.__file__).parent
LSP = "codeward.daemon.lsp"

# What the rest of the daemon may import from the layer, module by module (None: any name).
PUBLIC: dict[str, frozenset[str] | None] = {
    LSP: frozenset(layer.__all__),  # (the service's names, loaded on first use)
    f"{LSP}.service": frozenset(service.__all__),
    f"{LSP}.types": None,  # value types of the servers' replies (Location, Diagnostic...)
    f"{LSP}.shapes": None,  # lsprotocol types at the seam: converter, typed answers, params
    f"{LSP}.positions": None,  # Encoding, LineIndex: positions in the servers' encodings
    f"{LSP}.uris": None,  # file URIs and paths
    f"{LSP}.defaults": None,  # the built-in languages and servers of the config
    f"{LSP}.budget": None,  # the daemon-wide cap on live servers, shared by sessions
    # a tool call collects what the root's restriction took from the servers (and the
    # formatter) it asked
    f"{LSP}.restricted_effects": frozenset({"collect", "record"}),
    # editors' buffers over the disk: the holder's protocol and the buffer (the editor
    # dialect implements the one and hands the service the other's parts)
    f"{LSP}.overlay": frozenset({"Buffer", "EditorHolder", "collect"}),
    # the daemon starts a root's main servers' processes while its sessions still load
    f"{LSP}.early": frozenset({"Spawned", "canonical_root", "discard", "spawn"}),
    f"{LSP}.early_process": frozenset({"keep", "start_servers"}),
    # a write's note of what the type checker's own project leaves out (`edits.left_out`)
    f"{LSP}.pyright_scope": frozenset({"SCOPED_SERVERS", "pyright_scope"}),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(source: str, package: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) of every import in `source` (a module of `package`), relative
    ones resolved; name is None for `import module`. Imports under `if TYPE_CHECKING:` and
    inside functions count too."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, module] if module else base)
            for alias in node.names:
                yield node.lineno, module, alias.name


def _sources() -> Iterator[tuple[str, str, Path]]:
    """(module, its package, path) of every module of codeward."""
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        yield name, name if path.name == "__init__.py" else name.rpartition(".")[0], path


def _allowed(module: str, name: str | None) -> bool:
    if module == LSP and name is not None and f"{LSP}.{name}" in PUBLIC:
        return True  # `from codeward.daemon.lsp import service`
    if module not in PUBLIC:
        return False
    names = PUBLIC[module]
    return name is None or names is None or name in names


def _violations(source: str, package: str) -> list[str]:
    found: list[str] = []
    for line, module, name in _imports(source, package):
        inside = module == LSP or module.startswith(LSP + ".")
        if inside and not _allowed(module, name):
            shown = f"from {module} import {name}" if name is not None else f"import {module}"
            found.append(f"{line}: {shown}")
    return found


def test_nothing_outside_the_layer_imports_its_internals() -> None:
    violations: list[str] = []
    checked = 0
    for _, package, path in _sources():
        if path.is_relative_to(PACKAGE / "daemon" / "lsp"):
            continue
        shown = path.relative_to(PACKAGE.parent)
        violations += [f"{shown}:{v}" for v in _violations(path.read_text(), package)]
        checked += 1
    assert checked > 50  # the walk found the package's modules
    assert violations == []


def test_the_check_sees_internal_imports() -> None:
    """The inspection itself: each way of reaching an internal module is caught."""
    probe = (
        "from codeward.daemon.lsp.server import LanguageServer\n"
        "import codeward.daemon.lsp.connection\n"
        "from codeward.daemon.lsp import documents\n"
        "from ..lsp.process import ServerProcess\n"
        "from codeward.daemon.lsp.service import LanguageService, RACY_NS\n"
        "from codeward.daemon.lsp.types import Location\n"
        "from codeward.daemon.lsp import LanguageService as Service, service\n"
        "import codeward.daemon.lsp\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from codeward.daemon.lsp.watcher import watch_root\n"
    )
    assert _violations(probe, "codeward.daemon.tools") == [
        "1: from codeward.daemon.lsp.server import LanguageServer",
        "2: import codeward.daemon.lsp.connection",
        "3: from codeward.daemon.lsp import documents",
        "4: from codeward.daemon.lsp.process import ServerProcess",
        "5: from codeward.daemon.lsp.service import RACY_NS",
        "11: from codeward.daemon.lsp.watcher import watch_root",
    ]


# The service's public values besides its methods and properties (set in its __init__).
SERVICE_VALUES = frozenset({"root", "config"})
# What the service must never hand out: a server's actor, or its own parts.
SERVERS_INSIDE = frozenset({"servers", "server_for", "started", "live_servers", "pool"})


def _interface() -> frozenset[str]:
    """What code outside the layer may use of a LanguageService: its public methods and
    properties, and `SERVICE_VALUES`."""
    public = {n for n in dir(service.LanguageService) if not n.startswith("_")}
    return frozenset(public) | SERVICE_VALUES


def _is_service_annotation(node: ast.expr | None) -> bool:
    return node is not None and "LanguageService" in ast.unparse(node)


def _service_uses(source: str) -> Iterator[tuple[int, str]]:
    """(line, name) of every attribute used on a LanguageService in `source`: a session's
    `.lsp` (not a config's), a name or parameter annotated `LanguageService` or bound to
    one, and `self.X` where the class keeps one in X."""
    tree = ast.parse(source)
    names: set[str] = set()
    fields: set[str] = set()

    def is_service(node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "lsp":
            inner = node.value
            return not (
                isinstance(inner, ast.Name | ast.Attribute) and "config" in ast.unparse(inner)
            )
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.value.id == "self" and node.attr in fields
        return False

    for _ in range(2):  # bindings to bindings: a second pass sees them
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and _is_service_annotation(node.annotation):
                names.add(node.arg)
            elif isinstance(node, ast.AnnAssign) and _is_service_annotation(node.annotation):
                if isinstance(node.target, ast.Name):
                    names.add(node.target.id)
                    fields.add(node.target.id)  # a class field
                elif isinstance(node.target, ast.Attribute):
                    fields.add(node.target.attr)
            elif isinstance(node, ast.Assign) and is_service(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        fields.add(target.attr)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_service(node.value):
            yield node.lineno, node.attr


def _service_violations(source: str) -> list[str]:
    allowed = _interface()
    uses = sorted(_service_uses(source))
    return [f"{line}: .{name}" for line, name in uses if name not in allowed]


def test_nothing_outside_the_layer_reaches_a_server() -> None:
    """Outside `codeward/daemon/lsp/`, a LanguageService is used through its interface
    only: no server actor, no part of the service (so no server's internals either)."""
    assert not SERVERS_INSIDE & _interface()
    violations: list[str] = []
    used: set[str] = set()
    for _, _, path in _sources():
        if path.is_relative_to(PACKAGE / "daemon" / "lsp"):
            continue
        source = path.read_text()
        used |= {name for _, name in _service_uses(source)}
        shown = path.relative_to(PACKAGE.parent)
        violations += [f"{shown}:{v}" for v in _service_violations(source)]
    assert {"request", "diagnostics", "execute_command", "files_changed"} <= used  # it looked
    assert violations == []


def test_the_check_sees_a_reach_into_the_service() -> None:
    probe = (
        "def f(session, config, service: LanguageService):\n"
        "    session.lsp.request\n"
        "    session.lsp.servers['ruff']\n"
        "    config.lsp.max_file_bytes\n"
        "    service.pool.live()\n"
        "    alias = session.lsp\n"
        "    alias.server_for('ruff')\n"
        "class Holder:\n"
        "    other: LanguageService\n"
        "    def __init__(self, session):\n"
        "        self.kept = session.lsp\n"
        "    def g(self):\n"
        "        return self.kept.started('x'), self.other.texts, self.kept.known_text\n"
    )
    assert _service_violations(probe) == [
        "3: .servers",
        "5: .pool",
        "7: .server_for",
        "13: .started",
        "13: .texts",
    ]


def _graph() -> dict[str, set[str]]:
    """Module -> the codeward modules it imports (`from package import module` included)."""
    sources = list(_sources())
    names = {name for name, _, _ in sources}
    graph: dict[str, set[str]] = {}
    for name, package, path in sources:
        edges = graph.setdefault(name, set())
        for _, module, imported in _imports(path.read_text(), package):
            target = f"{module}.{imported}" if imported is not None else module
            if target in names:
                edges.add(target)
            elif module in names:
                edges.add(module)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_the_session_and_the_tools_import_in_one_direction() -> None:
    graph = _graph()
    assert "codeward.daemon.session" in graph["codeward.daemon.tools.host"]
    through = [
        c
        for c in _circles(graph)
        if any(m.startswith(("codeward.daemon.session", "codeward.daemon.tools")) for m in c)
    ]
    assert through == []


def test_no_module_imports_itself_through_others() -> None:
    """No import circles anywhere in the package."""
    assert [sorted(c) for c in _circles(_graph())] == []


def test_circles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e", "d"}}
    assert _circles(graph) == [{"a", "b", "c"}]


def test_the_layers_names_are_the_services() -> None:
    """`from codeward.daemon.lsp import X` gives the service's X, for every name it lists."""
    assert set(layer.__all__) <= set(service.__all__)
    for name in layer.__all__:
        assert getattr(layer, name) is getattr(service, name)
