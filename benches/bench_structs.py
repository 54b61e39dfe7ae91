"""Structs: framed encode and typed decode of codec structs against upb, in one run.

Run from the repository root with ``pytest benches/ --benchmark-only``.

The corpus is the same 1000 ~35-byte ``Sample`` records as bench_framing.py,
as structs (``codec.from_pb2``). Targets (DESIGN): framed struct encode >= 8x
the naive pb2 loop and >= 2x faster than upb ``SerializeToString()`` alone
(msgspec's msgpack ``encode_into`` of the same tuples is the reference for a
C encoder); struct decode no slower than upb ``ParseFromString``. A nested
case encodes and decodes one ``Frame`` of 1000 ``Event`` sub-messages.
"""

from __future__ import annotations

from typing import Any

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import msgspec
import peers
import pytest
from jobs import codec_decode, codec_encode
from pytest_benchmark.fixture import BenchmarkFixture

import codec
import peerbench

CORPUS = peers.sample_corpus(1000)
OPS = len(CORPUS.messages)
SampleStruct = codec.struct(peers.Sample)
STRUCTS = [codec.from_pb2(message) for message in CORPUS.messages]

FRAME = peerbench.Frame(
    index=7,
    events=[
        peerbench.Event(scope_id=i % 97, start_ns=1_000_000 + 40 * i, end_ns=1_000_030 + 40 * i)
        for i in range(1000)
    ],
    starts=list(range(0, 40_000, 40)),
)
FRAME_STRUCT = codec.from_pb2(FRAME)
FRAME_BYTES = FRAME.SerializeToString()


# --- encode -----------------------------------------------------------------


@pytest.mark.benchmark(group="structs-encode-1000")
def test_naive_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_encode, CORPUS.messages) == CORPUS.stream


@pytest.mark.benchmark(group="structs-encode-1000")
def test_serialize_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    benchmark(peers.serialize_only, CORPUS.messages)


@pytest.mark.benchmark(group="structs-encode-1000")
def test_codec_encode_structs(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = benchmark(codec_encode, codec.FrameEncoder(), STRUCTS)
    assert bytes(encoder.getbuffer()) == CORPUS.stream


@pytest.mark.benchmark(group="structs-encode-1000")
def test_msgspec_encode_into(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = msgspec.msgpack.Encoder()
    expected = b"".join(map(encoder.encode, CORPUS.records))
    assert benchmark(peers.msgspec_encode_into, CORPUS.records, encoder) == expected


# --- decode -----------------------------------------------------------------


@pytest.mark.benchmark(group="structs-decode-1000")
def test_parse_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.parse_only, CORPUS.payloads) == CORPUS.messages


@pytest.mark.benchmark(group="structs-decode-1000")
def test_codec_decode_structs(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(codec_decode, CORPUS.stream, SampleStruct) == STRUCTS


# --- a nested frame of 1000 events ---------------------------------------------


@pytest.mark.benchmark(group="structs-nested-encode")
def test_upb_serialize_frame(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["baseline"] = True
    assert benchmark(FRAME.SerializeToString) == FRAME_BYTES


@pytest.mark.benchmark(group="structs-nested-encode")
def test_codec_encode_frame(benchmark: BenchmarkFixture) -> None:
    assert benchmark(codec.encode, FRAME_STRUCT) == FRAME_BYTES


@pytest.mark.benchmark(group="structs-nested-decode")
def test_upb_parse_frame(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["baseline"] = True
    assert benchmark(peerbench.Frame.FromString, FRAME_BYTES) == FRAME


@pytest.mark.benchmark(group="structs-nested-decode")
def test_codec_decode_frame(benchmark: BenchmarkFixture) -> None:
    assert benchmark(codec.decode, type(FRAME_STRUCT), FRAME_BYTES) == FRAME_STRUCT


# --- construction and attribute reads (4-field records) ------------------------------------


class SampleRecord(msgspec.Struct):
    """msgspec's Struct of the same four fields: the model for a fast Python object."""

    ts_ns: int = 0
    scope_id: int = 0
    value: int = 0
    name: str = ""


FIELDS = [(m.ts_ns, m.scope_id, m.value, m.name) for m in CORPUS.messages]


def construct_all(cls: Any) -> list[Any]:
    """``cls(ts_ns=..., scope_id=..., value=..., name=...)`` for each record, by keyword."""
    return [cls(ts_ns=t, scope_id=s, value=v, name=n) for t, s, v, n in FIELDS]


def read_all(objects: list[Any]) -> int:
    """Read the four fields of each object (the sum keeps the reads from being skipped)."""
    total = 0
    for o in objects:
        total += o.ts_ns + o.scope_id + o.value + len(o.name)
    return total


@pytest.mark.benchmark(group="structs-construct-1000")
def test_msgspec_construct(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert len(benchmark(construct_all, SampleRecord)) == OPS


@pytest.mark.benchmark(group="structs-construct-1000")
def test_pb2_construct(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(construct_all, peers.Sample) == CORPUS.messages


@pytest.mark.benchmark(group="structs-construct-1000")
def test_codec_construct(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(construct_all, SampleStruct) == STRUCTS


READ_TOTAL = read_all(CORPUS.messages)


@pytest.mark.benchmark(group="structs-read-1000")
def test_msgspec_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(read_all, construct_all(SampleRecord)) == READ_TOTAL


@pytest.mark.benchmark(group="structs-read-1000")
def test_pb2_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(read_all, CORPUS.messages) == READ_TOTAL


@pytest.mark.benchmark(group="structs-read-1000")
def test_codec_read(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(read_all, STRUCTS) == READ_TOTAL
