"""Varint encode/decode: ``codec.varint`` against protobuf's pure-Python helpers.

Run from the repository root with ``pytest benches/ --benchmark-only`` (or
``pytest benches/bench_varint.py --benchmark-only``); the ratio table printed
at the end comes from ``conftest.py``.

Groups (baseline in brackets, per ``conftest.py``'s conventions):

* ``varint-encode-{1B,5B,10B}``: ``codec.varint.encode_into`` into a
  preallocated ``bytearray`` and ``codec.varint.encode`` vs
  [``_VarintBytes``], one value per call;
* ``varint-encode-batch1000``: 1000 mixed values (1 to 10 bytes, seeded)
  written back to back with ``encode_into`` into a preallocated buffer vs
  [``bytearray += _VarintBytes(v)``] and ``b"".join(map(_VarintBytes, ...))``;
  times are per value, with the per-call overhead of the harness amortised;
* ``varint-decode-{1B,5B,10B}``: ``codec.varint.decode`` vs [``_DecodeVarint``]
  and ``_DecodeVarint32`` on the same ``bytes``;
* ``varint-decode-batch1000``: the same 1000 values read back to back.

Single-value groups include the harness's own per-call overhead (tens of ns)
in every row, which compresses their ratios; the batch groups show the
per-value cost better.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from google.protobuf.internal.decoder import _DecodeVarint, _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from pytest_benchmark.fixture import BenchmarkFixture

from codec.varint import MAX_LEN, decode, encode, encode_into

# One value of each interesting length: 1 byte, 5 bytes (2**32 - 1, the
# largest uint32) and 10 bytes (2**64 - 1, the largest the protobuf profile takes).
VALUES = {"1B": 1, "5B": 2**32 - 1, "10B": 2**64 - 1}
BATCH = 1000


def _mixed_values(n: int = BATCH, seed: int = 7) -> list[int]:
    """``n`` values whose varint lengths are spread evenly over 1 to 10 bytes."""
    rng = random.Random(seed)
    values = []
    for _ in range(n):
        length = rng.randint(1, MAX_LEN)
        low = 0 if length == 1 else 1 << (7 * (length - 1))
        high = min(1 << (7 * length), 1 << 64)
        values.append(rng.randrange(low, high))
    return values


MIXED = _mixed_values()
MIXED_BYTES = b"".join(map(_VarintBytes, MIXED))


# --- batch loops (each handles BATCH values per call) -----------------------


def codec_encode_batch(values: list[int], out: bytearray) -> int:
    """codec encode_into of each value, back to back into a preallocated buffer."""
    pos = 0
    for value in values:
        pos = encode_into(value, out, pos)
    return pos


def pb_encode_batch(values: list[int]) -> bytearray:
    """protobuf _VarintBytes of each value, appended with bytearray +=."""
    out = bytearray()
    for value in values:
        out += _VarintBytes(value)
    return out


def pb_join_batch(values: list[int]) -> bytes:
    """protobuf _VarintBytes of each value, joined once at the end."""
    return b"".join(map(_VarintBytes, values))


def _decode_batch(read: Callable[[bytes, int], tuple[int, int]], data: bytes) -> int:
    """Read varints back to back with ``read`` until the end; return how many."""
    count = 0
    pos = 0
    end = len(data)
    while pos < end:
        _, pos = read(data, pos)
        count += 1
    return count


# --- encode -----------------------------------------------------------------


@pytest.mark.parametrize("size", VALUES)
def test_pb_varint_bytes(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-encode-{size}"
    benchmark.extra_info["baseline"] = True
    assert benchmark(_VarintBytes, VALUES[size]) == encode(VALUES[size])


@pytest.mark.parametrize("size", VALUES)
def test_codec_encode_into(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-encode-{size}"
    out = bytearray(MAX_LEN)
    end = benchmark(encode_into, VALUES[size], out, 0)
    assert out[:end] == _VarintBytes(VALUES[size])


@pytest.mark.parametrize("size", VALUES)
def test_codec_encode(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-encode-{size}"
    assert benchmark(encode, VALUES[size]) == _VarintBytes(VALUES[size])


@pytest.mark.benchmark(group="varint-encode-batch1000")
def test_pb_varint_bytes_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=BATCH)
    assert benchmark(pb_encode_batch, MIXED) == MIXED_BYTES


@pytest.mark.benchmark(group="varint-encode-batch1000")
def test_pb_varint_bytes_join_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = BATCH
    assert benchmark(pb_join_batch, MIXED) == MIXED_BYTES


@pytest.mark.benchmark(group="varint-encode-batch1000")
def test_codec_encode_into_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = BATCH
    out = bytearray(MAX_LEN * BATCH)
    end = benchmark(codec_encode_batch, MIXED, out)
    assert out[:end] == MIXED_BYTES


# --- decode -----------------------------------------------------------------


@pytest.mark.parametrize("size", VALUES)
def test_pb_decode_varint(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-decode-{size}"
    benchmark.extra_info["baseline"] = True
    data = _VarintBytes(VALUES[size])
    assert benchmark(_DecodeVarint, data, 0) == (VALUES[size], len(data))


@pytest.mark.parametrize("size", VALUES)
def test_pb_decode_varint32(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-decode-{size}"
    data = _VarintBytes(VALUES[size])
    # _DecodeVarint32 keeps only the low 32 bits; it reads the same bytes.
    assert benchmark(_DecodeVarint32, data, 0) == (VALUES[size] & 0xFFFFFFFF, len(data))


@pytest.mark.parametrize("size", VALUES)
def test_codec_decode(benchmark: BenchmarkFixture, size: str) -> None:
    benchmark.group = f"varint-decode-{size}"
    data = _VarintBytes(VALUES[size])
    assert benchmark(decode, data, 0) == (VALUES[size], len(data))


@pytest.mark.benchmark(group="varint-decode-batch1000")
def test_pb_decode_varint_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info.update(baseline=True, ops=BATCH)
    assert benchmark(_decode_batch, _DecodeVarint, MIXED_BYTES) == BATCH


@pytest.mark.benchmark(group="varint-decode-batch1000")
def test_pb_decode_varint32_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = BATCH
    assert benchmark(_decode_batch, _DecodeVarint32, MIXED_BYTES) == BATCH


@pytest.mark.benchmark(group="varint-decode-batch1000")
def test_codec_decode_batch(benchmark: BenchmarkFixture) -> None:
    benchmark.extra_info["ops"] = BATCH
    assert benchmark(_decode_batch, decode, MIXED_BYTES) == BATCH
