"""`file://` URIs and paths."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def uri_to_path(uri: str) -> Path | None:
    """The path of a `file://` URI, or None for another scheme."""
    if uri.startswith("file:///") and "?" not in uri and "#" not in uri:
        return Path(unquote(uri[7:]))  # the common form, without the cost of urlparse
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@functools.lru_cache(maxsize=4096)
def path_to_uri(path: Path) -> str:
    """`path.as_uri()`, remembered (a pure function of the path, and not cheap)."""
    return path.as_uri()


_O_PATH = getattr(os, "O_PATH", 0)


def real_path(path: str | Path) -> str:
    """`os.path.realpath(path)`, asked of the kernel for an existing file (Linux: open it
    with O_PATH and read its /proc/self/fd link): a few system calls instead of an lstat
    per component. Anything unusual falls back on `os.path.realpath`."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            pass
        else:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                real = ""
            finally:
                os.close(fd)
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return real
    return os.path.realpath(path)
