"""Framing: codec's encoder and decoder against the peers of ``peers.py``, in one run.

Run from the repository root with ``pytest benches/ --benchmark-only``.

Every benchmark here handles the same 1000-message corpus of ~35-byte
``Sample`` records per call (``extra_info["ops"]``), so the ratio table shows
per-message times against the naive loop (the baseline of each group), next
to the floors the targets name: upb ``SerializeToString``/``ParseFromString``
alone and msgspec ``encode_into``. Each benchmark checks its result against
the corpus, outside the timed call. Targets (DESIGN): framed pb2 encode
>= 2.5x the naive loop and within 1.3x of ``SerializeToString`` alone; frame
splitting >= 10x the ``_DecodeVarint32`` + slice loop.
"""

from __future__ import annotations

import msgspec
import peers
import pytest
from jobs import codec_decode, codec_encode, codec_split, codec_split_copy, codec_write
from pytest_benchmark.fixture import BenchmarkFixture

import codec

CORPUS = peers.sample_corpus(1000)
OPS = len(CORPUS.messages)


def test_corpus_is_representative() -> None:
    sizes = [len(payload) for payload in CORPUS.payloads]
    assert 30 <= sum(sizes) / len(sizes) <= 40
    assert len(peers.sample().SerializeToString()) in range(30, 41)
    assert peers.sample_corpus(10) == peers.sample_corpus(10)  # deterministic


# --- encode -----------------------------------------------------------------


@pytest.mark.benchmark(group="framing-encode-pb2-1000")
def test_codec_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = benchmark(codec_encode, codec.FrameEncoder(), CORPUS.messages)
    assert bytes(encoder.getbuffer()) == CORPUS.stream


@pytest.mark.benchmark(group="framing-write-payload-1000")
def test_codec_write(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = benchmark(codec_write, codec.FrameEncoder(), CORPUS.payloads)
    assert bytes(encoder.getbuffer()) == CORPUS.stream


@pytest.mark.benchmark(group="framing-encode-pb2-1000")
def test_naive_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_encode, CORPUS.messages) == CORPUS.stream


@pytest.mark.benchmark(group="framing-write-payload-1000")
def test_naive_prefix_concat(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_prefix_concat, CORPUS.payloads) == CORPUS.stream


@pytest.mark.benchmark(group="framing-encode-pb2-1000")
def test_delimited_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.delimited_encode, CORPUS.messages) == CORPUS.stream


@pytest.mark.benchmark(group="framing-encode-pb2-1000")
def test_serialize_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    benchmark(peers.serialize_only, CORPUS.messages)


@pytest.mark.benchmark(group="framing-encode-pb2-1000")
def test_msgspec_encode_into(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = msgspec.msgpack.Encoder()
    expected = b"".join(map(encoder.encode, CORPUS.records))
    assert benchmark(peers.msgspec_encode_into, CORPUS.records, encoder) == expected


# --- split and decode ---------------------------------------------------------


@pytest.mark.benchmark(group="framing-split-1000")
def test_codec_split(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(codec_split, CORPUS.stream) == CORPUS.payloads


@pytest.mark.benchmark(group="framing-split-1000")
def test_codec_split_copy(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(codec_split_copy, CORPUS.stream) == CORPUS.payloads


@pytest.mark.benchmark(group="framing-decode-pb2-1000")
def test_codec_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(codec_decode, CORPUS.stream, peers.Sample) == CORPUS.messages


@pytest.mark.benchmark(group="framing-split-1000")
def test_naive_split(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_split, CORPUS.stream) == CORPUS.payloads


@pytest.mark.benchmark(group="framing-decode-pb2-1000")
def test_naive_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_decode, CORPUS.stream) == CORPUS.messages


@pytest.mark.benchmark(group="framing-decode-pb2-1000")
def test_delimited_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.delimited_decode, CORPUS.stream) == CORPUS.messages


@pytest.mark.benchmark(group="framing-decode-pb2-1000")
def test_parse_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.parse_only, CORPUS.payloads) == CORPUS.messages
