"""Packed columns: numpy arrays written as packed protobuf fields, and read back into them.

Strategy: a column is checked once (1-D, C-contiguous, aligned, the exact
dtype of its kind: nothing is converted silently) and then walked in place.
Compiled, its varints are sized and written in two passes over the array
with no Python object per element, values below 2**28 assembled in one
32-bit store; a reader counts and checks every varint of a packed field
before it decodes any into a fresh array. Uncompiled, :func:`numpy_varints`
builds the same bytes with vectorised numpy. ``codec.wire``'s
``WireWriter.packed`` and ``WireReader.packed`` are the callers; the rules of
each kind (zigzag, the low 32 bits of int32) are the primitives' and the wire
core's.

This file is Cython pure-Python mode (types in ``_columns.pxd``).
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._varint import Bytes, WritableBytes
from codec._wire import KIND_NAMES, NUMPY_DTYPES
from codec.errors import EncodeError

if not cython.compiled:  # compiled, _columns.pxd cimports these C functions and constants
    from codec._varint import (
        unzigzag,
        varint_scan,
        varint_size,
        varint_value,
        varint_write,
        write_le,
        zigzag,
    )
    from codec._wire import BOOL, INT64, SINT32, SINT64, UINT32, UINT64, varint_length

COMPILED: bool = cython.compiled


# --- writing ------------------------------------------------------------------


def checked_column(field: object, code: int, values: Any, numpy: Any) -> Any:
    """A numpy column ready to be read in place: 1-D, C-contiguous, aligned, exact dtype."""
    kind = KIND_NAMES[code]
    expected = numpy.dtype(NUMPY_DTYPES[code])
    if values.dtype != expected:
        raise EncodeError(
            f"field {field}: a packed {kind} column must have dtype {expected.str} "
            f"({expected.name}), not {values.dtype.str} ({values.dtype.name}); "
            f"convert it with .astype() or pass a sequence"
        )
    if values.ndim != 1:
        raise EncodeError(f"field {field}: a packed {kind} column must be 1-D, not {values.ndim}-D")
    if not (values.flags.c_contiguous and values.flags.aligned):
        values = values.copy()  # a strided or unaligned view: gather it once
    return values


def _column_element(column: Bytes, i: int, code: int) -> int:
    """Compiled only: the varint value of element ``i`` of a checked column of kind ``code``."""
    if cython.compiled:
        if code == UINT64:
            return cython.cast(cython.pointer(uint64_t), column)[i]
        if code == INT64:
            return cython.cast(uint64_t, cython.cast(cython.pointer(int64_t), column)[i])
        if code == SINT64:
            return zigzag(cython.cast(cython.pointer(int64_t), column)[i])
        if code == UINT32:
            return cython.cast(cython.pointer(uint32_t), column)[i]
        if code == BOOL:
            return column[i] != 0
        n32 = cython.cast(cython.pointer(int32_t), column)[i]
        if code == SINT32:
            return zigzag(n32)
        return cython.cast(uint64_t, cython.cast(int64_t, n32))  # int32, enum
    return 0


def column_size(column: Bytes, n: int, code: int) -> int:
    """Compiled only: bytes of the packed varints of a column of ``n`` elements
    (``varint_size`` is inline and has no loop: no call per element)."""
    total = 0
    if cython.compiled:
        for i in range(n):
            total += varint_size(_column_element(column, i, code))
    return total


def write_column(out: WritableBytes, pos: int, column: Bytes, n: int, code: int) -> int:
    """Compiled only: write the packed varints of a column at ``out[pos]``; return the end.

    Values below 2**28 (one to four bytes: ids, deltas, durations up to
    268 ms in nanoseconds) are written without a branch on their size: the
    four bytes are assembled in one 32-bit word, stored at once, and the
    position advances by the varint's length, so the caller leaves three
    bytes of room after the column. Longer values go through ``varint_write``.
    """
    if cython.compiled:
        for i in range(n):
            value = _column_element(column, i, code)
            if value < 0x10000000:
                more1 = value >= 0x80
                more2 = value >= 0x4000
                more3 = value >= 0x200000
                word = (
                    (value & 0x7F)
                    | (more1 << 7)
                    | ((value << 1) & 0x7F00)
                    | (more2 << 15)
                    | ((value << 2) & 0x7F0000)
                    | (more3 << 23)
                    | ((value << 3) & 0x7F000000)
                )
                write_le(out, pos, word, 4)
                pos += 1 + more1 + more2 + more3
            else:
                pos = varint_write(out, pos, value)
    return pos


def numpy_varints(column: Any, code: int, numpy: Any) -> Any:
    """Uncompiled: the packed varints of a checked column, built with vectorised numpy."""
    if code == UINT64:
        values = column
    elif code in (SINT32, SINT64):
        signed = column.astype(numpy.int64)
        values = ((signed << 1) ^ (signed >> 63)).view(numpy.uint64)
    else:  # int32, enum, int64 (sign-extended), uint32, bool
        values = column.astype(numpy.int64).view(numpy.uint64)
    sizes = numpy.ones(len(values), dtype=numpy.intp)
    for k in range(1, 10):
        sizes += values >= numpy.uint64(1 << (7 * k))
    starts = numpy.cumsum(sizes) - sizes
    out = numpy.empty(int(sizes.sum()), dtype=numpy.uint8)
    for k in range(10):
        rows = numpy.flatnonzero(sizes > k)
        if not rows.size:
            break
        chunk = ((values[rows] >> numpy.uint64(7 * k)) & numpy.uint64(0x7F)).astype(numpy.uint8)
        more = (sizes[rows] > k + 1).astype(numpy.uint8) << 7
        out[starts[rows] + k] = chunk | more
    return out


# --- reading ------------------------------------------------------------------


def count_varints(data: Bytes, start: int, end: int, base: int) -> int:
    """Number of varints filling ``data[start:end]`` exactly; raises for a bad one."""
    count = 0
    pos = start
    while pos < end:
        pos += varint_length(data, pos, end, base)
        count += 1
    return count


def decode_varints(data: Bytes, pos: int, end: int, out: Bytes, count: int, code: int) -> None:
    """Compiled only: decode ``count`` checked varints at ``pos`` into a column of kind ``code``."""
    if cython.compiled:
        for i in range(count):
            n = varint_scan(data, pos, end, False)
            value = varint_value(data, pos, n)
            pos += n
            if code in (UINT64, INT64):
                cython.cast(cython.pointer(uint64_t), out)[i] = value
            elif code == SINT64:
                cython.cast(cython.pointer(uint64_t), out)[i] = unzigzag(value)
            elif code == UINT32:
                cython.cast(cython.pointer(uint32_t), out)[i] = cython.cast(uint32_t, value)
            elif code == BOOL:
                out[i] = value != 0
            elif code == SINT32:
                cython.cast(cython.pointer(uint32_t), out)[i] = unzigzag(
                    cython.cast(uint32_t, value)
                )
            else:  # int32, enum: the low 32 bits, as protobuf
                cython.cast(cython.pointer(uint32_t), out)[i] = cython.cast(uint32_t, value)


__all__ = [
    "checked_column",
    "column_size",
    "count_varints",
    "decode_varints",
    "numpy_varints",
    "write_column",
]
