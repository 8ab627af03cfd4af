"""`file://` URIs and paths."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse


def uri_to_path(uri: str) -> Path | None:
    """The path of a `file://` URI, or None for another scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def path_to_uri(path: Path) -> str:
    return path.as_uri()
