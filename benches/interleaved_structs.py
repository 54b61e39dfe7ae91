"""The struct engine's table, interleaved: every peer of a row timed in the same rounds.

Run from the repository root with ``python benches/interleaved_structs.py [rounds] [row]``;
``row`` keeps the rows whose name holds it (``"decode only"``).

pytest-benchmark times one benchmark after another, so on a shared machine a
burst of load lands on one peer and not the others, and a ratio can move by a
factor of two from one run to the next. Here each round times every peer of
every row once, in turn, and a row's figure is the ratio of the peers' minimum
(and median) over all rounds: load that lasts longer than a round weighs on all
of them alike. The workloads and the peers are those of
``bench_struct_workloads.py`` and ``bench_structs.py``; each ratio is a peer's
time over codec's (> 1: codec is faster). upb is used at its best (a prefix
table to encode, an inline prefix read to decode), its naive loop beside it.
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
import otlp
import peers
from jobs import best_decode, best_encode, codec_decode, codec_encode

import codec
import peerbench

ENCODER = codec.FrameEncoder()
SORTING_ENCODER = codec.FrameEncoder(deterministic=True)

# W4: 100 OTLP trace export requests (otlp.py), framed.
OTLP = otlp.requests(100)
OTLP_STREAM = bytes(best_encode(OTLP))
OTLP_STRUCTS = [codec.from_pb2(request) for request in OTLP]
OTLP_DECODER = codec.Decoder(type(OTLP_STRUCTS[0]))
# codec's lazy decode (codec.Decoder(lazy=True)), a peer of its own in the decode rows.
LAZY_SAMPLES = codec.Decoder(w.SampleStruct, lazy=True)
LAZY_TRACE = codec.Decoder(type(w.TRACE_STRUCT), lazy=True)
LAZY_RECORDS = codec.Decoder(w.RECORD_DECODER.type, lazy=True)
LAZY_OTLP = codec.Decoder(type(OTLP_STRUCTS[0]), lazy=True)
OTLP_CLASS = type(OTLP[0])
MSGSPEC_RECORDS = s.construct_all(s.SampleRecord)


def _msgpack_framed(objects: list[object]) -> None:
    out = bytearray()
    for obj in objects:
        w.MSGPACK.encode_into(obj, out, -1)


# row -> peer -> the job (one call: the whole batch of the row). "upb" is upb at its
# best (jobs.best_encode / best_decode: a prefix table, an inline prefix read), "upb naive"
# the README's loop; the deterministic row asks both for upb's sorted map order.
ROWS: dict[str, dict[str, Callable[[], object]]] = {
    "W1 encode": {
        "upb": lambda: best_encode(s.CORPUS.messages),
        "upb naive": lambda: peers.naive_encode(s.CORPUS.messages),
        "codec": lambda: codec_encode(ENCODER, s.STRUCTS),
        "msgspec": lambda: peers.msgspec_encode_into(s.CORPUS.records, w.MSGPACK),
    },
    "W2 encode": {
        "upb": w.TRACE.SerializeToString,
        "codec": lambda: codec.encode(w.TRACE_STRUCT),
        "msgspec": lambda: w.MSGPACK.encode(w.TRACE_MSGSPEC),
    },
    "W3 encode": {
        "upb": lambda: best_encode(w.RECORDS),
        "upb naive": lambda: peers.naive_encode(w.RECORDS),
        "codec": lambda: codec_encode(ENCODER, w.RECORD_STRUCTS),
        "msgspec": lambda: _msgpack_framed(w.RECORD_MSGSPEC),
    },
    "W3 encode, deterministic": {
        "upb": lambda: best_encode(w.RECORDS, deterministic=True),
        "codec": lambda: codec_encode(SORTING_ENCODER, w.RECORD_STRUCTS),
    },
    "W1 decode + read": {
        "upb": lambda: w.read_samples(best_decode(w.SAMPLES.stream)),
        "upb naive": lambda: w.read_samples(peers.naive_decode(w.SAMPLES.stream)),
        "codec": lambda: w.read_samples(codec_decode(w.SAMPLES.stream, w.SampleStruct)),
        "codec lazy": lambda: w.read_samples(codec_decode(w.SAMPLES.stream, LAZY_SAMPLES)),
        "msgspec": lambda: w.read_samples([w.SAMPLE_DECODER.decode(p) for p in w.SAMPLE_MSGPACK]),
    },
    "W2 decode + read": {
        "upb": lambda: w.read_trace(peerbench.Trace.FromString(w.TRACE_BYTES)),
        "codec": lambda: w.read_trace(w.TRACE_DECODER.decode(w.TRACE_BYTES)),
        "codec lazy": lambda: w.read_trace(LAZY_TRACE.decode(w.TRACE_BYTES)),
        "msgspec": lambda: w.read_trace(w.TRACE_MSGSPEC_DECODER.decode(w.TRACE_MSGPACK)),
    },
    "W3 decode + read": {
        "upb": lambda: w.read_records(best_decode(w.RECORD_STREAM, peerbench.Record)),
        "upb naive": lambda: w.read_records(peers.naive_decode(w.RECORD_STREAM, peerbench.Record)),
        "codec": lambda: w.read_records(codec_decode(w.RECORD_STREAM, w.RECORD_DECODER)),
        "codec lazy": lambda: w.read_records(codec_decode(w.RECORD_STREAM, LAZY_RECORDS)),
        "msgspec": lambda: w.read_records(
            [w.RECORD_MSGSPEC_DECODER.decode(m) for m in w.RECORD_MSGPACK]
        ),
    },
    "W1 decode only": {
        "upb": lambda: best_decode(w.SAMPLES.stream),
        "upb naive": lambda: peers.naive_decode(w.SAMPLES.stream),
        "codec": lambda: codec_decode(w.SAMPLES.stream, w.SampleStruct),
        "codec lazy": lambda: codec_decode(w.SAMPLES.stream, LAZY_SAMPLES),
        "msgspec": lambda: [w.SAMPLE_DECODER.decode(p) for p in w.SAMPLE_MSGPACK],
    },
    "W2 decode only": {
        "upb": lambda: peerbench.Trace.FromString(w.TRACE_BYTES),
        "codec": lambda: w.TRACE_DECODER.decode(w.TRACE_BYTES),
        "codec lazy": lambda: LAZY_TRACE.decode(w.TRACE_BYTES),
        "msgspec": lambda: w.TRACE_MSGSPEC_DECODER.decode(w.TRACE_MSGPACK),
    },
    "W3 decode only": {
        "upb": lambda: best_decode(w.RECORD_STREAM, peerbench.Record),
        "upb naive": lambda: peers.naive_decode(w.RECORD_STREAM, peerbench.Record),
        "codec": lambda: codec_decode(w.RECORD_STREAM, w.RECORD_DECODER),
        "codec lazy": lambda: codec_decode(w.RECORD_STREAM, LAZY_RECORDS),
        "msgspec": lambda: [w.RECORD_MSGSPEC_DECODER.decode(m) for m in w.RECORD_MSGPACK],
    },
    "W4 OTLP encode": {
        "upb": lambda: best_encode(OTLP),
        "upb naive": lambda: peers.naive_encode(OTLP),
        "codec": lambda: codec_encode(ENCODER, OTLP_STRUCTS),
    },
    "W4 OTLP decode + read": {
        "upb": lambda: otlp.read_requests(best_decode(OTLP_STREAM, OTLP_CLASS)),
        "codec": lambda: otlp.read_requests(codec_decode(OTLP_STREAM, OTLP_DECODER)),
        "codec lazy": lambda: otlp.read_requests(codec_decode(OTLP_STREAM, LAZY_OTLP)),
    },
    "W4 OTLP decode only": {
        "upb": lambda: best_decode(OTLP_STREAM, OTLP_CLASS),
        "codec": lambda: codec_decode(OTLP_STREAM, OTLP_DECODER),
        "codec lazy": lambda: codec_decode(OTLP_STREAM, LAZY_OTLP),
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


def _check_w4() -> None:
    """W4's peers do the same job: the same bytes (OTLP has no maps), the same fields read."""
    assert bytes(codec_encode(ENCODER, OTLP_STRUCTS).getbuffer()) == OTLP_STREAM
    expected = otlp.read_requests(OTLP)
    assert otlp.read_requests(codec_decode(OTLP_STREAM, OTLP_DECODER)) == expected
    assert otlp.read_requests(codec_decode(OTLP_STREAM, LAZY_OTLP)) == expected
    assert otlp.read_requests(best_decode(OTLP_STREAM, OTLP_CLASS)) == expected


def main(rounds: int, only: str = "") -> None:
    if not codec.COMPILED:
        sys.exit("interleaved_structs.py times the compiled core: build it first")
    _check_w4()
    rows = {row: jobs for row, jobs in ROWS.items() if only in row}
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for row, jobs in rows.items():
            for peer, job in jobs.items():
                times.setdefault((row, peer), []).extend(_timed(job, 3))
    print(f"{rounds} rounds; each peer's min (median) in µs; then the ratios of their minima")
    print("and medians: a peer's time ÷ codec's (> 1: codec is faster)")
    for row, jobs in rows.items():
        low = {peer: min(times[row, peer]) * 1e6 for peer in jobs}
        mid = {peer: statistics.median(times[row, peer]) * 1e6 for peer in jobs}
        cells = [f"{peer} {low[peer]:.0f} ({mid[peer]:.0f})" for peer in jobs]
        print(f"{row:26} " + "  ".join(cells))
        for ours in ("codec", "codec lazy"):
            if ours in jobs:
                ratios = [
                    f"{peer} {low[peer] / low[ours]:.2f} ({mid[peer] / mid[ours]:.2f})"
                    for peer in jobs
                    if not peer.startswith("codec")
                ]
                print(f"{'':26} ÷ {ours}: " + "  ".join(ratios))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, *sys.argv[2:3])
