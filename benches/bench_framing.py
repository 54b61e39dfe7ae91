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

from typing import Any

import msgspec
import peers
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import codec

CORPUS = peers.sample_corpus(1000)
OPS = len(CORPUS.messages)


def test_corpus_is_representative() -> None:
    sizes = [len(payload) for payload in CORPUS.payloads]
    assert 30 <= sum(sizes) / len(sizes) <= 40
    assert len(peers.sample().SerializeToString()) in range(30, 41)
    assert peers.sample_corpus(10) == peers.sample_corpus(10)  # deterministic


def codec_encode(encoder: codec.FrameEncoder, messages: list[Any]) -> codec.FrameEncoder:
    """FrameEncoder.encode of each message into one warm, cleared encoder."""
    encoder.clear()
    encode = encoder.encode
    for message in messages:
        encode(message)
    return encoder


def codec_write(encoder: codec.FrameEncoder, payloads: list[bytes]) -> codec.FrameEncoder:
    """FrameEncoder.write of each ready payload into one warm, cleared encoder."""
    encoder.clear()
    write = encoder.write
    for payload in payloads:
        write(payload)
    return encoder


def codec_split(stream: bytes) -> list[memoryview]:
    """A FrameDecoder fed the whole stream, frames collected as memoryviews."""
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return list(decoder)


def codec_decode(stream: bytes) -> list[Any]:
    """A FrameDecoder(message_type=Sample) fed the whole stream, messages collected."""
    decoder = codec.FrameDecoder(message_type=peers.Sample)
    decoder.feed(stream)
    return list(decoder)


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


@pytest.mark.benchmark(group="framing-decode-pb2-1000")
def test_codec_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(codec_decode, CORPUS.stream) == CORPUS.messages


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
