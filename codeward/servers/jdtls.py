"""Starts jdtls (`python -m codeward.servers.jdtls LAUNCHER JAVA [ARGS...]`) in place.

jdtls keeps its workspace state in a `-data` folder that must not be inside the project
nor shared between projects: one per root (the working directory the daemon starts it
in), under `$XDG_CACHE_HOME/codeward/jdtls/`. The process becomes the launcher (exec), so
the daemon supervises jdtls itself.
"""

from __future__ import annotations

import hashlib
import os
import sys

from codeward.servers.locate import cache_dir


def workspace(root: str) -> str:
    """The `-data` folder of the project at `root`."""
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:16]
    return str(cache_dir() / "jdtls" / f"{os.path.basename(root) or 'root'}-{digest}")


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: python -m codeward.servers.jdtls LAUNCHER JAVA [ARGS...]")
    launcher, java, *rest = argv
    data = workspace(os.getcwd())
    os.makedirs(data, mode=0o700, exist_ok=True)
    os.execv(launcher, [launcher, "-vm", java, "-data", data, *rest])


if __name__ == "__main__":
    main(sys.argv[1:])
