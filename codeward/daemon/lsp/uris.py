"""`file://` URIs and paths."""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import unquote, urlparse

from codeward.daemon.caches import keyed_by_paths
from codeward.daemon.paths import real_path

__all__ = ["path_to_uri", "real_path", "uri_to_path"]


@keyed_by_paths
@functools.lru_cache(maxsize=4096)
def uri_to_path(uri: str) -> Path | None:
    """The path of a `file://` URI, or None for another scheme (remembered: a pure
    function of the string, and paths are immutable)."""
    if uri.startswith("file:///") and "?" not in uri and "#" not in uri:
        return Path(unquote(uri[7:]))  # the common form, without the cost of urlparse
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@keyed_by_paths
@functools.lru_cache(maxsize=4096)
def path_to_uri(path: Path) -> str:
    """`path.as_uri()`, remembered (a pure function of the path, and not cheap)."""
    return path.as_uri()
