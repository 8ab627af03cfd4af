"""Indicators for files outside the root: `python:os.path`, `go:fmt`, `elixir:File`, ...

A standard-library or installed-dependency file outside the project is shown by what it
is, never by where it is. Every function here is pure (Elixir reads the file for its
`defmodule`) and returns None for a file it does not recognise: such a file is dropped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

from codeward.daemon.child_path import clean_path

_PYTHON_DIR = re.compile(r"python\d+(\.\d+)?t?$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*$")
_ELIXIR_APPS = frozenset({"elixir", "eex", "ex_unit", "iex", "logger", "mix"})
_OTP_APP = re.compile(r"[a-z][a-z0-9_]*-\d[\w.]*$")
_DEFMODULE = re.compile(r"^\s*defmodule\s+([A-Z][\w.]*)", re.MULTILINE)
_SYSTEM_INCLUDES = ("/usr/include/", "/usr/local/include/")
_COMPILER_INCLUDE = re.compile(r"^/usr/lib/(?:gcc|llvm-[\d.]+|clang)/.*?/include/")


def _dotted(parts: Sequence[str]) -> str | None:
    """`a.b.c` from module path parts (`a/b/c.py`, `a/b/__init__.pyi`), else None."""
    if not parts:
        return None
    *dirs, last = parts
    stem = last.split(".", 1)[0]
    names = [*dirs] if stem == "__init__" else [*dirs, stem]
    if names:
        names[0] = names[0].removesuffix("-stubs")
    if not names or not all(_IDENTIFIER.match(n) for n in names):
        return None
    return ".".join(names)


def python_module(path: PurePosixPath) -> str | None:
    """`os.path` for typeshed's `stdlib/os/path.pyi`, site-packages and the stdlib alike."""
    if path.suffix not in (".py", ".pyi"):
        return None
    module = typeshed_module(path)
    if module is not None:
        return module
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return _dotted(parts[i + 1 :])
    for i in range(len(parts) - 2, 0, -1):
        if _PYTHON_DIR.match(parts[i]) and parts[i - 1] in ("lib", "Lib", "lib64"):
            return _dotted(parts[i + 1 :])
    return None


def typeshed_module(path: PurePosixPath) -> str | None:
    """`re` for a typeshed stub (`.../typeshed-fallback/stdlib/re.pyi`), wherever it lives:
    typeshed is the standard library (and third-party stubs), even bundled inside a
    `.venv` of the project; None for any other file."""
    if path.suffix != ".pyi":
        return None
    parts = path.parts
    for i, part in enumerate(parts[:-2]):
        if part.startswith("typeshed"):
            if parts[i + 1] == "stdlib":
                return _dotted(parts[i + 2 :])
            if parts[i + 1] == "stubs" and len(parts) > i + 3:
                return _dotted(parts[i + 3 :])
    return None


def _unescape_module(part: str) -> str:
    """The module cache writes capitals as `!` and the lower letter."""
    return re.sub(r"!([a-z])", lambda m: m.group(1).upper(), part)


def go_package(path: PurePosixPath, goroots: Sequence[str], modcaches: Sequence[str]) -> str | None:
    """`fmt` for `$GOROOT/src/fmt/print.go`, `example.com/m/sub` from the module cache."""
    if path.suffix != ".go":
        return None
    text = path.as_posix()
    for goroot in goroots:
        src = goroot.rstrip("/") + "/src/"
        if text.startswith(src):
            package = PurePosixPath(text[len(src) :]).parent.as_posix()
            package = package.removeprefix("vendor/")
            return package if package not in (".", "") else None
    parts = path.parts
    rests: list[tuple[str, ...]] = []
    for modcache in modcaches:
        prefix = modcache.rstrip("/") + "/"
        if text.startswith(prefix):
            rests.append(PurePosixPath(text[len(prefix) :]).parts)
    for i in range(len(parts) - 2):
        if parts[i] == "pkg" and parts[i + 1] == "mod":
            rests.append(parts[i + 2 :])
    for rest in rests:
        dirs = rest[:-1]
        if not dirs or dirs[0] == "cache":
            continue
        for j, part in enumerate(dirs):
            if "@" in part:
                module = [*dirs[:j], part.split("@", 1)[0], *dirs[j + 1 :]]
                return "/".join(_unescape_module(p) for p in module)
    return None


def elixir_module(path: Path) -> str | None:
    """`File` for Elixir's own `lib/elixir/lib/file.ex` (its first `defmodule`)."""
    if path.suffix not in (".ex", ".exs"):
        return None
    parts = path.parts
    if not any(
        parts[i] == "lib" and parts[i + 1] in _ELIXIR_APPS and parts[i + 2] == "lib"
        for i in range(len(parts) - 3)
    ):
        return None
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(65536)
    except OSError:
        head = ""
    match = _DEFMODULE.search(head)
    if match:
        return match.group(1)
    return ".".join(p.title().replace("_", "") for p in path.with_suffix("").parts[-1:])


def erlang_module(path: PurePosixPath) -> str | None:
    """`file` for OTP's `lib/kernel-9.0/src/file.erl`."""
    if path.suffix not in (".erl", ".hrl"):
        return None
    parts = path.parts
    if len(parts) >= 4 and parts[-2] in ("src", "include") and _OTP_APP.match(parts[-3]):
        return path.stem
    return None


def c_header(path: PurePosixPath) -> str | None:
    """`c:stdio.h` or `cpp:vector` for a system header (the include path as written)."""
    text = path.as_posix()
    rest = None
    for prefix in _SYSTEM_INCLUDES:
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            break
    if rest is None:
        match = _COMPILER_INCLUDE.match(text)
        if match is None:
            return None
        rest = text[match.end() :]
    rest = re.sub(r"^c\+\+/[\w.]+/", "", rest)
    rest = re.sub(r"^[\w]+-linux-gnu/(?:c\+\+/[\w.]+/)?", "", rest)
    if not rest:
        return None
    suffix = PurePosixPath(rest).suffix
    if suffix in (".h", ""):
        return f"{'c' if suffix == '.h' else 'cpp'}:{rest}"
    if suffix in (".hpp", ".hh", ".hxx", ".tcc"):
        return f"cpp:{rest}"
    return None


@dataclass(frozen=True)
class GoEnv:
    goroots: tuple[str, ...] = ()
    modcaches: tuple[str, ...] = field(default=())


@cache
def go_env() -> GoEnv:
    """GOROOT and GOMODCACHE, from the environment and `go env` (asked once per process)."""
    goroots = [os.environ.get("GOROOT", "")]
    modcaches = [os.environ.get("GOMODCACHE", "")]
    gopath = os.environ.get("GOPATH", "") or os.path.expanduser("~/go")
    modcaches += [os.path.join(p, "pkg", "mod") for p in gopath.split(os.pathsep) if p]
    path = clean_path()
    go = shutil.which("go", path=path)
    if go is not None:
        try:
            out = subprocess.run(
                [go, "env", "GOROOT", "GOMODCACHE"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
                # not in the daemon's working folder (a project's go.mod could name a
                # toolchain to fetch and run), and never another toolchain
                cwd="/",
                env={
                    **os.environ,
                    "PATH": path,
                    "GOPROXY": "off",
                    "GOFLAGS": "",
                    "GOTOOLCHAIN": "local",
                },
            ).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            out = []
        if len(out) == 2:
            goroots.append(out[0])
            modcaches.append(out[1])
    # Debian links $GOROOT/src elsewhere: its real parent counts as a GOROOT too.
    goroots += [os.path.dirname(os.path.realpath(os.path.join(p, "src"))) for p in goroots if p]
    return GoEnv(_real(goroots), _real(modcaches))


def _real(paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in paths if p))


def indicator(path: Path, go: GoEnv | None = None) -> str | None:
    """The indicator of `path` (a real path outside the root), or None to drop it."""
    posix = PurePosixPath(path.as_posix())
    module = python_module(posix)
    if module is not None:
        return f"python:{module}"
    if posix.suffix == ".go":
        env = go if go is not None else go_env()
        package = go_package(posix, env.goroots, env.modcaches)
        return f"go:{package}" if package else None
    module = elixir_module(path)
    if module is not None:
        return f"elixir:{module}"
    module = erlang_module(posix)
    if module is not None:
        return f"erlang:{module}"
    return c_header(posix)
