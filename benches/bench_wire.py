"""Packed columns from numpy: ``WireWriter.packed`` against upb, in one run.

Run from the repository root with ``pytest benches/bench_wire.py --benchmark-only``
(or all of ``benches/``); the ratio table printed at the end comes from
``conftest.py``.

Each group writes one packed repeated field of 1,000,000 elements from a
numpy column (times are per element, ``extra_info["ops"]``):

* ``wire-packed-{fixed64,double}-1M``: one ``memcpy`` of the 8 MB column;
  target (DESIGN) >= 1 GB/s;
* ``wire-packed-{uint64,sint64}-1M``: the compiled varint loop; target
  >= 200 MB/s.

Baseline [``upb_assign_serialize``]: a google.protobuf (upb) message whose
repeated field is assigned from the array, then ``SerializeToString()``,
which is what a pb2 user has to do. ``upb_serialize_only`` times the
serialization of a message already filled, the floor of that path. Every
codec result is checked against upb's bytes outside the timed call.

Throughput is recorded in ``extra_info`` as ``input_MB_per_s`` (the column's
8 MB over the mean time) and ``output_MB_per_s`` (bytes written); pytest-
benchmark prints them with ``--benchmark-columns`` or in ``--benchmark-json``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from pytest_benchmark.fixture import BenchmarkFixture

import codec
from codec.wire import WireWriter

N = 1_000_000
_F = descriptor_pb2.FieldDescriptorProto

# kind: (field number, field type)
FIELDS = {
    "fixed64": (1, _F.TYPE_FIXED64),
    "double": (2, _F.TYPE_DOUBLE),
    "uint64": (3, _F.TYPE_UINT64),
    "sint64": (4, _F.TYPE_SINT64),
}


def _columns_class() -> Any:
    """A proto3 ``Columns`` message with one packed repeated field per kind."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="bench_wire.proto", package="benchwire", syntax="proto3"
    )
    message = proto.message_type.add(name="Columns")
    for kind, (number, type_) in FIELDS.items():
        message.field.add(name=kind, number=number, type=type_, label=_F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("benchwire.Columns"))


Columns = _columns_class()


def _column(kind: str, seed: int = 11) -> Any:
    """A seeded 1M-element column, with values like a profiler's (timestamps, deltas)."""
    rng = np.random.default_rng(seed)
    if kind == "fixed64":
        return np.cumsum(rng.integers(1_000, 5_000_000, N, dtype=np.uint64)) + np.uint64(
            1_700_000_000_000_000_000
        )
    if kind == "double":
        return rng.standard_normal(N) * 1e3
    if kind == "uint64":  # nanosecond durations: 2 to 5-byte varints
        return rng.integers(100, 2**32, N, dtype=np.uint64)
    return rng.integers(-(2**31), 2**31, N, dtype=np.int64)  # sint64 deltas


COLUMNS = {kind: _column(kind) for kind in FIELDS}


def codec_packed(writer: WireWriter, kind: str, column: Any) -> WireWriter:
    """WireWriter.packed of one column into a warm, cleared buffer."""
    writer.buffer.clear()
    writer.packed(FIELDS[kind][0], kind, column)
    return writer


def upb_assign_serialize(kind: str, column: Any) -> bytes:
    """A fresh upb message, the repeated field assigned from the array, then serialized."""
    message = Columns()
    getattr(message, kind)[:] = column
    return message.SerializeToString()  # type: ignore[no-any-return]


def upb_serialize_only(message: Any) -> bytes:
    """SerializeToString() of a message already holding the column."""
    return message.SerializeToString()  # type: ignore[no-any-return]


def _record_throughput(benchmark: BenchmarkFixture, column: Any, written: int) -> None:
    mean = benchmark.stats.stats.mean
    benchmark.extra_info["input_MB_per_s"] = round(column.nbytes / mean / 1e6, 1)
    benchmark.extra_info["output_MB_per_s"] = round(written / mean / 1e6, 1)


def _expected(kind: str) -> bytes:
    return upb_assign_serialize(kind, COLUMNS[kind])


@pytest.mark.parametrize("kind", list(FIELDS))
def test_codec_packed(benchmark: BenchmarkFixture, kind: str) -> None:
    benchmark.group = f"wire-packed-{kind}-1M"
    benchmark.extra_info["ops"] = N
    column = COLUMNS[kind]
    writer = WireWriter()
    benchmark(codec_packed, writer, kind, column)
    with writer.buffer.getbuffer() as view:
        assert view == _expected(kind)
        _record_throughput(benchmark, column, len(view))


@pytest.mark.parametrize("kind", list(FIELDS))
def test_upb_assign_serialize(benchmark: BenchmarkFixture, kind: str) -> None:
    benchmark.group = f"wire-packed-{kind}-1M"
    benchmark.extra_info.update(baseline=True, ops=N)
    column = COLUMNS[kind]
    result = benchmark(upb_assign_serialize, kind, column)
    _record_throughput(benchmark, column, len(result))


@pytest.mark.parametrize("kind", list(FIELDS))
def test_upb_serialize_only(benchmark: BenchmarkFixture, kind: str) -> None:
    benchmark.group = f"wire-packed-{kind}-1M"
    benchmark.extra_info["ops"] = N
    column = COLUMNS[kind]
    message = Columns()
    getattr(message, kind)[:] = column
    result = benchmark(upb_serialize_only, message)
    assert result == _expected(kind)
    _record_throughput(benchmark, column, len(result))


def test_build_is_compiled() -> None:
    """The targets are for the compiled build; say so when it is not loaded."""
    if not codec.COMPILED:
        pytest.skip("pure-Python build: packed throughput is not what the targets mean")
