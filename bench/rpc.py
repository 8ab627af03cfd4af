"""Round trip of `daemon/status` over the socket, and `codeward status` start-up.

Prints median and p99 over 10,000 calls with one client and with 32 concurrent clients,
the throughput of one client that keeps 64 requests in flight (the path where replies queue
and the connection's backpressure counts them), the round trip of a 100-request batch, and
the wall time of `codeward status` against `python -c pass`, as a ratio.
Run: .venv/bin/python bench/rpc.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import Daemon, cpu_seconds  # bench/

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n'


def status(msg_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"daemon/status"}' % msg_id


BIN = Path(sys.executable).parent


def round_trips(sock: Path, calls: int, out: list[float]) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        reader = s.makefile("rb")
        for _ in range(calls):
            t0 = time.perf_counter()
            s.sendall(REQUEST)
            reader.readline()
            out.append(time.perf_counter() - t0)


def pipelined(sock: Path, calls: int, window: int) -> float:
    """Calls per second of one client that keeps `window` requests in flight."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        reader = s.makefile("rb")
        t0 = time.perf_counter()
        s.sendall(b"".join(status(i) + b"\n" for i in range(window)))
        for done in range(calls):
            reader.readline()
            if done + window < calls:
                s.sendall(status(done + window) + b"\n")
        return calls / (time.perf_counter() - t0)


def batches(sock: Path, runs: int, size: int, out: list[float]) -> None:
    batch = b"[" + b",".join(status(i) for i in range(size)) + b"]\n"
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        reader = s.makefile("rb")
        for _ in range(runs):
            t0 = time.perf_counter()
            s.sendall(batch)
            reader.readline()
            out.append(time.perf_counter() - t0)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def report(label: str, samples: list[float]) -> None:
    print(
        f"{label:<28} median {statistics.median(samples) * 1e6:8.1f} us"
        f"   p99 {percentile(samples, 0.99) * 1e6:8.1f} us   ({len(samples)} calls)"
    )


def wall(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-", dir="/tmp"))
    daemon = Daemon(tmp)
    sock = daemon.socket
    try:
        one: list[float] = []
        round_trips(sock, 200, [])  # warm-up
        round_trips(sock, args.calls, one)
        report("1 client", one)

        many: list[list[float]] = [[] for _ in range(args.clients)]
        per_client = max(1, args.calls // args.clients)
        threads = [
            threading.Thread(target=round_trips, args=(sock, per_client, many[i]))
            for i in range(args.clients)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        merged = [x for xs in many for x in xs]
        report(f"{args.clients} concurrent clients", merged)
        print(f"{'':<28} throughput {len(merged) / elapsed:8.0f} calls/s")

        cpu = cpu_seconds(daemon.proc.pid)
        rate = pipelined(sock, args.calls, 64)
        cpu = (cpu_seconds(daemon.proc.pid) - cpu) / args.calls
        print(
            f"{'1 client, 64 in flight':<28} throughput {rate:8.0f} calls/s"
            f"   daemon CPU {cpu * 1e6:6.1f} us/call"
        )
        batch: list[float] = []
        batches(sock, max(10, args.calls // 100), 100, batch)
        report("batch of 100", batch)

        env = {**os.environ, "CODEWARD_SOCKET": str(sock)}
        codeward = [str(BIN / "codeward"), "--no-autostart", "status"]
        baseline = wall([sys.executable, "-c", "pass"], args.runs, env)
        cli = wall(codeward, args.runs, env)
        print(
            f"{'codeward status':<28} {cli * 1e3:8.1f} ms   python -c pass {baseline * 1e3:6.1f} ms"
            f"   ratio {cli / baseline:5.2f}"
        )
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
