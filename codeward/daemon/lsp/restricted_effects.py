"""What a server's restricted configuration takes away in a root, and which of those the
servers a tool call consulted had: the call's `restricted_effects`.

A restricted server whose configuration changes nothing this root uses answers as it would
trusted (ruff, bash-language-server, or basedpyright in a root without a virtualenv); one
that does (basedpyright beside a `.venv` it may not run) may answer differently, and one
that does not start in an untrusted root answers nothing. `effect(name, config, root)`
says which, cheaply, from the root's top-level files; the pool records each server a call
starts or is refused into the call's `consulted()` table (a context variable the tool
context sets, shared with the tasks the call starts).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

from codeward.daemon.config import ServerConfig

_CONSULTED: ContextVar[dict[str, str] | None] = ContextVar("restricted_effects", default=None)


def collect(effects: dict[str, str]) -> None:
    """Record into `effects` what the servers the current task (and the tasks it starts
    from now on) consult lose to the restriction."""
    _CONSULTED.set(effects)


def record(server: str, what: str) -> None:
    effects = _CONSULTED.get()
    if effects is not None:
        effects.setdefault(server, what)


def _virtualenv(root: Path) -> bool:
    return any((root / name / "pyvenv.cfg").is_file() for name in (".venv", "venv", "env"))


def _python(config: ServerConfig, root: Path) -> str | None:
    if _virtualenv(root):
        return "does not run the project's virtualenv (its packages may show as unresolved)"
    return None


GO_TOOLCHAIN = re.compile(rb"^\s*toolchain\s", re.MULTILINE)


def _gopls(config: ServerConfig, root: Path) -> str | None:
    try:
        if GO_TOOLCHAIN.search((root / "go.mod").read_bytes()):
            return "runs the local go, not the toolchain go.mod names"
    except OSError:
        pass
    try:
        for path in sorted(root.glob("*.go"))[:200]:
            if b'import "C"' in path.read_bytes():
                return "builds without cgo (files that import C are left out)"
    except OSError:
        pass
    return None


def _clangd(config: ServerConfig, root: Path) -> str | None:
    if any(arg.startswith("--query-driver") for arg in config.command):
        return "runs without --query-driver (no compiler asked for its include paths)"
    return None


def _typescript(config: ServerConfig, root: Path) -> str | None:
    if (root / "node_modules" / "typescript").is_dir():
        return "uses codeward's typescript, not the project's (and no tsserver plugins)"
    try:
        if b'"plugins"' in (root / "tsconfig.json").read_bytes():
            return "loads no tsserver plugins"
    except OSError:
        pass
    return None


def _svelte(config: ServerConfig, root: Path) -> str | None:
    # whatever the root holds: its formatting, TypeScript code actions and completions
    # and HTML completions are off (they would resolve the project's prettier config)
    return "formats nothing and offers no TypeScript code actions (nor svelte or vite config)"


def _jdtls(config: ServerConfig, root: Path) -> str | None:
    names = ("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle")
    if any((root / name).is_file() for name in names):
        return "does not import the Maven or Gradle build"
    return None


def _rust_analyzer(config: ServerConfig, root: Path) -> str | None:
    what = "runs no build scripts or proc macros and loads no dependencies"
    if (root / "build.rs").is_file():
        return what
    try:
        with open(root / "Cargo.toml", "rb") as f:
            manifest = tomllib.load(f)
    except OSError:
        return None
    except tomllib.TOMLDecodeError:
        return what  # cannot tell
    if "workspace" in manifest:
        return what
    tables = [manifest, *manifest.get("target", {}).values()]
    for table in tables:
        if isinstance(table, dict) and any(
            table.get(k) for k in ("dependencies", "build-dependencies", "dev-dependencies")
        ):
            return what
    return None


EFFECTS: dict[str, Callable[[ServerConfig, Path], str | None]] = {
    "basedpyright": _python,
    "pylsp": _python,
    "jedi-language-server": _python,
    "gopls": _gopls,
    "clangd": _clangd,
    "typescript-language-server": _typescript,
    "svelte-language-server": _svelte,
    "jdtls": _jdtls,
    "rust-analyzer": _rust_analyzer,
}


def effect(name: str, config: ServerConfig, root: Path) -> str | None:
    """What server `name` (as configured, before its restriction) loses to its restricted
    configuration in `root`; None when nothing this root uses (and for every server whose
    restricted configuration is its own)."""
    found = EFFECTS.get(name)
    return None if found is None else found(config, root)
