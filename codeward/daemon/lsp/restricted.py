"""The configuration each language server starts with in an untrusted root (restricted mode).

In an untrusted root no program from the repository may run, through any server. Each
default server was reviewed:

- basedpyright runs a Python interpreter to find its search paths: the project's
  `.venv/bin/python` when no interpreter is set. Restricted, it gets `python.pythonPath`
  (the language-server setting that overrides every config file) naming the base
  interpreter of the daemon's own Python, and no `python.venvPath`. A config file's
  `venvPath`/`venv` are then only scanned for `site-packages`, never executed.
- ruff runs nothing: unchanged.
- gopls runs `go`: `GOTOOLCHAIN=local` (a go.mod `toolchain` line never fetches or runs a
  toolchain), `CGO_ENABLED=0` (no pkg-config or C compiler with `#cgo` flags), `GOFLAGS`
  from the daemon's environment only plus `-buildvcs=false` (`go list` runs `git status`
  for its VCS stamp, and the repository's git config could run a program), code lenses
  that run commands off.
- clangd runs a compiler only when `--query-driver` allows it: that option is dropped.
- typescript-language-server loads the workspace's `node_modules/typescript` and tsserver
  plugins: it gets the installed typescript's tsserver, no plugins and no automatic type
  acquisition (which runs npm); without an installed typescript it does not start.
- rust-analyzer runs build scripts, proc macros, `cargo check` and cargo's configured
  wrappers: all off, `cargo metadata` without dependencies (it then runs no rustc), cargo's
  wrappers and compiler overridden from the environment (cargo, rustc, rustdoc and
  rustfmt by absolute path, none from inside the root), the toolchain pinned to the
  user's rustup default (a `rust-toolchain.toml` cannot name one), config rustflags
  overridden, offline. A root with a `rust-project.json` (which may name a sysroot whose
  programs it would run), a `rust-analyzer.toml` (which may set its commands) or a cargo
  config with an `[env]` table (cargo applies it, even LD_PRELOAD, to the rustc it runs
  to learn the target) does not start it.
- ty reads the project's virtualenv (its `pyvenv.cfg` and `site-packages`) without running
  it: unchanged. pyrefly runs the interpreter it finds to learn its import paths: it does
  not start. pylsp and jedi-language-server get the daemon's base Python as jedi's
  environment (jedi runs its environment's interpreter).
- bash-language-server runs shellcheck and shfmt (from the confined PATH below); YAML,
  JSON, HTML, CSS, TOML (offline), Dockerfile servers and intelephense read files and run
  nothing: unchanged.
- svelte-language-server loads the project's `svelte.config.js`/`vite.config.*` and its
  `node_modules` (svelte, typescript, prettier): `isTrusted: false`, which loads neither
  and only its own packages. It still resolves the project's prettier config (code, in a
  `.prettierrc.cjs`) for formatting, TypeScript code actions and completions: those are
  off (`SVELTE_OFF`), and format_code says why.
- jdtls imports Gradle projects by running their build (and the Gradle wrapper), Maven
  projects by running their plugins: both imports off, so it sees plain Java folders.
- ElixirLS and Lexical compile the project with mix: they do not start.
- A server codeward does not know does not start, unless the user's config says
  `untrusted = "run"` for it; `untrusted = "off"` keeps any server off.

Every restricted server is started by absolute path (never one inside the root, nor a
node script there), with a
PATH from which relative entries and entries inside the root are removed, and with
`core.fsmonitor` and `core.hooksPath` given through the environment, so that a git it runs
in the repository starts none of the repository's programs.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from codeward.daemon import child_path
from codeward.daemon.config import ServerConfig
from codeward.daemon.lsp.ignored import ignored_name
from codeward.servers import locate


class NotInRestrictedMode(Exception):
    """The server does not start in an untrusted root; the message says why."""


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over` merged in, key by key (a None value removes the key)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = merged(out[key] if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def codeward_python() -> str:
    """The interpreter basedpyright may run in an untrusted root: the base installation of
    the daemon's own Python (without the packages of the daemon's virtualenv)."""
    for candidate in (getattr(sys, "_base_executable", ""), sys.executable):
        if candidate and os.path.isabs(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return os.path.realpath(sys.executable)


def from_root(path: str, root: Path) -> bool:
    """Whether `path` (resolved) lies inside `root` and not inside the daemon's own
    installation (a root may hold the daemon's virtualenv: codeward's own repository)."""
    return child_path.from_root(path, (root,))


def safe_path(root: Path, path: str | None = None) -> str:
    """PATH without empty or relative entries, and without entries inside `root` or any
    live session's root (`child_path`)."""
    return child_path.clean_path(path, root=root)


def _basedpyright(config: ServerConfig, root: Path) -> ServerConfig:
    settings = merged(
        config.settings, {"python": {"pythonPath": codeward_python(), "venvPath": None}}
    )
    return msgspec.structs.replace(config, settings=settings)


def _unchanged(config: ServerConfig, root: Path) -> ServerConfig:
    return config


GO_ENV = {"GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
GO_LENSES = {
    name: False
    for name in ("generate", "regenerate_cgo", "test", "run_govulncheck", "vulncheck", "tidy")
}


def _gopls(config: ServerConfig, root: Path) -> ServerConfig:
    # -buildvcs=false: `go list` would run `git status` in the repository for its VCS
    # stamp, and the repository's git config (core.fsmonitor...) would run a program
    flags = f"{os.environ.get('GOFLAGS', '')} -buildvcs=false".strip()
    env = {**config.env, **GO_ENV, "GOFLAGS": flags}
    settings = merged(config.settings, {"gopls": {"env": env, "codelenses": GO_LENSES}})
    return msgspec.structs.replace(config, env=env, settings=settings)


def _clangd(config: ServerConfig, root: Path) -> ServerConfig:
    command: list[str] = []
    skip = False
    for arg in config.command:
        if skip:
            skip = False
        elif arg == "--query-driver":
            skip = True
        elif not arg.startswith("--query-driver="):
            command.append(arg)
    return msgspec.structs.replace(config, command=command)


def installed_tsserver(program: str, root: Path) -> str | None:
    """The tsserver.js of a typescript installed outside `root` (beside the language server,
    or the one `tsserver` on PATH belongs to)."""
    candidates: list[Path] = []
    for name in (program, "tsserver"):
        found = shutil.which(name, path=safe_path(root))
        if found is None:
            continue
        real = Path(os.path.realpath(found))
        for parent in real.parents:
            if parent.parent.name == "node_modules":  # the package's own dependency
                candidates.append(parent / "node_modules" / "typescript" / "lib" / "tsserver.js")
            if parent.name == "node_modules":  # installed beside it
                candidates.append(parent / "typescript" / "lib" / "tsserver.js")
            if parent.name == "typescript":
                candidates.append(parent / "lib" / "tsserver.js")
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if real.is_file() and not from_root(str(real), root):
            return str(real)
    return None


def _script(command: list[str]) -> str:
    """The program of `command`: the script when node runs one, else the command's own."""
    if len(command) > 1 and os.path.basename(command[0]) == "node":
        return command[1]
    return command[0]


def _typescript(config: ServerConfig, root: Path) -> ServerConfig:
    options = config.init_options or {}
    fallback = (options.get("tsserver") or {}).get("fallbackPath")
    if isinstance(fallback, str) and os.path.isfile(fallback) and not from_root(fallback, root):
        tsserver: str | None = os.path.realpath(fallback)
    else:
        tsserver = installed_tsserver(_script(config.command), root) if config.command else None
    if tsserver is None:
        raise NotInRestrictedMode(
            "it would load the project's own typescript, and no typescript is installed "
            "outside the root (codeward servers install typescript-language-server)"
        )
    options = merged(
        options,
        {
            "tsserver": {"path": tsserver, "fallbackPath": None},
            "plugins": [],
            "disableAutomaticTypingAcquisition": True,
        },
    )
    return msgspec.structs.replace(config, init_options=options)


# svelte-language-server's features that resolve the project's prettier config (prettier's
# `resolveConfig`, which runs a `.prettierrc.cjs`, `prettier.config.mjs` or a package.json
# "prettier" module) whatever `isTrusted` says: its formatting, its TypeScript code actions
# (quick fixes, organize imports) and completions, its HTML completions of on:/bind:.
SVELTE_OFF: dict[str, Any] = {
    "svelte": {"format": {"enable": False}},
    "typescript": {"codeActions": {"enable": False}, "completions": {"enable": False}},
    "html": {"completions": {"enable": False}},
}
# Servers whose formatting is off in an untrusted root, and why (format_code says it).
FORMATTING_OFF = {
    "svelte-language-server": "its formatting loads the project's prettier config, which "
    "can run the project's code",
}


def _svelte(config: ServerConfig, root: Path) -> ServerConfig:
    # untrusted: no svelte.config.js or vite.config.* loaded, and svelte, typescript and
    # prettier from the server's own installation, never the project's node_modules
    # (`isTrusted: false`); the features that resolve the project's prettier config off,
    # at initialize and in every configuration sent after it (user settings cannot undo it)
    plugin = {"svelte": {"plugin": SVELTE_OFF}}
    options = merged(config.init_options or {}, {"isTrusted": False, "configuration": plugin})
    settings = merged(config.settings, plugin)
    return msgspec.structs.replace(config, init_options=options, settings=settings)


JAVA_SETTINGS: dict[str, Any] = {
    "java": {
        "import": {
            # Gradle runs the project's build scripts (and its wrapper downloads and runs a
            # Gradle); Maven import runs the project's plugins: both off
            "gradle": {"enabled": False, "wrapper": {"enabled": False}},
            "maven": {"enabled": False},
        },
        "configuration": {"updateBuildConfiguration": "disabled"},
    }
}


def _jdtls(config: ServerConfig, root: Path) -> ServerConfig:
    settings = merged(config.settings, JAVA_SETTINGS)
    options = merged(config.init_options or {}, {"settings": JAVA_SETTINGS})
    return msgspec.structs.replace(config, settings=settings, init_options=options)


def _refuses(why: str) -> Callable[[ServerConfig, Path], ServerConfig]:
    def refuse(config: ServerConfig, root: Path) -> ServerConfig:
        raise NotInRestrictedMode(why)

    return refuse


def _pylsp(config: ServerConfig, root: Path) -> ServerConfig:
    settings = merged(
        config.settings, {"pylsp": {"plugins": {"jedi": {"environment": codeward_python()}}}}
    )
    return msgspec.structs.replace(config, settings=settings)


def _jedi(config: ServerConfig, root: Path) -> ServerConfig:
    environment = {"workspace": {"environmentPath": codeward_python()}}
    options = merged(config.init_options or {}, environment)
    return msgspec.structs.replace(config, init_options=options)


RUST_SETTINGS: dict[str, Any] = {
    "cargo": {
        "buildScripts": {"enable": False, "overrideCommand": None},
        "noDeps": True,
        "extraEnv": {},
    },
    "procMacro": {"enable": False, "server": None},
    "checkOnSave": False,
    "check": {"overrideCommand": None},
    "rustfmt": {"overrideCommand": None},
    "runnables": {"command": None},
    "server": {"extraEnv": None},
    "workspace": {"discoverConfig": None},
}


def rust_env(root: Path) -> dict[str, str]:
    """Environment that beats `.cargo/config.toml` and `rust-toolchain.toml`: the cargo,
    rustc, rustdoc and rustfmt outside `root` by absolute path (rust-analyzer takes
    `CARGO`, `RUSTC`, `RUSTFMT` over PATH; cargo takes `RUSTC`, `RUSTDOC` over its config)."""
    safe = safe_path(root)
    tools = {name.upper(): locate.on_path(name, safe) for name in ("cargo", "rustfmt")}
    return {
        **{name: program for name, program in tools.items() if program},
        "RUSTC_WRAPPER": "",
        "RUSTC_WORKSPACE_WRAPPER": "",
        "CARGO_BUILD_RUSTC_WRAPPER": "",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER": "",
        "RUSTC": locate.on_path("rustc", safe) or "rustc",
        "RUSTDOC": locate.on_path("rustdoc", safe) or "rustdoc",
        "CARGO_ENCODED_RUSTFLAGS": "",  # beats build.rustflags (e.g. -Zcodegen-backend=...)
        "CARGO_ENCODED_RUSTDOCFLAGS": "",
        "CARGO_NET_OFFLINE": "true",
        "RUSTUP_TOOLCHAIN": locate.rustup_default() or "stable",
        "RUSTUP_AUTO_INSTALL": "0",
    }


# project files that can name programs rust-analyzer runs (a sysroot, override commands)
RUST_PROJECT = frozenset(
    {"rust-project.json", ".rust-project.json", "rust-analyzer.toml", ".rust-analyzer.toml"}
)
WALK_LIMIT = 20000  # entries looked at for a rust-project.json


def _rust_analyzer(config: ServerConfig, root: Path) -> ServerConfig:
    found = _find(root, RUST_PROJECT, WALK_LIMIT)
    if found is None:
        raise NotInRestrictedMode(
            "the project is too large to check that it has no rust-project.json or cargo "
            "[env] (which may make it run the project's programs)"
        )
    if found:
        raise NotInRestrictedMode(found)
    settings = merged(config.settings, {"rust-analyzer": RUST_SETTINGS})
    options = merged(config.init_options or {}, RUST_SETTINGS)
    env = {**config.env, **rust_env(root)}
    return msgspec.structs.replace(config, settings=settings, init_options=options, env=env)


def _find(root: Path, names: frozenset[str], limit: int) -> str | None:
    """Why rust-analyzer cannot be restricted in `root` ("" when it can): a file of
    `names`, or a cargo config with an `[env]` table (cargo sets those variables, even
    LD_PRELOAD, for the rustc it runs to learn the target, whatever the environment says).
    None when the walk gave up after `limit` entries. Ignored folders (`lsp.ignored`) are
    not walked, but one right below the root is looked into: rust-analyzer takes a
    Cargo.toml there, and cargo then reads that folder's `.cargo` config."""
    stack: list[tuple[Path, bool]] = [(root, True)]  # (folder, walk its subfolders)
    while stack:
        folder, walk = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            limit -= 1
            if limit < 0:
                return None
            if entry.name in names:
                return f"the project has a {entry.name}, which may name programs it would run"
            if entry.name == ".cargo" and _sets_env(Path(entry.path)):
                return "the project's cargo config has an [env] table, which cargo applies to rustc"
            if walk and entry.is_dir(follow_symlinks=False):
                if not ignored_name(entry.name):
                    stack.append((Path(entry.path), True))
                elif folder == root:
                    stack.append((Path(entry.path), False))
    return ""


def _sets_env(folder: Path) -> bool:
    """Whether a `.cargo` folder's config sets `[env]` (or cannot be read to tell)."""
    for name in ("config.toml", "config"):
        path = folder / name
        if not path.exists():
            continue
        try:
            with open(path, "rb") as f:
                if "env" in tomllib.load(f):
                    return True
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return True
    return False


def _compiles(what: str) -> Callable[[ServerConfig, Path], ServerConfig]:
    return _refuses(f"it compiles the project with {what}")


PROFILES: dict[str, Callable[[ServerConfig, Path], ServerConfig]] = {
    "basedpyright": _basedpyright,
    "ruff": _unchanged,
    "ty": _unchanged,
    "pyrefly": _refuses("it runs the project's Python interpreter to find its import paths"),
    "pylsp": _pylsp,
    "jedi-language-server": _jedi,
    "gopls": _gopls,
    "clangd": _clangd,
    "typescript-language-server": _typescript,
    "rust-analyzer": _rust_analyzer,
    "bash-language-server": _unchanged,
    "yaml-language-server": _unchanged,
    "vscode-json-language-server": _unchanged,
    "vscode-html-language-server": _unchanged,
    "vscode-css-language-server": _unchanged,
    "tombi": _unchanged,
    "dockerfile-language-server": _unchanged,
    "intelephense": _unchanged,
    "svelte-language-server": _svelte,
    "jdtls": _jdtls,
    "elixir-ls": _compiles("mix"),
    "lexical": _compiles("mix"),
}


def restricted(name: str, config: ServerConfig, root: Path) -> ServerConfig:
    """`config` as server `name` starts in the untrusted `root`; raises NotInRestrictedMode
    when it does not start there."""
    if config.untrusted == "off":
        raise NotInRestrictedMode('the config says untrusted = "off" for it')
    profile = PROFILES.get(name)
    if profile is None and config.untrusted != "run":
        raise NotInRestrictedMode(
            'codeward does not know whether it runs project code (say untrusted = "run" '
            "under its [servers] entry if it does not)"
        )
    config = (profile or _unchanged)(config, root)
    return _confined(config, root)


GIT_OVERRIDES = (("core.fsmonitor", "false"), ("core.hooksPath", "/dev/null"))


def git_env(env: dict[str, str]) -> dict[str, str]:
    """Config given through the environment (it beats the repository's own) so that a git
    a server runs in the repository starts no program of the repository's config."""
    try:
        count = max(0, int(env.get("GIT_CONFIG_COUNT") or 0))
    except ValueError:
        count = 0
    out = {"GIT_CONFIG_COUNT": str(count + len(GIT_OVERRIDES))}
    for i, (key, value) in enumerate(GIT_OVERRIDES, count):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return out


def _confined(config: ServerConfig, root: Path) -> ServerConfig:
    """Started by absolute path, never one inside the root, with a PATH of absolute
    entries outside the root, and git config that runs no program of the repository."""
    path = safe_path(root, config.env.get("PATH"))
    env = {**config.env, **git_env({**os.environ, **config.env}), "PATH": path}
    program = shutil.which(config.command[0], path=path) if config.command else None
    if program is None:
        return msgspec.structs.replace(config, env=env)
    script = _script(config.command)
    if script != config.command[0] and not os.path.isabs(script):
        raise NotInRestrictedMode("node would run a script relative to the root")
    if from_root(program, root) or from_root(script, root):
        raise NotInRestrictedMode("its program lies inside the root")
    command = [os.path.abspath(program), *config.command[1:]]
    return msgspec.structs.replace(config, command=command, env=env)
