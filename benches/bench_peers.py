"""The peers of ``peers.py`` on their own: calibration, and a check that each one works.

Run from the repository root with ``pytest benches/ --benchmark-only``.

Every benchmark here handles the same 1000-message corpus per call
(``extra_info["ops"]``), so the ratio table shows per-message times and the
headroom between the naive loop (the baseline) and the floors the targets
name: upb ``SerializeToString``/``ParseFromString`` alone and msgspec
``encode_into``. Each benchmark also checks its result against the corpus,
outside the timed call. Framing benchmarks of codec itself put the same peers
in their own groups, next to codec's functions.
"""

from __future__ import annotations

import msgspec
import peers
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

CORPUS = peers.sample_corpus(1000)
OPS = len(CORPUS.messages)


def test_corpus_is_representative() -> None:
    sizes = [len(payload) for payload in CORPUS.payloads]
    assert 30 <= sum(sizes) / len(sizes) <= 40
    assert len(peers.sample().SerializeToString()) in range(30, 41)
    assert peers.sample_corpus(10) == peers.sample_corpus(10)  # deterministic


# --- encode -----------------------------------------------------------------


@pytest.mark.benchmark(group="peers-encode-1000")
def test_naive_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_encode, CORPUS.messages) == CORPUS.stream


@pytest.mark.benchmark(group="peers-encode-1000")
def test_naive_prefix_concat(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.naive_prefix_concat, CORPUS.payloads) == CORPUS.stream


@pytest.mark.benchmark(group="peers-encode-1000")
def test_delimited_encode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.delimited_encode, CORPUS.messages) == CORPUS.stream


@pytest.mark.benchmark(group="peers-encode-1000")
def test_serialize_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    benchmark(peers.serialize_only, CORPUS.messages)


@pytest.mark.benchmark(group="peers-encode-1000")
def test_msgspec_encode_into(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    encoder = msgspec.msgpack.Encoder()
    expected = b"".join(map(encoder.encode, CORPUS.records))
    assert benchmark(peers.msgspec_encode_into, CORPUS.records, encoder) == expected


# --- split and decode ---------------------------------------------------------


@pytest.mark.benchmark(group="peers-split-1000")
def test_naive_split(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_split, CORPUS.stream) == CORPUS.payloads


@pytest.mark.benchmark(group="peers-decode-1000")
def test_naive_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=OPS)
    assert benchmark(peers.naive_decode, CORPUS.stream) == CORPUS.messages


@pytest.mark.benchmark(group="peers-decode-1000")
def test_delimited_decode(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.delimited_decode, CORPUS.stream) == CORPUS.messages


@pytest.mark.benchmark(group="peers-decode-1000")
def test_parse_only(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = OPS
    assert benchmark(peers.parse_only, CORPUS.payloads) == CORPUS.messages
