"""`codeward servers [install NAME...]`: the known language servers, and installing them.

Runs in the client alone (no daemon): a daemon finds what was installed on the next
request that needs the server.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from codeward.servers import catalog, locate
from codeward.servers.catalog import Server

SOURCES = {"pypi": "PyPI", "npm": "npm", "debian": "Debian", "none": "none"}


def describe(server: Server) -> dict[str, Any]:
    """One server as `codeward servers --json` lists it."""
    found = locate.find(server)
    return {
        "name": server.name,
        "languages": list(server.languages),
        "installed": found is not None,
        "version": locate.version(server, found) if found else None,
        "program": found.program if found else None,
        "found_in": found.where if found else None,
        "source": SOURCES[server.source],
        "packages": list(server.packages or server.debian),
        "default": server.default,
        "install": server.install_command(),
    }


def show(stdout: TextIO, as_json: bool) -> None:
    """Every known server: languages, installed or not, version, where from, how to install."""
    rows = [describe(server) for server in catalog.SERVERS]
    if as_json:
        stdout.write(json.dumps({"servers": rows}, indent=2) + "\n")
        return
    table = [("SERVER", "LANGUAGES", "VERSION", "FROM", "INSTALL")]
    for row in rows:
        version = (row["version"] or "installed") if row["installed"] else "not installed"
        name = row["name"] if row["default"] else f"{row['name']} (selectable)"
        table.append((name, ",".join(row["languages"]), version, row["source"], row["install"]))
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        stdout.write("  ".join([*cells, line[4]]).rstrip() + "\n")


def unknown(names: list[str]) -> str:
    """The usage error's message for names the catalog does not have."""
    known = ", ".join(server.name for server in catalog.SERVERS)
    return f"unknown server {', '.join(names)}; known servers: {known}"


def install(names: list[str], stdout: TextIO, stderr: TextIO) -> bool:
    """Install each named server in turn; False when one could not be."""
    from codeward.servers.install import InstallError, install

    ok = True
    for name in names:
        server = catalog.BY_NAME[name]
        if server.source not in ("pypi", "npm"):
            how = server.install_command()
            stderr.write(
                f"error: {name} is not installed from PyPI or npm; install it yourself: {how}\n"
            )
            ok = False
            continue
        stdout.write(f"installing {name} ({', '.join(server.packages)}) ...\n")
        stdout.flush()
        try:
            folder = install(server)
        except InstallError as exc:
            stderr.write(f"error: {exc}\n")
            ok = False
            continue
        found = locate.find(server)
        version = locate.version(server, found) if found else None
        stdout.write(f"installed {name} {version or ''} in {folder}\n")
    return ok
