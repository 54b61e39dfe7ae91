"""Structs against upb and msgspec on the three workloads of the struct engine, in one run.

Run from the repository root with ``pytest benches/bench_struct_workloads.py --benchmark-only``.

* W1: 1000 framed ~35-byte ``Sample`` records (``bench_structs.py`` has its encode,
  decode and construction groups); here: decode + reading every field.
* W2: one ``Trace`` of 1000 ``Span`` sub-messages (3 ints, a string, 4 packed tags
  and an ``Interval`` of 2 doubles each), about 70 KB.
* W3: 1000 framed ``Record`` messages of about 350 bytes (every scalar kind, a
  ``map<string, int64>`` of 10, a oneof, repeated strings, packed int64, a
  sub-message).

Each workload is timed three ways: encode (for framed ones, upb's best loop:
``SerializeToString`` + prefix + append), decode + read every field, and decode
alone (upb parses lazily, so decode alone favours it). The baseline of each group
is upb; msgspec (msgpack of the same data, in C, into ``msgspec.Struct`` classes of
the same fields) is the reference for a fast Python object.
"""

from __future__ import annotations

from typing import Any

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import msgspec
import peers
import pytest
from jobs import codec_decode, codec_encode, naive_prefix_concat
from pytest_benchmark.fixture import BenchmarkFixture

import codec
import peerbench

# --- the data, as pb2 messages, structs and msgspec Structs ---------------------------------


class Interval(msgspec.Struct):
    start: float = 0.0
    end: float = 0.0


class Span(msgspec.Struct):
    scope_id: int = 0
    start_ns: int = 0
    end_ns: int = 0
    name: str = ""
    tags: list[int] = []
    window: Interval | None = None


class Trace(msgspec.Struct):
    index: int = 0
    spans: list[Span] = []


class Record(msgspec.Struct):
    id: int = 0
    kind: int = 0
    level: int = 0
    delta: int = 0
    offset: int = 0
    mask: int = 0
    token: int = 0
    skew: int = 0
    drift: int = 0
    ratio: float = 0.0
    score: float = 0.0
    ok: bool = False
    title: str = ""
    payload: bytes = b""
    labels: dict[str, int] = {}
    names: list[str] = []
    counts: list[int] = []
    origin: Interval | None = None
    text: str = ""
    number: int = 0
    created: int = 0
    updated: int = 0


def _interval(m: Any) -> Interval:
    return Interval(start=m.start, end=m.end)


TRACE = peerbench.trace(1000)
TRACE_BYTES = TRACE.SerializeToString()
TRACE_STRUCT = codec.from_pb2(TRACE)
TRACE_MSGSPEC = Trace(
    index=TRACE.index,
    spans=[
        Span(s.scope_id, s.start_ns, s.end_ns, s.name, list(s.tags), _interval(s.window))
        for s in TRACE.spans
    ],
)
TRACE_MSGPACK = msgspec.msgpack.encode(TRACE_MSGSPEC)
TraceStruct = type(TRACE_STRUCT)

RECORDS = peerbench.records(1000)
RECORD_PAYLOADS = [m.SerializeToString() for m in RECORDS]
RECORD_STREAM = bytes(naive_prefix_concat(RECORD_PAYLOADS))
# Map entries in upb's deterministic order, as both write them when asked.
DETERMINISTIC = [m.SerializeToString(deterministic=True) for m in RECORDS]
RECORD_DETERMINISTIC_STREAM = bytes(naive_prefix_concat(DETERMINISTIC))
RECORD_STRUCTS = [codec.from_pb2(m) for m in RECORDS]
RecordStruct = codec.struct(peerbench.Record)
RECORD_MSGSPEC = [
    Record(
        **{
            name: getattr(m, name)
            for name in Record.__struct_fields__
            if name not in ("labels", "names", "counts", "origin")
        },
        labels=dict(m.labels),
        names=list(m.names),
        counts=list(m.counts),
        origin=_interval(m.origin),
    )
    for m in RECORDS
]
RECORD_MSGPACK = [msgspec.msgpack.encode(m) for m in RECORD_MSGSPEC]
SampleStruct = codec.struct(peers.Sample)
SAMPLES = peers.sample_corpus(1000)
SAMPLE_MSGSPEC = msgspec.defstruct(
    "Sample", [("ts_ns", int, 0), ("scope_id", int, 0), ("value", int, 0), ("name", str, "")]
)
SAMPLE_MSGPACK = [
    msgspec.msgpack.encode(SAMPLE_MSGSPEC(m.ts_ns, m.scope_id, m.value, m.name))
    for m in SAMPLES.messages
]

# --- reading every field (the same attribute names in all three) ---------------------------


def read_samples(messages: list[Any]) -> int:
    total = 0
    for m in messages:
        total += m.ts_ns + m.scope_id + m.value + len(m.name)
    return total


def read_trace(trace: Any) -> float:
    total = float(trace.index)
    for s in trace.spans:
        total += s.scope_id + s.start_ns - s.end_ns + len(s.name) + sum(s.tags)
        total += s.window.start + s.window.end
    return total


def read_records(records: list[Any]) -> float:
    total = 0.0
    for m in records:
        total += m.id + m.kind + m.level + m.delta + m.offset + m.mask + m.token + m.skew
        total += m.drift + m.ratio + m.score + m.ok + len(m.title) + len(m.payload)
        total += sum(m.labels.values()) + len(m.names) + sum(m.counts)
        total += m.origin.start + m.origin.end + len(m.text) + m.number + m.created + m.updated
    return total


SAMPLE_TOTAL = read_samples(SAMPLES.messages)
TRACE_TOTAL = read_trace(TRACE)
RECORD_TOTAL = read_records(RECORDS)

TRACE_DECODER = codec.Decoder(TraceStruct)
RECORD_DECODER = codec.Decoder(RecordStruct)
SAMPLE_DECODER = msgspec.msgpack.Decoder(SAMPLE_MSGSPEC)
TRACE_MSGSPEC_DECODER = msgspec.msgpack.Decoder(Trace)
RECORD_MSGSPEC_DECODER = msgspec.msgpack.Decoder(Record)
MSGPACK = msgspec.msgpack.Encoder()


# --- W1: decode + read every field ----------------------------------------------------------


@pytest.mark.benchmark(group="w1-decode-read-1000")
def test_w1_upb_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=1000)
    run = lambda: read_samples(peers.naive_decode(SAMPLES.stream))  # noqa: E731
    assert benchmark(run) == SAMPLE_TOTAL


@pytest.mark.benchmark(group="w1-decode-read-1000")
def test_w1_codec_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    run = lambda: read_samples(codec_decode(SAMPLES.stream, SampleStruct))  # noqa: E731
    assert benchmark(run) == SAMPLE_TOTAL


@pytest.mark.benchmark(group="w1-decode-read-1000")
def test_w1_msgspec_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    run = lambda: read_samples([SAMPLE_DECODER.decode(p) for p in SAMPLE_MSGPACK])  # noqa: E731
    assert benchmark(run) == SAMPLE_TOTAL


# --- W2: one message of 1000 nested spans ----------------------------------------------------


@pytest.mark.benchmark(group="w2-encode")
def test_w2_upb_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["baseline"] = True
    assert benchmark(TRACE.SerializeToString) == TRACE_BYTES


@pytest.mark.benchmark(group="w2-encode")
def test_w2_codec_encode(benchmark: BenchmarkFixture) -> None:
    assert benchmark(codec.encode, TRACE_STRUCT) == TRACE_BYTES


@pytest.mark.benchmark(group="w2-encode")
def test_w2_msgspec_encode(benchmark: BenchmarkFixture) -> None:
    assert benchmark(MSGPACK.encode, TRACE_MSGSPEC) == TRACE_MSGPACK


@pytest.mark.benchmark(group="w2-decode-read")
def test_w2_upb_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["baseline"] = True
    run = lambda: read_trace(peerbench.Trace.FromString(TRACE_BYTES))  # noqa: E731
    assert benchmark(run) == TRACE_TOTAL


@pytest.mark.benchmark(group="w2-decode-read")
def test_w2_codec_decode_read(benchmark: BenchmarkFixture) -> None:
    run = lambda: read_trace(TRACE_DECODER.decode(TRACE_BYTES))  # noqa: E731
    assert benchmark(run) == TRACE_TOTAL


@pytest.mark.benchmark(group="w2-decode-read")
def test_w2_msgspec_decode_read(benchmark: BenchmarkFixture) -> None:
    run = lambda: read_trace(TRACE_MSGSPEC_DECODER.decode(TRACE_MSGPACK))  # noqa: E731
    assert benchmark(run) == TRACE_TOTAL


@pytest.mark.benchmark(group="w2-decode-only")
def test_w2_upb_decode_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["baseline"] = True
    assert benchmark(peerbench.Trace.FromString, TRACE_BYTES).index == 7


@pytest.mark.benchmark(group="w2-decode-only")
def test_w2_codec_decode_only(benchmark: BenchmarkFixture) -> None:
    assert benchmark(TRACE_DECODER.decode, TRACE_BYTES) == TRACE_STRUCT


@pytest.mark.benchmark(group="w2-decode-only")
def test_w2_msgspec_decode_only(benchmark: BenchmarkFixture) -> None:
    assert benchmark(TRACE_MSGSPEC_DECODER.decode, TRACE_MSGPACK) == TRACE_MSGSPEC


# --- W3: 1000 framed ~350-byte records with a map ---------------------------------------------


@pytest.mark.benchmark(group="w3-encode-1000")
def test_w3_upb_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=1000)
    assert benchmark(peers.naive_encode, RECORDS) == RECORD_STREAM


@pytest.mark.benchmark(group="w3-encode-1000")
def test_w3_upb_best_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    assert benchmark(peers.best_encode, RECORDS) == RECORD_STREAM


@pytest.mark.benchmark(group="w3-encode-1000")
def test_w3_codec_encode(benchmark: BenchmarkFixture) -> None:
    """Map entries in the maps' own order, as pb2's default: the same records to upb."""
    benchmark.extra_info["ops"] = 1000
    encoder = benchmark(codec_encode, codec.FrameEncoder(), RECORD_STRUCTS)
    stream = bytes(encoder.getbuffer())
    assert peers.best_decode(stream, peerbench.Record) == RECORDS


@pytest.mark.benchmark(group="w3-encode-deterministic-1000")
def test_w3_upb_best_encode_deterministic(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=1000)
    encoded = benchmark(peers.best_encode, RECORDS, True)
    assert encoded == RECORD_DETERMINISTIC_STREAM


@pytest.mark.benchmark(group="w3-encode-deterministic-1000")
def test_w3_codec_encode_deterministic(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    encoder = benchmark(codec_encode, codec.FrameEncoder(deterministic=True), RECORD_STRUCTS)
    assert bytes(encoder.getbuffer()) == RECORD_DETERMINISTIC_STREAM


@pytest.mark.benchmark(group="w3-encode-1000")
def test_w3_msgspec_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    out = bytearray()

    def run() -> bytearray:
        out.clear()
        for message in RECORD_MSGSPEC:
            MSGPACK.encode_into(message, out, -1)
        return out

    assert bytes(benchmark(run)) == b"".join(RECORD_MSGPACK)


@pytest.mark.benchmark(group="w3-decode-read-1000")
def test_w3_upb_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=1000)
    run = lambda: read_records(peers.naive_decode(RECORD_STREAM, peerbench.Record))  # noqa: E731
    assert benchmark(run) == RECORD_TOTAL


@pytest.mark.benchmark(group="w3-decode-read-1000")
def test_w3_codec_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    run = lambda: read_records(codec_decode(RECORD_STREAM, RECORD_DECODER))  # noqa: E731
    assert benchmark(run) == RECORD_TOTAL


@pytest.mark.benchmark(group="w3-decode-read-1000")
def test_w3_msgspec_decode_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    decode = RECORD_MSGSPEC_DECODER.decode
    run = lambda: read_records([decode(p) for p in RECORD_MSGPACK])  # noqa: E731
    assert benchmark(run) == RECORD_TOTAL


@pytest.mark.benchmark(group="w3-decode-only-1000")
def test_w3_upb_decode_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=1000)
    assert len(benchmark(peers.naive_decode, RECORD_STREAM, peerbench.Record)) == 1000


@pytest.mark.benchmark(group="w3-decode-only-1000")
def test_w3_codec_decode_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    assert benchmark(codec_decode, RECORD_STREAM, RECORD_DECODER) == RECORD_STRUCTS


@pytest.mark.benchmark(group="w3-decode-only-1000")
def test_w3_msgspec_decode_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = 1000
    decode = RECORD_MSGSPEC_DECODER.decode
    assert benchmark(lambda: [decode(p) for p in RECORD_MSGPACK]) == RECORD_MSGSPEC
