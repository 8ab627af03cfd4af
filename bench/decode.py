"""Why hot bulky answers stay on msgspec: the two converters side by side on the same bytes.

The daemon reads every answer's envelope with msgspec (its `result` left `Raw`), then
shapes the result one of two ways:
- msgspec Structs (`codeward.daemon.lsp.types`), decoded straight from the raw bytes;
- lsprotocol types, structured by its cattrs converter from the JSON decoded to Python.

Prints, for location lists of 1,210 and 5,000 entries (the sizes of issue 8's references
figures), a publishDiagnostics of 200 items, and the small, frequent shapes the daemon
structures with lsprotocol (a hover, a request's params), the median time of each way and
their ratio. Interleaved
rounds: machine load hits both alike.

Run: .venv/bin/python bench/decode.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec
from lsprotocol import types as lsp

from codeward.daemon.lsp.shapes import CONVERTER, result_type, unstructure
from codeward.daemon.lsp.types import Location, Range
from codeward.protocol.messages import decode_message


class Diagnostic(msgspec.Struct, rename="camel"):
    """The msgspec Diagnostic the daemon used before lsprotocol's."""

    range: Range
    message: str
    severity: int | None = None
    code: int | str | None = None
    source: str | None = None
    tags: list[int] | None = None
    data: Any = msgspec.UNSET


class PublishDiagnosticsParams(msgspec.Struct):
    uri: str
    diagnostics: list[Diagnostic]
    version: int | None = None


_locations = msgspec.json.Decoder(list[Location] | None)
_published = msgspec.json.Decoder(PublishDiagnosticsParams)
_any = msgspec.json.Decoder()
_REFERENCES = result_type("textDocument/references")
_HOVER = result_type("textDocument/hover")


def response(result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": result}).encode()


def locations(count: int) -> bytes:
    """A references answer of `count` locations over 12 files, as a server writes it."""
    return response(
        [
            {
                "uri": f"file:///work/project/src/pkg/module_{n % 12}.py",
                "range": {
                    "start": {"line": n // 3, "character": 4 + n % 40},
                    "end": {"line": n // 3, "character": 14 + n % 40},
                },
            }
            for n in range(count)
        ]
    )


def published(count: int) -> bytes:
    """A publishDiagnostics notification of `count` diagnostics, as ruff writes them."""
    diagnostics = [
        {
            "range": {
                "start": {"line": n, "character": 0},
                "end": {"line": n, "character": 9},
            },
            "severity": 1 + n % 2,
            "code": "F401",
            "source": "Ruff",
            "message": f"`os` imported but unused (line {n})",
            "data": {"title": "Remove unused import", "edits": []},
        }
        for n in range(count)
    ]
    params = {"uri": "file:///work/project/src/a.py", "version": 3, "diagnostics": diagnostics}
    return json.dumps({"jsonrpc": "2.0", "method": "x", "params": params}).encode()


HOVER = response(
    {
        "contents": {
            "kind": "markdown",
            "value": "```python\n(function) def area(width: float, height: float) -> float\n```"
            "\n---\nThe area of a rectangle.\n\nArgs:\n    width: in metres.",
        },
        "range": {"start": {"line": 41, "character": 8}, "end": {"line": 41, "character": 12}},
    }
)


def timed(work: Callable[[], Any], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return samples


def _without_nulls(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_nulls(v) for k, v in data.items() if v is not None}
    if isinstance(data, list | tuple):
        return [_without_nulls(v) for v in data]
    return data


def side_by_side(
    label: str, frame: bytes, fast: Callable[[bytes], Any], typed: Callable[[bytes], Any], n: int
) -> None:
    """Median of msgspec (`fast`) and cattrs (`typed`) on the payload of `frame`."""
    payload = bytes(decode_message(frame).payload)
    both = msgspec.to_builtins(fast(payload)), CONVERTER.unstructure(typed(payload))
    assert _without_nulls(both[0]) == _without_nulls(both[1])  # the same shapes, both ways
    fast_times: list[float] = []
    typed_times: list[float] = []
    for _ in range(n):  # interleaved, in small batches
        fast_times += timed(lambda: fast(payload), 5)
        typed_times += timed(lambda: typed(payload), 5)
    a, b = statistics.median(fast_times), statistics.median(typed_times)
    unit, scale = ("ms", 1e3) if b > 1e-3 else ("µs", 1e6)
    print(
        f"{label:<32} msgspec {a * scale:9.2f} {unit}   cattrs {b * scale:9.2f} {unit}"
        f"   ratio {b / a:5.1f}x"
    )


def params(line: int) -> dict[str, Any]:
    return unstructure(
        lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri="file:///work/project/src/a.py"),
            position=lsp.Position(line=line, character=8),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="batches of 5 calls each way")
    rounds = parser.parse_args().rounds
    print("shaping an answer from the bytes after the envelope (median per call):")
    for count in (1210, 5000):
        side_by_side(
            f"references, {count:,} locations",
            locations(count),
            _locations.decode,
            lambda raw: CONVERTER.structure(_any.decode(raw), _REFERENCES),
            max(4, rounds // (4 if count > 2000 else 2)),
        )
    side_by_side(
        "publishDiagnostics, 200 items",
        published(200),
        _published.decode,
        lambda raw: CONVERTER.structure(_any.decode(raw), lsp.PublishDiagnosticsParams),
        rounds,
    )
    side_by_side(
        "hover (markdown + range)",
        HOVER,
        _any.decode,  # the daemon's old way: JSON to dicts, read by hand
        lambda raw: CONVERTER.structure(_any.decode(raw), _HOVER),
        rounds * 20,
    )
    dicts = statistics.median(
        timed(
            lambda: {
                "textDocument": {"uri": "file:///work/project/src/a.py"},
                "position": {"line": 3, "character": 8},
            },
            rounds * 100,
        )
    )
    typed = statistics.median(timed(lambda: params(3), rounds * 100))
    print(
        f"{'definition params, built':<32} dicts   {dicts * 1e6:9.2f} µs   lsprotocol "
        f"{typed * 1e6:6.2f} µs   ratio {typed / dicts:5.1f}x"
    )


if __name__ == "__main__":
    main()
