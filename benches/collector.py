"""What Python's cycle collector costs a reader that keeps what it decodes.

Run from the repository root with ``python benches/collector.py [rounds]``.

The job: decode OTLP trace export requests (``otlp.py``) until 100,000 spans
have been read into one list, as a collector of telemetry does before it
hands a batch on. Every struct or container the collector tracks is visited
by each full collection while the list lives, so the cost grows with what is
kept, not with what is decoded. The peers, timed in the same rounds: upb
(``FromString``), whose messages the collector does not track, and codec's
decoder, which leaves what it makes untracked until a store could close a
cycle through it (see "the cycle collector" in ``codec/structs/_struct.py``).

Each runs with the collector on, as an application runs, and again with it
off, which shows how much of each time is collection. The list is dropped
and a collection run between jobs, outside the timing.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import otlp

import codec

SPANS = 100_000
REQUESTS = otlp.requests(100)  # 40 spans each; decoded 25 times over
PAYLOADS = [request.SerializeToString() for request in REQUESTS] * (
    SPANS // (100 * otlp.RESOURCES * otlp.SCOPES * otlp.SPANS)
)
REQUEST_CLASS = type(REQUESTS[0])
STRUCT_CLASS = codec.struct(REQUEST_CLASS)
DECODER = codec.Decoder(STRUCT_CLASS)


def read_spans(decode: Callable[[bytes], Any]) -> list[Any]:
    """Every span of every payload, in one list (their requests stay alive through them)."""
    spans: list[Any] = []
    for payload in PAYLOADS:
        for resource_spans in decode(payload).resource_spans:
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    return spans


PEERS: dict[str, Callable[[], list[Any]]] = {
    "upb": lambda: read_spans(REQUEST_CLASS.FromString),
    "codec": lambda: read_spans(DECODER.decode),
}


def _timed(job: Callable[[], list[Any]], collector: bool) -> float:
    gc.collect()
    if not collector:
        gc.disable()
    try:
        start = time.perf_counter()
        spans = job()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    assert len(spans) == SPANS, len(spans)
    del spans
    return elapsed


def main(rounds: int) -> None:
    if not codec.COMPILED:
        sys.exit("collector.py times the compiled core: build it first")
    expected = otlp.read_requests(REQUESTS)
    assert otlp.read_requests([DECODER.decode(p) for p in PAYLOADS[:100]]) == expected
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(rounds):
        for peer, job in PEERS.items():
            for collector in (True, False):
                times.setdefault((peer, collector), []).append(_timed(job, collector))
    print(f"{SPANS:,} OTLP spans read into a list; {rounds} rounds, min (median) in ms")
    base = min(times["upb", True])
    for peer in PEERS:
        on, off = times[peer, True], times[peer, False]
        print(
            f"{peer:16} collector on {min(on) * 1e3:6.0f} ({statistics.median(on) * 1e3:4.0f})"
            f"   off {min(off) * 1e3:6.0f} ({statistics.median(off) * 1e3:4.0f})"
            f"   on ÷ upb's on {min(on) / base:5.2f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
