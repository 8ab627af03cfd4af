"""The daemon's process-wide caches of values keyed by a session's paths or URIs (for
example `uris.path_to_uri`): each registers itself with `keyed_by_paths`, and `release`
empties them all when a session ends, so a closed session's paths are not kept alive by
them (they fill again with the live sessions' paths as those are used). `trim` then gives
the memory the ended session freed back to the system, run by `Reclaim` once nothing holds
the session any more."""

from __future__ import annotations

import ctypes
import functools
import gc
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import trio


class Cache(Protocol):
    def cache_clear(self) -> None: ...

    def cache_info(self) -> object: ...


C = TypeVar("C", bound=Cache)

_registered: list[Cache] = []


def keyed_by_paths(cache: C) -> C:
    """Register a `functools.lru_cache`d function whose keys or values are paths."""
    _registered.append(cache)
    return cache


def release() -> None:
    """Empty every registered cache (a session ended)."""
    for cache in _registered:
        cache.cache_clear()


def trim() -> None:
    """Collect the garbage, then hand the C heap's free memory back to the system (glibc's
    `malloc_trim`; nothing elsewhere): what an ended session freed stays in the process
    otherwise. Blocking (a pass over the heap): run in a thread."""
    gc.collect()
    malloc_trim = _libc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


class Reclaim:
    """Runs `trim` in a thread of its own task when asked (`request`), one after another:
    a session's parts know each other (reference cycles), so only a collection frees it,
    and only once nothing holds it. The code that let go of a session (its task ending) or
    of a server's actor serving it (a shared process stopped after its last root left: its
    progress went to the session) asks as its last step; the collection runs later, in
    this task, when that code's frames are gone. Requests meanwhile make one more trim."""

    def __init__(self) -> None:
        self._wanted = trio.Event()

    def request(self) -> None:
        self._wanted.set()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.to_thread.run_sync(trim)


@functools.cache
def _libc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, looked up among the symbols the process has loaded (not with
    `ctypes.util.find_library`, which runs `ldconfig -p`: a process started while the
    daemon loads), on the first trim."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


def sizes() -> dict[str, int]:
    """How many entries each registered cache holds, by its function's qualified name."""
    return {_name(c): getattr(c.cache_info(), "currsize", 0) for c in _registered}


def _name(cache: Cache) -> str:
    return f"{getattr(cache, '__module__', '')}.{getattr(cache, '__qualname__', repr(cache))}"
