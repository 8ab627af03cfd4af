"""The daemon's accept loop handles accept errors as `trio.serve_listeners` does: a capacity
error (EMFILE, ENFILE, ENOMEM, ENOBUFS) is tried again after a pause, anything else raised."""

from __future__ import annotations

import errno
import itertools
import logging
from typing import Any

import pytest
import trio
import trio.testing

from codeward.daemon.listener import ACCEPT_CAPACITY_ERRNOS, ACCEPT_RETRY_SECONDS, accept_loop


class FakeStream(trio.abc.AsyncResource):
    def __init__(self, name: str) -> None:
        self.name = name

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class ScriptedListener(trio.abc.Listener[FakeStream]):
    """Each accept takes the next step: an errno to fail with, or a stream; then it waits."""

    def __init__(self, steps: list[int | str]) -> None:
        self.steps = steps
        self.accepted_at: list[float] = []

    async def accept(self) -> FakeStream:
        self.accepted_at.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        if not self.steps:
            await trio.sleep_forever()
        step = self.steps.pop(0)
        if isinstance(step, int):
            raise OSError(step, f"scripted {errno.errorcode[step]}")
        return FakeStream(step)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


@pytest.mark.parametrize("code", sorted(ACCEPT_CAPACITY_ERRNOS), ids=errno.errorcode.get)
async def test_capacity_errors_wait_and_try_again(
    code: int, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    listener = ScriptedListener([code, code, "first", code, "second"])
    served: list[str] = []
    both = trio.Event()

    async def handler(stream: FakeStream) -> None:
        served.append(stream.name)
        if len(served) == 2:
            both.set()

    caplog.set_level(logging.ERROR, logger="codeward.daemon.listener")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(accept_loop, listener, handler, nursery)
        with trio.fail_after(10):
            await both.wait()
        nursery.cancel_scope.cancel()
    assert served == ["first", "second"]
    times = listener.accepted_at
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(times)]
    assert gaps[:4] == [ACCEPT_RETRY_SECONDS, ACCEPT_RETRY_SECONDS, 0, ACCEPT_RETRY_SECONDS]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert all(errno.errorcode[code] in m for m in messages)


@pytest.mark.parametrize("code", [errno.EBADF, errno.EINVAL, errno.ENOTSOCK, errno.EPERM])
async def test_other_errors_are_raised(code: int, autojump_clock: Any) -> None:
    listener = ScriptedListener(["before", code, "never"])
    served: list[str] = []

    async def handler(stream: FakeStream) -> None:
        served.append(stream.name)

    with pytest.RaisesGroup(pytest.RaisesExc(OSError, check=lambda e: e.errno == code)):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(accept_loop, listener, handler, nursery)
    assert served == ["before"]
    assert listener.steps == ["never"]  # no retry after a real error
