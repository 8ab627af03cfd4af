"""The daemon's own work on a 5,000-location references reply, in process: frame, envelope,
msgspec decode into Location Structs, path and position shaping with previews, de-duplication
and sort, and the encoding of the tool's reply (the event loop and socket I/O left out).

The fixture: 25 files of 200 calls of `compute`, and the reply a server gives for them.
bench/lsp.py runs this script once per source tree (`PYTHONPATH=tree`) to set the daemon
before a change beside the daemon after it; it prints one JSON line: medians in ms of
process CPU time and of wall time, per stage and in total.

Run: .venv/bin/python bench/shaping.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FILES = 25
USES = 200  # per file: 5,000 locations
USE = "from lib import compute\n\n" + "".join(f"r{i} = compute({i})\n" for i in range(USES))


def fixture(parent: Path) -> tuple[Path, bytes]:
    """The project, and the Content-Length frame of the references reply for it."""
    root = Path(os.path.realpath(parent)) / "project"
    root.mkdir()
    (root / "lib.py").write_text("def compute(value: int) -> int:\n    return value * 2\n")
    locations = []
    for k in range(FILES):
        path = root / f"use_{k}.py"
        path.write_text(USE)
        for i in range(USES):
            start, end = {"line": 2 + i, "character": 5}, {"line": 2 + i, "character": 12}
            locations.append({"uri": path.as_uri(), "range": {"start": start, "end": end}})
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": locations}).encode()
    return root, b"Content-Length: %d\r\n\r\n" % len(body) + body


def shaper(root: Path) -> Callable[[list[Any]], list[Any]]:
    """The tree's own shaping of decoded locations, whichever names the tree has."""
    from codeward.daemon.config import Config
    from codeward.daemon.intel import locations

    try:
        from codeward.daemon.lsp.service import LanguageService as Layer
    except ImportError:  # a tree from before the language-service interface
        from codeward.daemon.lsp.manager import LspManager as Layer  # type: ignore[no-redef]
    layer = Layer(root, Config(), lambda _: None)

    def shape(items: list[Any]) -> list[Any]:
        locator = locations.Locator(layer)
        bulk = getattr(locator, "locations", None)
        if bulk is not None:
            return bulk(items, "utf-16")
        return locations.finish(locator.location(i.uri, i.range, "utf-16") for i in items)

    return shape


def run(rounds: int) -> dict[str, Any]:
    import msgspec

    from codeward.daemon.lsp.types import Location
    from codeward.protocol.framing import ContentLengthDecoder, Framing, encode_frame
    from codeward.protocol.messages import Response, decode_message, encode

    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-shaping-"))
    try:
        root, wire = fixture(tmp)
        shape = shaper(root)
        stages = ("frame", "decode", "shape", "encode")
        cpu: dict[str, list[float]] = {stage: [] for stage in stages}
        wall: list[float] = []
        count = 0
        for _ in range(rounds):
            marks = [time.process_time()]
            begin = time.perf_counter()
            [body] = ContentLengthDecoder(1 << 28).feed(wire)
            message = decode_message(body)
            marks.append(time.process_time())
            items = msgspec.json.decode(bytes(message.payload), type=list[Location] | None) or []
            marks.append(time.process_time())
            found = shape(items)
            marks.append(time.process_time())
            result = {"status": "found", "references": found, "count": len(found)}
            encode_frame(Framing.NDJSON, encode(Response(id=1, result=result)))
            marks.append(time.process_time())
            wall.append(time.perf_counter() - begin)
            for stage, before, after in zip(stages, marks, marks[1:], strict=False):
                cpu[stage].append(after - before)
            count = len(found)
        medians = {stage: statistics.median(values) * 1000 for stage, values in cpu.items()}
        totals = [sum(values) for values in zip(*cpu.values(), strict=True)]
        return {
            "count": count,
            "cpu_ms": statistics.median(totals) * 1000,
            "wall_ms": statistics.median(wall) * 1000,
            "stages_cpu_ms": medians,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    json.dump(run(args.rounds), sys.stdout)
    print()


if __name__ == "__main__":
    main()
