"""The struct engine's table, interleaved: every peer of a row timed in the same rounds.

Run from the repository root with ``python benches/interleaved_structs.py [rounds]``.

pytest-benchmark times one benchmark after another, so on a shared machine a
burst of load lands on one peer and not the others, and a ratio can move by a
factor of two from one run to the next. Here each round times every peer of
every row once, in turn, and a row's figure is the ratio of the peers' minimum
(and median) over all rounds: load that lasts longer than a round weighs on all
of them alike. The workloads and the peers are those of
``bench_struct_workloads.py`` and ``bench_structs.py``; ratios are upb's time
over codec's (> 1: codec is faster) and codec's over msgspec's (< 1 would be
faster than msgspec).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import bench_struct_workloads as w
import bench_structs as s
import peers
from jobs import codec_decode, codec_encode

import codec
import peerbench

ENCODER = codec.FrameEncoder()
MSGSPEC_RECORDS = s.construct_all(s.SampleRecord)


def _msgpack_framed(objects: list[object]) -> None:
    out = bytearray()
    for obj in objects:
        w.MSGPACK.encode_into(obj, out, -1)


# row -> peer -> the job (one call: the whole batch of the row)
ROWS: dict[str, dict[str, Callable[[], object]]] = {
    "W1 encode": {
        "upb": lambda: peers.naive_encode(s.CORPUS.messages),
        "codec": lambda: codec_encode(ENCODER, s.STRUCTS),
        "msgspec": lambda: peers.msgspec_encode_into(s.CORPUS.records, w.MSGPACK),
    },
    "W2 encode": {
        "upb": w.TRACE.SerializeToString,
        "codec": lambda: codec.encode(w.TRACE_STRUCT),
        "msgspec": lambda: w.MSGPACK.encode(w.TRACE_MSGSPEC),
    },
    "W3 encode": {
        "upb": lambda: peers.naive_encode(w.RECORDS),
        "codec": lambda: codec_encode(ENCODER, w.RECORD_STRUCTS),
        "msgspec": lambda: _msgpack_framed(w.RECORD_MSGSPEC),
    },
    "W1 decode + read": {
        "upb": lambda: w.read_samples(peers.naive_decode(w.SAMPLES.stream)),
        "codec": lambda: w.read_samples(codec_decode(w.SAMPLES.stream, w.SampleStruct)),
        "msgspec": lambda: w.read_samples([w.SAMPLE_DECODER.decode(p) for p in w.SAMPLE_MSGPACK]),
    },
    "W2 decode + read": {
        "upb": lambda: w.read_trace(peerbench.Trace.FromString(w.TRACE_BYTES)),
        "codec": lambda: w.read_trace(w.TRACE_DECODER.decode(w.TRACE_BYTES)),
        "msgspec": lambda: w.read_trace(w.TRACE_MSGSPEC_DECODER.decode(w.TRACE_MSGPACK)),
    },
    "W3 decode + read": {
        "upb": lambda: w.read_records(codec_decode(w.RECORD_STREAM, peerbench.Record)),
        "codec": lambda: w.read_records(codec_decode(w.RECORD_STREAM, w.RECORD_DECODER)),
        "msgspec": lambda: w.read_records(
            [w.RECORD_MSGSPEC_DECODER.decode(m) for m in w.RECORD_MSGPACK]
        ),
    },
    "W2 decode only": {
        "upb": lambda: peerbench.Trace.FromString(w.TRACE_BYTES),
        "codec": lambda: w.TRACE_DECODER.decode(w.TRACE_BYTES),
        "msgspec": lambda: w.TRACE_MSGSPEC_DECODER.decode(w.TRACE_MSGPACK),
    },
    "W3 decode only": {
        "upb": lambda: peers.naive_decode(w.RECORD_STREAM, peerbench.Record),
        "codec": lambda: codec_decode(w.RECORD_STREAM, w.RECORD_DECODER),
        "msgspec": lambda: [w.RECORD_MSGSPEC_DECODER.decode(m) for m in w.RECORD_MSGPACK],
    },
    "construct 1000 x 4 fields": {
        "upb": lambda: s.construct_all(peers.Sample),
        "codec": lambda: s.construct_all(s.SampleStruct),
        "msgspec": lambda: s.construct_all(s.SampleRecord),
    },
    "read 1000 x 4 fields": {
        "upb": lambda: s.read_all(s.CORPUS.messages),
        "codec": lambda: s.read_all(s.STRUCTS),
        "msgspec": lambda: s.read_all(MSGSPEC_RECORDS),
    },
}


def _timed(job: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return times


def main(rounds: int) -> None:
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for row, jobs in ROWS.items():
            for peer, job in jobs.items():
                times.setdefault((row, peer), []).extend(_timed(job, 3))
    print(f"{rounds} rounds; min (median) µs; upb ÷ codec; codec ÷ msgspec")
    for row, jobs in ROWS.items():
        low = {peer: min(times[row, peer]) * 1e6 for peer in jobs}
        mid = {peer: statistics.median(times[row, peer]) * 1e6 for peer in jobs}
        print(
            f"{row:26} upb {low['upb']:9.0f} ({mid['upb']:9.0f})  "
            f"codec {low['codec']:9.0f} ({mid['codec']:9.0f})  "
            f"msgspec {low['msgspec']:9.0f} ({mid['msgspec']:9.0f})  "
            f"vs upb {low['upb'] / low['codec']:5.2f} ({mid['upb'] / mid['codec']:5.2f})  "
            f"vs msgspec {low['codec'] / low['msgspec']:5.2f} "
            f"({mid['codec'] / mid['msgspec']:5.2f})"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
