"""The connection layer's endings and limits, through the daemon's socket: half-closed and
vanished clients, writes that outlive their client, backpressure, the batch reply bound,
connections that send nothing, the connection limit, SIGTERM with requests in flight, and
descriptors under churn."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from codeward.client.connection import Connection as ThinConnection
from codeward.client.connection import ConnectionLost, connect_socket
from codeward.daemon.config import Config, DaemonConfig, PolicyConfig
from codeward.daemon.connection import Connection
from codeward.daemon.server import Daemon
from codeward.protocol.framing import Framing, encode_frame, make_decoder
from tests.git_repos import commit_all, git, git_home, make_repo, write
from tests.lsp_support import needs
from tests.test_daemon_lifecycle import DAEMON, wait_for_socket

__all__ = ["git_home"]

ALLOW_WRITES = Config(policy=PolicyConfig(git_write="allow"))


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def tool(msg_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return request(msg_id, "tools/call", {"name": name, "arguments": arguments})


class Wire:
    """A bare client socket: messages out, messages in, and the half-close."""

    def __init__(self, sock: trio.socket.SocketType, framing: Framing) -> None:
        self.sock = sock
        self.framing = framing
        self._decoder = make_decoder(framing)
        self._messages: list[Any] = []
        self.eof = False

    @classmethod
    async def open(cls, path: Path, framing: Framing = Framing.NDJSON) -> Wire:
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await sock.connect(str(path))
        return cls(sock, framing)

    async def send_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[await self.sock.send(view) :]

    async def send(self, *messages: Any) -> None:
        frames = [encode_frame(self.framing, json.dumps(m).encode()) for m in messages]
        await self.send_raw(b"".join(frames))

    async def next(self, timeout: float = 20) -> Any:
        """The next message; fails if the daemon closes first."""
        with trio.fail_after(timeout):
            while not self._messages:
                assert await self._fill(), "the daemon closed the connection"
        return self._messages.pop(0)

    async def rest(self) -> list[Any]:
        """Every message until the daemon closes the connection."""
        with trio.fail_after(20):
            while await self._fill():
                pass
        messages, self._messages = self._messages, []
        return messages

    async def _fill(self) -> bool:
        try:
            data = await self.sock.recv(65536)
        except ConnectionResetError:  # closed with our bytes unread
            data = b""
        if not data:
            self.eof = True
            return False
        self._messages += [json.loads(frame) for frame in self._decoder.feed(data)]
        return True

    def shut_write(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()


async def connection_of(daemon: Daemon, count: int = 1) -> Connection:
    """The newest of the daemon's connections, once it has `count` of them."""
    await trio.testing.wait_all_tasks_blocked()
    assert len(daemon.connections) == count
    return daemon.connections[max(daemon.connections)]


@pytest.fixture
def blackhole() -> Iterator[str]:
    """An http URL whose server takes connections and never answers: git waits on it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/repo.git"


@pytest.fixture
def repo(project: Path, blackhole: str) -> Path:
    """A git repository with one commit, and a remote that never answers."""
    make_repo(project)
    write(project, "a.txt", "one\n")
    commit_all(project, "first")
    git(project, "remote", "add", "origin", blackhole)
    return project


def fetch(msg_id: int) -> dict[str, Any]:
    return tool(msg_id, "git_command", subcommand="fetch", args=["origin"])


def result_ids(replies: list[Any]) -> set[Any]:
    return {r["id"] for r in replies if "result" in r}


# ---- the end of a client -------------------------------------------------------------------


class TestClientEndings:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return ALLOW_WRITES

    @pytest.mark.parametrize("framing", [Framing.NDJSON, Framing.CONTENT_LENGTH])
    async def test_a_half_closed_client_gets_every_reply(
        self, daemon: Daemon, repo: Path, framing: Framing
    ) -> None:
        write(repo, "a.txt", "changed\n")
        wire = await Wire.open(daemon.socket_path, framing)
        await wire.send(
            request(1, "session/open", {"root": str(repo)}),  # takes effect before the rest
            tool(2, "git_command", subcommand="commit", args=["-a", "-m", "second"]),
            tool(3, "git_command", subcommand="log", args=["--oneline"]),
            request(4, "lua/eval", {"source": "return codeward.git('status', {}).exit_code"}),
            tool(5, "git_command", subcommand="branch", args=["feature"]),
            request(6, "daemon/status"),
            request(7, "tools/list"),
        )
        wire.shut_write()
        replies = await wire.rest()
        assert result_ids(replies) == {1, 2, 3, 4, 5, 6, 7}, replies
        assert git(repo, "log", "-1", "--format=%s").strip() == "second"
        assert "feature" in git(repo, "branch", "--list", "feature")

    @pytest.mark.parametrize(
        ("arguments", "done"),
        [
            (["add", "b.txt"], lambda repo: git(repo, "diff", "--cached", "--name-only")),
            (["commit", "-a", "-m", "second"], lambda repo: "second" in git(repo, "log")),
            (["branch", "feature"], lambda repo: git(repo, "branch", "--list", "feature")),
            (["tag", "v1"], lambda repo: git(repo, "tag", "--list", "v1")),
        ],
        ids=["add", "commit", "branch", "tag"],
    )
    async def test_a_write_sent_just_before_close_is_done(
        self, daemon: Daemon, repo: Path, arguments: list[str], done: Any
    ) -> None:
        write(repo, "a.txt", "changed\n")
        write(repo, "b.txt", "new\n")
        wire = await Wire.open(daemon.socket_path)
        conn = await connection_of(daemon)
        await wire.send(
            request(1, "session/open", {"root": str(repo)}),
            tool(2, "git_command", subcommand=arguments[0], args=arguments[1:]),
        )
        wire.close()
        with trio.fail_after(20):
            await conn.done.wait()
        assert conn.gone
        assert done(repo)

    async def test_a_vanished_client_cancels_its_reads(self, daemon: Daemon, repo: Path) -> None:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "session/open", {"root": str(repo)}))
        assert "result" in await wire.next()
        await wire.send(fetch(2), request(3, "daemon/status"))
        assert (await wire.next())["id"] == 3  # the fetch runs (git waits on the remote)
        conn = await connection_of(daemon)
        assert conn.busy
        wire.close()
        with trio.fail_after(10):  # git would wait for its 60 s timeout
            await conn.done.wait()

    async def test_a_half_closed_client_that_then_closes_cancels_its_reads(
        self, daemon: Daemon, repo: Path
    ) -> None:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "session/open", {"root": str(repo)}))
        assert "result" in await wire.next()
        await wire.send(fetch(2), request(3, "daemon/status"))
        assert (await wire.next())["id"] == 3
        wire.shut_write()
        conn = await connection_of(daemon)
        assert conn.reader_done.is_set() and not conn.gone  # still waiting to answer
        wire.close()
        with trio.fail_after(10):
            await conn.done.wait()
        assert conn.gone


async def mcp_wire(daemon: Daemon, root: Path) -> Wire:
    """An MCP client on the socket itself: the binding line, then initialize."""
    wire = await Wire.open(daemon.socket_path)
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    await wire.send(
        {"jsonrpc": "2.0", "method": "codeward/mcp", "params": {"root": str(root)}},
        request(1, "initialize", init),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert "result" in await wire.next()
    return wire


def mcp_git(msg_id: int, subcommand: str, *args: str) -> dict[str, Any]:
    params = {"name": "git_command", "arguments": {"subcommand": subcommand, "args": list(args)}}
    return request(msg_id, "tools/call", params)


class TestMcpEndings:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return ALLOW_WRITES

    async def test_a_write_sent_just_before_close_is_done(self, daemon: Daemon, repo: Path) -> None:
        wire = await mcp_wire(daemon, repo)
        conn = await connection_of(daemon)
        await wire.send(mcp_git(2, "fetch", "origin"), mcp_git(3, "tag", "v1"))
        wire.close()
        with trio.fail_after(20):  # the fetch is cancelled, the tag is made
            await conn.done.wait()
        assert git(repo, "tag", "--list", "v1").strip() == "v1"

    async def test_a_call_cut_by_a_stop_gets_an_error(self, daemon: Daemon, repo: Path) -> None:
        wire = await mcp_wire(daemon, repo)
        await wire.send(mcp_git(2, "fetch", "origin"), request(3, "tools/list"))
        assert (await wire.next())["id"] == 3  # the fetch was read before it, and runs
        daemon.request_stop()
        cut = await wire.next()
        assert cut["id"] == 2 and cut["error"]["code"] == -32800
        assert "stopping" in cut["error"]["message"]


@needs("basedpyright")
class TestHalfCloseWithALanguageServer:
    async def test_references_and_diagnostics_are_answered(
        self, daemon: Daemon, project: Path
    ) -> None:
        write(project, "m.py", "def f() -> int:\n    return 1\n\n\nx: str = f()\ny = f()\n")
        wire = await Wire.open(daemon.socket_path)
        await wire.send(
            request(1, "session/open", {"root": str(project)}),
            tool(2, "find_references", path="m.py", line=1, character=5),
            tool(3, "get_diagnostics", path="m.py"),
            tool(4, "get_hover_info", path="m.py", line=6, character=5),
        )
        wire.shut_write()
        replies = {r["id"]: r for r in await wire.rest()}
        assert result_ids(list(replies.values())) == {1, 2, 3, 4}, replies
        assert replies[2]["result"]["count"] == 2
        assert any(d["line"] == 5 for d in replies[3]["result"]["diagnostics"])


async def test_hang_up_tells_a_half_close_from_a_close() -> None:
    from codeward.daemon.hangup import hung_up, wait_hung_up

    for how in ("shutdown", "close"):
        ours, theirs = trio.socket.socketpair()
        with ours:
            if how == "shutdown":
                theirs.shutdown(socket.SHUT_WR)
            else:
                theirs.close()
            assert await ours.recv(10) == b""  # the same end-of-file either way
            assert hung_up(ours.fileno()) is (how == "close")
            if how == "shutdown":
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(wait_hung_up, ours.fileno())
                    await trio.testing.wait_all_tasks_blocked()
                    theirs.close()  # the watcher returns, and the nursery ends
                assert hung_up(ours.fileno())


# ---- backpressure and the batch bound ------------------------------------------------------

QUEUE_LIMIT = 256 * 1024
IN_FLIGHT = 8


class TestBackpressure:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(
            daemon=DaemonConfig(
                max_queued_reply_bytes=QUEUE_LIMIT, max_requests_in_flight=IN_FLIGHT
            ),
            policy=PolicyConfig(git_write="allow"),
        )

    async def reply_size(self, daemon: Daemon) -> int:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(0, "tools/list"))
        size = len(json.dumps(await wire.next()))
        conn = await connection_of(daemon)
        wire.close()
        await conn.done.wait()
        return size

    async def test_unread_replies_stop_the_reading(self, daemon: Daemon) -> None:
        size = await self.reply_size(daemon)
        bound = QUEUE_LIMIT + IN_FLIGHT * (size + 64)
        wire = await Wire.open(daemon.socket_path)
        await wire.send(*(request(i, "tools/list") for i in range(1, 301)))  # ~12 MB of replies
        conn = await connection_of(daemon)
        assert conn.paused  # it stopped reading this client's requests
        assert 0 < conn.outbox.queued_bytes <= bound
        replies = [await wire.next() for _ in range(300)]
        assert sorted(r["id"] for r in replies) == list(range(1, 301))
        assert all("result" in r for r in replies)
        assert conn.outbox.peak_bytes <= bound
        await trio.testing.wait_all_tasks_blocked()
        assert not conn.paused and conn.outbox.queued_bytes == 0

    async def test_a_closed_connection_frees_its_queue_at_once(self, daemon: Daemon) -> None:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(*(request(i, "tools/list") for i in range(1, 301)))
        conn = await connection_of(daemon)
        assert conn.paused and conn.outbox.queued_bytes > 0
        wire.close()
        with trio.fail_after(20):
            await conn.done.wait()
        assert conn.outbox.queued_bytes == 0 and conn.outbox.closed
        assert daemon.connections == {}

    async def test_a_write_behind_unread_replies_is_done_after_close(
        self, daemon: Daemon, repo: Path
    ) -> None:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "session/open", {"root": str(repo)}))
        assert "result" in await wire.next()
        reads = [request(i, "tools/list") for i in range(2, 302)]
        await wire.send(*reads, tool(302, "git_command", subcommand="tag", args=["v1"]))
        conn = await connection_of(daemon)
        assert conn.paused  # the write waits in the socket, behind the reads
        wire.close()
        with trio.fail_after(20):
            await conn.done.wait()
        assert git(repo, "tag", "--list", "v1").strip() == "v1"

    async def test_requests_in_flight_are_capped(self, daemon: Daemon, repo: Path) -> None:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "session/open", {"root": str(repo)}))
        assert "result" in await wire.next()
        await wire.send(*(fetch(i) for i in range(2, 2 + IN_FLIGHT + 3)))
        conn = await connection_of(daemon)
        assert conn.paused and conn.running == IN_FLIGHT
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}
        await wire.send(cancel)  # read only once there is room: it waits behind the fetches
        wire.close()
        with trio.fail_after(10):
            await conn.done.wait()


def wire_size(value: Any) -> int:
    """The bytes `value` takes as compact JSON, as the daemon writes it."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


class TestBatchBound:
    LIMIT = 100_000

    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(
            daemon=DaemonConfig(max_batch_reply_bytes=self.LIMIT, max_requests_in_flight=4)
        )

    async def test_replies_over_the_bound_are_output_too_large(self, daemon: Daemon) -> None:
        batch = [request(i, "tools/list") for i in range(20)] + [request(20, "daemon/status")]
        wire = await Wire.open(daemon.socket_path)
        await wire.send(batch)
        replies = await wire.next()
        assert sorted(r["id"] for r in replies) == list(range(21))
        ok = [r for r in replies if "result" in r]
        too_large = [r for r in replies if "error" in r]
        assert ok and too_large and len(ok) + len(too_large) == 21
        assert sum(wire_size(r) for r in ok) <= self.LIMIT
        assert all(r["error"]["data"]["kind"] == "output_too_large" for r in too_large)
        messages = [r["error"]["message"] for r in too_large]
        assert any(m.startswith("This request ran") for m in messages)  # its reply dropped
        assert any(m.startswith("Not run") for m in messages)  # later ones not started
        assert wire_size(replies) <= self.LIMIT + 300 * len(too_large)
        (conn,) = daemon.connections.values()
        assert conn._batch_bytes == 0
        # a small batch on the same connection is whole
        await wire.send([request(30, "daemon/status"), request(31, "daemon/status")])
        assert result_ids(await wire.next()) == {30, 31}


# ---- idle connections and the connection limit ---------------------------------------------


async def test_a_connection_that_sends_nothing_is_closed(
    daemon: Daemon, autojump_clock: trio.testing.MockClock
) -> None:
    silent = await Wire.open(daemon.socket_path)
    partial = await Wire.open(daemon.socket_path)
    await partial.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "daemon/st')  # never ends
    talker = await Wire.open(daemon.socket_path)
    await talker.send(request(1, "daemon/status"))
    assert (await talker.next())["id"] == 1
    start = trio.current_time()
    for wire in (silent, partial):
        closing = await wire.next(timeout=60)
        assert closing["error"]["code"] == -32001
        assert "No message within 30 s" in closing["error"]["message"]
        assert await wire.rest() == [] and wire.eof
    assert 30 <= trio.current_time() - start < 31
    await talker.send(request(2, "daemon/status"))  # a connection that spoke stays
    assert (await talker.next())["result"]["connections"] == 1


class TestConnectionLimit:
    @pytest.fixture
    def daemon_config(self) -> Config:
        return Config(daemon=DaemonConfig(max_connections=3))

    async def busy(self, daemon: Daemon, repo: Path) -> Wire:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "session/open", {"root": str(repo)}), fetch(2))
        await wire.send(request(3, "daemon/status"))
        assert (await wire.next())["id"] == 1
        assert (await wire.next())["id"] == 3
        return wire

    async def idle(self, daemon: Daemon) -> Wire:
        wire = await Wire.open(daemon.socket_path)
        await wire.send(request(1, "daemon/status"))
        assert "result" in await wire.next()
        return wire

    async def test_the_longest_idle_connection_makes_room(self, daemon: Daemon, repo: Path) -> None:
        busy = await self.busy(daemon, repo)
        oldest = await self.idle(daemon)
        newer = await self.idle(daemon)
        newcomer = await self.idle(daemon)  # a fourth: the oldest idle one is closed for it
        closing = await oldest.next()
        assert closing["error"]["code"] == -32001
        assert "connection limit" in closing["error"]["message"]
        assert await oldest.rest() == []
        for wire in (busy, newer, newcomer):
            await wire.send(request(9, "daemon/status"))
            assert (await wire.next())["result"]["connections"] == 3

    async def test_an_mcp_host_is_kept_before_a_plain_idle_connection(
        self, daemon: Daemon, repo: Path
    ) -> None:
        host = await mcp_wire(daemon, repo)  # idle longest, but a session a person is using
        plain = await self.idle(daemon)
        newer = await self.idle(daemon)
        newcomer = await self.idle(daemon)
        closing = await plain.next()
        assert "connection limit" in closing["error"]["message"]
        await host.send(request(9, "ping"))
        assert (await host.next())["id"] == 9
        for wire in (newer, newcomer):
            await wire.send(request(9, "daemon/status"))
            assert (await wire.next())["result"]["connections"] == 3

    async def test_when_all_are_busy_a_newcomer_gets_an_error(
        self, daemon: Daemon, repo: Path
    ) -> None:
        busy = [await self.busy(daemon, repo) for _ in range(3)]  # kept open
        refused = await Wire.open(daemon.socket_path)
        await refused.send(request(1, "daemon/status"))
        (closing,) = await refused.rest()
        assert closing["error"]["code"] == -32001 and "all busy" in closing["error"]["message"]
        assert len(daemon.connections) == 3

        def thin_client() -> str:  # the CLI's client says why
            client = ThinConnection(connect_socket(daemon.socket_path))
            with client, pytest.raises(ConnectionLost) as info:
                client.request("daemon/status")
            return str(info.value)

        message = await trio.to_thread.run_sync(thin_client)
        assert message.startswith("The daemon closed the connection: The daemon has 3")
        for wire in busy:
            wire.close()


# ---- stopping ------------------------------------------------------------------------------


async def test_on_stop_requests_in_flight_are_answered_and_newcomers_refused(
    daemon: Daemon, repo: Path
) -> None:
    wire = await Wire.open(daemon.socket_path)
    await wire.send(
        request(1, "initialize", {"capabilities": {"confirm": True}}),
        request(2, "session/open", {"root": str(repo)}),
        fetch(3),
        tool(4, "git_command", subcommand="tag", args=["v1"]),  # asks the client first
        request(5, "daemon/status"),
    )
    assert [(await wire.next())["id"] for _ in range(3)] == [1, 2, 5]
    daemon.request_stop()
    # the read is cancelled, with an error; the write goes on, and asks for its approval
    first, second = await wire.next(), await wire.next()
    cancelled, confirm = (first, second) if "error" in first else (second, first)
    assert cancelled["id"] == 3 and cancelled["error"]["code"] == -32800
    assert "stopping" in cancelled["error"]["message"]
    assert confirm["method"] == "client/confirm"
    late = await Wire.open(daemon.socket_path)
    (refused,) = await late.rest()
    assert refused["error"]["code"] == -32001 and "stopping" in refused["error"]["message"]
    await wire.send({"jsonrpc": "2.0", "id": confirm["id"], "result": {"approved": True}})
    done = await wire.next()
    assert done["id"] == 4 and done["result"]["exit_code"] == 0
    assert git(repo, "tag", "--list", "v1").strip() == "v1"


def test_sigterm_answers_every_request_in_flight(
    tmp_path: Path, socket_dir: Path, repo: Path
) -> None:
    """A real daemon: SIGTERM cancels reads with an error each, and lets a write finish."""
    config = tmp_path / "config.toml"
    config.write_text("[policy]\ngit_write = 'confirm'\n")
    path = socket_dir / "codeward.sock"
    proc = subprocess.Popen(
        [*DAEMON, "--socket", str(path), "--config", str(config)], stderr=subprocess.PIPE
    )
    try:
        wait_for_socket(proc, path)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(30)
            sock.connect(str(path))
            reader = sock.makefile("rb")

            def send(*messages: Any) -> None:
                sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

            send(
                request(1, "initialize", {"capabilities": {"confirm": True}}),
                request(2, "session/open", {"root": str(repo)}),
                fetch(3),
                request(4, "lua/eval", {"source": "return codeward.git('fetch', {'origin'})"}),
                tool(5, "git_command", subcommand="tag", args=["v1"]),
                request(6, "daemon/status"),
            )
            replies: dict[Any, Any] = {}
            while 6 not in replies:  # every request before it was read and started
                message = json.loads(reader.readline())
                replies[message.get("id")] = message
            proc.send_signal(signal.SIGTERM)
            while line := reader.readline():
                message = json.loads(line)
                if message.get("method") == "client/confirm":
                    send({"jsonrpc": "2.0", "id": message["id"], "result": {"approved": True}})
                else:
                    replies[message["id"]] = message
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for msg_id in (3, 4):
        error = replies[msg_id]["error"]
        assert error["code"] == -32800 and error["data"]["kind"] == "cancelled"
        assert "stopping" in error["message"]
    assert replies[5]["result"]["exit_code"] == 0
    assert git(repo, "tag", "--list", "v1").strip() == "v1"


# ---- descriptors -------------------------------------------------------------------------


async def test_descriptors_stay_bounded_under_churn(daemon: Daemon) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    status = encode_frame(Framing.NDJSON, json.dumps(request(1, "daemon/status")).encode())

    async def cycle(i: int) -> None:
        wire = await Wire.open(daemon.socket_path)
        kind = i % 5
        if kind == 0:  # a round trip, then close
            await wire.send_raw(status)
            await wire.next()
        elif kind == 1:  # a request, and close without reading the reply
            await wire.send_raw(status)
        elif kind == 2:  # a request, then the half-close
            await wire.send_raw(status)
            wire.shut_write()
            assert len(await wire.rest()) == 1
        elif kind == 3:  # garbage
            await wire.send_raw(b"\x00garbage\n")
        wire.close()  # kind 4: connect and close at once

    for i in range(50):
        await cycle(i)
    await trio.testing.wait_all_tasks_blocked()
    before = open_fds()
    with trio.fail_after(120):
        for i in range(2000):
            await cycle(i)
        for conn in list(daemon.connections.values()):
            await conn.done.wait()
    await trio.testing.wait_all_tasks_blocked()
    assert daemon.connections == {}
    assert open_fds() <= before
