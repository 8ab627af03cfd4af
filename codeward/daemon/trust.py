"""Workspace trust: the roots the user trusts, kept in `$XDG_CONFIG_HOME/codeward/trusted.toml`.

A root is trusted when its canonical realpath is a trusted root or lies below one. Only the
daemon writes the file (`trust/set`), atomically; it is read again whenever it changed. A
file that other users may write, or that cannot be read, trusts nothing. A project's
`.codeward.toml` has no say in it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
import tomllib
from pathlib import Path

from codeward.daemon.config import config_path
from codeward.daemon.paths import is_inside
from codeward.protocol.errors import ErrorKind, ToolError

log = logging.getLogger(__name__)

HEADER = (
    "# Roots trusted by codeward: their language servers run in their normal configuration.\n"
    "# Written by `codeward trust ROOT` and `codeward trust --revoke ROOT`.\n"
)


def trust_path() -> Path:
    """`$XDG_CONFIG_HOME/codeward/trusted.toml` (beside the default config.toml)."""
    return config_path().parent / "trusted.toml"


class TrustError(Exception):
    """The trust file cannot be used; the message says why (without its path)."""


def canonical(root: str) -> Path:
    """The canonical realpath of a root given by the user: absolute, an existing directory."""
    if not isinstance(root, str) or not root or "\x00" in root:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give the root as a non-empty path.")
    if not os.path.isabs(root):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"{root!r} is a relative path; give the root as an absolute path.",
        )
    path = Path(os.path.realpath(root))
    if not path.exists():
        raise ToolError(
            ErrorKind.FILE_NOT_FOUND, "The root does not exist; give an existing directory."
        )
    if not path.is_dir():
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, "The root is not a directory; give a directory."
        )
    return path


def render(roots: list[Path]) -> str:
    """The file's text: TOML whose strings are JSON strings TOML can read (checked)."""
    lines = [HEADER, "roots = ["]
    for root in roots:
        text = str(root)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "The root's path is not valid UTF-8, so it cannot be kept; rename it.",
            ) from None
        quoted = json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
        lines.append(f"  {quoted},")
    lines.append("]\n")
    body = "\n".join(lines)
    if _parse(body) != roots:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, "The root's path cannot be kept in TOML; rename it."
        )
    return body


def _parse(text: str) -> list[Path]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TrustError(f"it is not valid TOML ({exc})") from None
    roots = data.get("roots", [])
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise TrustError("`roots` must be a list of strings")
    if any(not os.path.isabs(r) for r in roots):
        raise TrustError("every root must be an absolute path")
    return [Path(os.path.normpath(r)) for r in roots]


class TrustStore:
    """The trusted roots: read from the file when it changed, written atomically."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or trust_path()
        self._key: tuple[int, ...] | None = None
        self._roots: list[Path] = []
        self.error = ""  # why the file trusts nothing, when it cannot be used

    def roots(self) -> list[Path]:
        """The trusted roots; raises TrustError when the file cannot be used."""
        self._refresh()
        if self.error:
            raise TrustError(self.error)
        return list(self._roots)

    def is_trusted(self, root: Path) -> bool:
        """Whether canonical `root` is a trusted root or lies below one (False on any doubt)."""
        self._refresh()
        if self.error:
            return False
        return any(is_inside(root, trusted) for trusted in self._roots)

    def trusted_by(self, root: Path) -> Path | None:
        """The trusted root that covers canonical `root`, if any (itself first)."""
        self._refresh()
        if root in self._roots:
            return root
        return next((t for t in self._roots if is_inside(root, t)), None)

    def listed(self) -> list[Path]:
        """The trusted roots, or a ToolError saying the file cannot be used."""
        try:
            return self.roots()
        except TrustError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"codeward's trusted.toml cannot be used ({exc}); fix or delete it.",
            ) from None

    def change(self, given: str, trusted: bool) -> tuple[Path, bool]:
        """Trust or revoke the root the user gave (absolute): its canonical path, and
        whether the trusted roots changed. A root that is gone can still be revoked."""
        roots = self.listed()
        if trusted or not os.path.isabs(given) or os.path.exists(given):
            root = canonical(given)
        else:
            root = Path(os.path.realpath(given))
            if root not in roots:
                raise ToolError(
                    ErrorKind.FILE_NOT_FOUND,
                    "The root does not exist and is not trusted; check the path "
                    "(codeward trust --list shows the trusted roots).",
                )
        if not trusted:
            parent = self.trusted_by(root)
            if parent is not None and parent != root:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "This root is trusted because a directory above it is; revoke that one "
                    "(codeward trust --list shows it).",
                )
        return root, self.set(root, trusted)

    def set(self, root: Path, trusted: bool) -> bool:
        """Trust or revoke canonical `root`; whether the file changed."""
        roots = self.listed()
        if trusted == (root in roots):
            return False
        roots = sorted({*roots, root}) if trusted else [r for r in roots if r != root]
        try:
            self._write(render(roots))
        except OSError as exc:
            raise ToolError(
                ErrorKind.FILE_NOT_FOUND,
                f"codeward's trusted.toml cannot be written ({exc.strerror}); check your "
                "config directory's permissions.",
            ) from None
        return True

    def _refresh(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            self._key, self._roots, self.error = None, [], ""
            return
        except OSError as exc:
            self._fail(f"it cannot be opened ({exc.strerror})")
            return
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            key = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if key == self._key:
                return
            self._key = key
            if not _private(st):
                self._fail("it is not a regular file that only you may write")
                return
            try:
                self._roots, self.error = _parse(f.read().decode("utf-8")), ""
            except (TrustError, UnicodeDecodeError) as exc:
                self._fail(str(exc))

    def _fail(self, reason: str) -> None:
        if reason != self.error:
            log.error("trusted.toml trusts nothing: %s", reason)
        self._roots, self.error = [], reason

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted.", suffix=".toml")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fchmod(f.fileno(), 0o600)
                os.fsync(f.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._key = None


def _private(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022
