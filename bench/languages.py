"""A table per language: cold start to first answer, warm hover and definition, and the
server's memory, through a real daemon, for every built-in language whose servers are
installed (the others are listed as not installed, with the command that installs them).

One daemon (`python -m codeward.daemon.main`) on a private socket; per language a small
project of its own (written to a temp dir, trusted, so the servers run as configured), a
new session, and then:

- cold: from `session/open` to the first hover answer that is not `partial` (the server
  started, loaded the project and answered; its readiness policy counts);
- warm hover and warm definition: the median of N calls at the same position (milliseconds);
- RSS: the resident memory of the language servers' process groups after those calls (MB).

A definition or hover the server does not answer shows the error kind instead of a time.
The figures vary with the machine's load: compare the rows of one run, not runs.

Run: .venv/bin/python bench/languages.py [--rounds N] [--only LANG ...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Daemon, DaemonClient, RpcFailed  # bench/

from codeward.daemon.lsp.defaults import (
    command_available,
    default_languages,
    default_servers,
    language_of,
)
from codeward.daemon.lsp.process import group_rss

# language -> (files, path, needle): hover and definition at the needle's first character
FIXTURES: dict[str, tuple[dict[str, str], str, str]] = {
    "python": (
        {"app.py": "def twice(x: int) -> int:\n    return x * 2\n\n\nprint(twice(2))\n"},
        "app.py",
        "twice(2",
    ),
    "go": (
        {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "main.go": "package main\n\nfunc twice(x int) int { return x * 2 }\n\n"
            "func main() { println(twice(2)) }\n",
        },
        "main.go",
        "twice(2",
    ),
    "c": (
        {
            "main.c": "static int twice(int x) { return x * 2; }\n"
            "int main(void) { return twice(2); }\n"
        },
        "main.c",
        "twice(2",
    ),
    "cpp": (
        {
            "main.cpp": "static int twice(int x) { return x * 2; }\n"
            "int main() { return twice(2); }\n"
        },
        "main.cpp",
        "twice(2",
    ),
    "typescript": (
        {
            "tsconfig.json": '{"compilerOptions": {"strict": true}}\n',
            "main.ts": "function twice(x: number): number {\n  return x * 2;\n}\n"
            "console.log(twice(2));\n",
        },
        "main.ts",
        "twice(2",
    ),
    "javascript": (
        {"main.js": "function twice(x) {\n  return x * 2;\n}\nconsole.log(twice(2));\n"},
        "main.js",
        "twice(2",
    ),
    "rust": (
        {
            "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/main.rs": "fn twice(x: i32) -> i32 {\n    x * 2\n}\n\n"
            "fn main() {\n    let _n = twice(2);\n}\n",
        },
        "src/main.rs",
        "twice(2",
    ),
    "bash": (
        {"run.sh": "#!/bin/bash\ngreet() {\n  echo hi\n}\ngreet\n"},
        "run.sh",
        "greet\n",
    ),
    "yaml": ({"ci.yaml": "base: &base\n  image: debian\njob:\n  <<: *base\n"}, "ci.yaml", "base\n"),
    "json": ({"data.json": '{\n  "name": "demo",\n  "count": 2\n}\n'}, "data.json", '"name"'),
    "html": (
        {
            "index.html": '<!DOCTYPE html>\n<html>\n<body>\n<div class="x">hi</div>\n'
            "</body>\n</html>\n"
        },
        "index.html",
        "div",
    ),
    "css": ({"style.css": ".x {\n  color: red;\n}\n"}, "style.css", "color"),
    "toml": (
        {"pyproject.toml": '[project]\nname = "demo"\nversion = "0.1.0"\n'},
        "pyproject.toml",
        "name",
    ),
    "dockerfile": (
        {"Dockerfile": "FROM debian:12\nRUN echo hi\n"},
        "Dockerfile",
        "RUN",
    ),
    "php": (
        {
            "index.php": "<?php\n\nfunction twice(int $x): int\n{\n    return $x * 2;\n}\n\n"
            "echo twice(2);\n"
        },
        "index.php",
        "twice(2",
    ),
    "svelte": (
        {
            "package.json": '{"name": "demo", "private": true, "type": "module"}\n',
            "lib.ts": "export function twice(x: number): number {\n  return x * 2;\n}\n",
            "App.svelte": '<script lang="ts">\n  import { twice } from "./lib";\n'
            "  let n = twice(2);\n</script>\n\n<p>{n}</p>\n",
        },
        "App.svelte",
        "twice(2",
    ),
    "java": (
        {
            ".project": '<?xml version="1.0" encoding="UTF-8"?>\n<projectDescription>'
            "<name>demo</name><comment></comment><projects></projects><buildSpec><buildCommand>"
            "<name>org.eclipse.jdt.core.javabuilder</name><arguments></arguments>"
            "</buildCommand></buildSpec><natures><nature>org.eclipse.jdt.core.javanature"
            "</nature></natures></projectDescription>\n",
            ".classpath": '<?xml version="1.0" encoding="UTF-8"?>\n<classpath>'
            '<classpathentry kind="src" path="src"/><classpathentry kind="con" '
            'path="org.eclipse.jdt.launching.JRE_CONTAINER"/>'
            '<classpathentry kind="output" path="bin"/></classpath>\n',
            "src/demo/Main.java": "package demo;\n\npublic class Main {\n"
            "    static int twice(int x) { return x * 2; }\n"
            "    public static void main(String[] args) { System.out.println(twice(2)); }\n}\n",
        },
        "src/demo/Main.java",
        "twice(2",
    ),
}


def position(root: Path, path: str, needle: str) -> dict[str, Any]:
    text = (root / path).read_text()
    at = text.index(needle)
    line = text.count("\n", 0, at) + 1
    return {"path": path, "line": line, "character": at - (text.rfind("\n", 0, at) + 1) + 1}


def servers_of(language: str, root: Path, path: str) -> tuple[str, list[str], list[str]]:
    """The language the defaults give `path`, its servers, and the install hints of the
    missing ones."""
    languages = default_languages()
    found = language_of(root / path, root, languages) or language
    names = languages[found].servers if found in languages else []
    configs = default_servers()
    missing = [
        configs[n].install_hint or n
        for n in names
        if n not in configs or not command_available(configs[n].command, configs[n].env)
    ]
    return found, names, missing


def timed(client: DaemonClient, tool: str, where: dict[str, Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    try:
        result = client.tool(tool, where)
    except RpcFailed as exc:
        return time.perf_counter() - start, exc
    return time.perf_counter() - start, result


def median_ms(client: DaemonClient, tool: str, where: dict[str, Any], rounds: int) -> str:
    times = []
    for _ in range(rounds):
        took, result = timed(client, tool, where)
        if isinstance(result, RpcFailed):
            return result.kind
        times.append(took * 1000)
    return f"{statistics.median(times):.1f}"


def measure(daemon: Daemon, language: str, base: Path, rounds: int) -> list[str]:
    files, path, needle = FIXTURES[language]
    root = base / language
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    configured, names, missing = servers_of(language, root, path)
    if not names:
        return [language, "none built in", "", "", "", ""]
    server = " + ".join(names)
    if missing:
        return [language, server, "not installed: " + "; ".join(missing), "", "", ""]
    client = DaemonClient(daemon.socket)
    try:
        client.call("trust/set", {"root": str(root)})
        started = time.perf_counter()
        client.call("session/open", {"root": str(root)})
        where = position(root, path, needle)
        cold: str
        while True:
            _, answer = timed(client, "get_hover_info", where)
            if isinstance(answer, RpcFailed):
                cold = answer.kind
                break
            if not answer.get("partial"):
                cold = f"{time.perf_counter() - started:.2f} ({answer['status']})"
                break
        hover = median_ms(client, "get_hover_info", where, rounds)
        definition = median_ms(client, "go_to_definition", where, rounds)
        daemon.note_servers(client)
        rss = 0
        for session in client.call("session/list", {})["sessions"]:
            if session["root"] == str(root.resolve()):
                rss = sum(group_rss(s["pid"]) for s in session["servers"] if s.get("pid"))
        client.call("session/close", {"terminate": True})
    finally:
        client.close()
    return [configured, server, cold, hover, definition, f"{rss / 2**20:.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    languages = args.only or list(FIXTURES)
    with tempfile.TemporaryDirectory(prefix="cw-bench-") as tmp:
        base = Path(tmp).resolve()
        daemon = Daemon(base)
        try:
            rows = [measure(daemon, language, base, args.rounds) for language in languages]
        finally:
            daemon.stop()
    head = ["language", "server", "cold start to first answer (s)", "warm hover (ms)",
            "warm definition (ms)", "servers' RSS (MB)"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
