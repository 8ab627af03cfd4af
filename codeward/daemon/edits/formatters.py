"""Formatting without a formatting server: the language's standard formatter from the
user's PATH (gofmt, ruff format, clang-format, shfmt, prettier), given the text on stdin,
with no shell, a timeout, the root as its working folder, and its process group killed on
timeout or cancellation.

In an untrusted root none may run the project's code. gofmt has no config; ruff's
(`pyproject.toml`, `ruff.toml`), clang-format's (`.clang-format`) and shfmt's
(`.editorconfig`) are data. prettier's can be code (`.prettierrc.cjs`, `prettier.config.mjs`,
a `package.json` `"prettier"` naming a module, plugins): untrusted, it runs with
`--no-config --no-plugin-search` (the latter is prettier 2's; prettier 3 searches for no
plugins and only warns about it). A formatter whose config could run code and that cannot
be told to ignore it would not be used untrusted (`untrusted_args` None)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from codeward.daemon.child_path import clean_path
from codeward.daemon.git.runner import run_process
from codeward.daemon.lsp import restricted_effects
from codeward.protocol.errors import ErrorKind, ToolError

TIMEOUT = 20.0  # seconds a formatter may take
OUTPUT_BYTES = 16 << 20
PASSED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "XDG_CONFIG_HOME", "TMPDIR", "TZ", "LANG")


@dataclass(frozen=True)
class Formatter:
    name: str  # as the result names it
    program: str
    args: tuple[str, ...]  # "{path}" stands for the file's root-relative path
    install: str  # what to install when it is missing
    # In an untrusted root: the arguments that keep it from loading project config that can
    # run code, before `args` (() when its config is data); None: not run there at all.
    untrusted_args: tuple[str, ...] | None = ()
    # The config files of the root that `untrusted_args` leave unread (names, or prefixes
    # ending in "*"), and the package.json key that names one.
    configs: tuple[str, ...] = ()
    package_key: str = ""

    def ignored_config(self, root: Path, shown: str) -> bool:
        """Whether the folders from the file `shown` up to the root hold config that it
        leaves unread untrusted (the answer may differ from a trusted root's)."""
        if not self.configs or not self.untrusted_args:
            return False
        folder = (root / shown).parent
        while folder == root or root in folder.parents:
            if self._configured(folder):
                return True
            folder = folder.parent
        return False

    def _configured(self, folder: Path) -> bool:
        try:
            names = os.listdir(folder)
        except OSError:
            return False
        for pattern in self.configs:
            if any(n == pattern or (pattern.endswith("*") and n.startswith(pattern[:-1]))
                   for n in names):  # fmt: skip
                return True
        if not self.package_key or "package.json" not in names:
            return False
        try:
            with open(folder / "package.json", "rb") as f:
                return f'"{self.package_key}"'.encode() in f.read()
        except OSError:
            return False

    def argv(self, program: str, shown: str, *, trusted: bool = True) -> list[str]:
        guard = () if trusted else self.untrusted_args or ()
        return [program, *guard, *(a.replace("{path}", shown) for a in self.args)]


GOFMT = Formatter("gofmt", "gofmt", (), "install Go (gofmt comes with it)")
RUFF = Formatter(
    "ruff format",
    "ruff",
    ("format", "--stdin-filename", "{path}", "-"),
    "pip install ruff",
)
CLANG_FORMAT = Formatter(
    "clang-format",
    "clang-format",
    ("--assume-filename={path}",),
    "install clang-format (Debian: apt install clang-format)",
)
SHFMT = Formatter(
    "shfmt", "shfmt", ("-filename", "{path}"), "install shfmt (Debian: apt install shfmt)"
)
PRETTIER = Formatter(
    "prettier",
    "prettier",
    ("--stdin-filepath", "{path}"),
    "npm install --global prettier",
    untrusted_args=("--no-config", "--no-plugin-search"),
    configs=(".prettierrc*", "prettier.config.*"),
    package_key="prettier",
)

BY_LANGUAGE: dict[str, Formatter] = {
    "go": GOFMT,
    "python": RUFF,
    "c": CLANG_FORMAT,
    "cpp": CLANG_FORMAT,
    "shell": SHFMT,
    "bash": SHFMT,
    "sh": SHFMT,
    **{
        language: PRETTIER
        for language in (
            "typescript",
            "typescriptreact",
            "javascript",
            "javascriptreact",
            "json",
            "jsonc",
            "css",
            "scss",
            "less",
            "html",
            "yaml",
            "markdown",
            "vue",
            "svelte",
        )
    },
}


def formatter_for(language: str) -> Formatter | None:
    return BY_LANGUAGE.get(language)


def narrowed_out(
    formatter: Formatter, language: str, shown: str, kept: list[str], left_out: list[str]
) -> ToolError | None:
    """The error for a file whose formatter is a server the project's `.codeward.toml`
    left out of its language's servers (`kept`): not run from PATH, said why."""
    if formatter.program not in left_out:
        return None
    chosen = ", ".join(f'"{name}"' for name in kept)
    return ToolError(
        ErrorKind.UNSUPPORTED_BY_SERVER,
        f"No server of this project formats {shown!r}: {formatter.program}, which formats "
        f"{language} files, is left out by the project's .codeward.toml ([servers] "
        f'{language} = [{chosen}]); add "{formatter.program}" there to format with it.',
        servers=kept,
        method="textDocument/formatting",
        narrowed_out=[formatter.program],
    )


def _env() -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env["PATH"] = clean_path(env.get("PATH", os.defpath))
    return env


async def run_formatter(
    formatter: Formatter, root: Path, shown: str, text: str, *, trusted: bool
) -> str:
    """The formatted `text` of the file `shown` (root-relative); `lsp_unavailable` when the
    formatter is not on PATH or may not run in the untrusted root, `timeout`, or
    `lsp_error` when it refuses the text."""
    if not trusted and formatter.untrusted_args is None:
        raise ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"No language server formats {shown!r}, and {formatter.name} would load the "
            "project's configuration, which can run the project's code: it does not run in "
            "an untrusted root; trust the root (codeward trust) to format it.",
            formatter=formatter.name,
            restricted=True,
        )
    if not trusted and formatter.ignored_config(root, shown):
        restricted_effects.record(formatter.name, "runs without the project's config")
    env = _env()
    program = shutil.which(formatter.program, path=env["PATH"])
    if program is None:
        raise ToolError(
            ErrorKind.LSP_UNAVAILABLE,
            f"No language server formats {shown!r} and {formatter.program} is not on PATH; "
            f"{formatter.install}, or configure a server that formats.",
            formatter=formatter.name,
        )
    done = await run_process(
        formatter.argv(program, shown, trusted=trusted),
        cwd=root,
        env=env,
        timeout=TIMEOUT,
        output_bytes=OUTPUT_BYTES,
        stdin=text.encode("utf-8"),
    )
    if done.timed_out:
        raise ToolError(
            ErrorKind.TIMEOUT,
            f"{formatter.name} did not format {shown!r} within {TIMEOUT:g} s; nothing was written.",
            formatter=formatter.name,
        )
    if done.exit_code != 0 or done.truncated:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        # prettier 3 warns about prettier 2's --no-plugin-search first: the error follows
        errors = [line for line in said if not line.startswith("[warn]")] or said
        reason = errors[0] if errors else f"exit code {done.exit_code}"
        raise ToolError(
            ErrorKind.LSP_ERROR,
            f"{formatter.name} could not format {shown!r} ({reason[:300]}); nothing was "
            "written: fix the file's syntax first.",
            formatter=formatter.name,
        )
    return done.stdout.decode("utf-8", "replace")
