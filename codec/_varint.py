"""Primitives: varints, zigzag and little-endian fixed-width values at an offset of a buffer.

Strategy: every check lives in one scanner, :func:`varint_scan`, which every
path (the public functions below, the frame decoder, the wire reader) calls
before it reads a value. It measures the varint at a position and answers
with its length in bytes, ``0`` when the buffer ends first (so incremental
callers wait for more data instead of failing), or a negative status for a
malformed varint, turned into an exception by :func:`varint_error`. It never
raises, so compiled callers can run it as plain C.

Two varint profiles exist:

* ``protobuf`` (default): at most 10 bytes, values below 2**64; a 10th byte
  above 1 is an overflow and is rejected (as Go's protowire does; upb drops
  the extra bits); non-minimal encodings such as ``81 00`` are accepted, as
  the protobuf conformance suite requires.
* ``strict`` (multiformats unsigned-varint, libp2p): at most 9 bytes (values
  below 2**63) and minimal encodings only.

One rule sits on top, in the message decoders (``codec.wire``,
``codec.structs._struct``) and not here: the size of a length-delimited field takes
at most 5 bytes (``codec.wire.MAX_SIZE_BYTES``), as upb reads it. Frame
prefixes follow the profile alone.

This file is Cython pure-Python mode: ``_varint.pxd`` gives the C types, and
the few C-only statements sit behind ``if cython.compiled:``. Uncompiled,
"pointers" are byte-format memoryviews, indexed the same way.
"""

from __future__ import annotations

import operator
import struct
import sys

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec.errors import EncodeError, TruncatedError, VarintError

COMPILED: bool = cython.compiled

# What the C code sees as a byte pointer: uncompiled, any indexable buffer of ints.
Bytes = bytes | bytearray | memoryview
WritableBytes = bytearray | memoryview

MAX_LEN = 10  # protobuf: ceil(64 / 7) bytes
STRICT_MAX_LEN = 9  # multiformats unsigned-varint: 63 bits
if not cython.compiled:  # compiled, C constants of _varint.pxd
    _MAX_LEN = MAX_LEN
    _STRICT_MAX_LEN = STRICT_MAX_LEN
    PY_SSIZE_T_MAX = sys.maxsize
_MAX_OFFSET = sys.maxsize  # larger offsets are past the end of every buffer

# Value ranges, as Python ints (half-open: low <= value < high).
_UINT32 = (0, 2**32)
_INT32 = (-(2**31), 2**31)
_UINT64 = (0, 2**64)
_INT64 = (-(2**63), 2**63)
_UINT63 = (0, 2**63)

if not cython.compiled:  # compiled, _varint.pxd holds these three, inlined where used
    # Negative answers of varint_scan (0 means "incomplete").
    _TOO_LONG = -1
    _OVERFLOW = -2
    _NOT_MINIMAL = -3

    def varint_scan(data: Bytes, pos: int, end: int, strict: bool) -> int:
        """Length of the varint at ``data[pos:end]``, 0 if incomplete, or a negative status."""
        limit = _STRICT_MAX_LEN if strict else _MAX_LEN
        n = 0
        while pos + n < end:
            byte = data[pos + n]
            n += 1
            if byte < 0x80:
                if strict:
                    if byte == 0 and n > 1:
                        return _NOT_MINIMAL
                elif n == _MAX_LEN and byte > 1:
                    return _OVERFLOW
                return n
            if n == limit:
                return _TOO_LONG
        return 0

    def varint_scan_in(data: Bytes, pos: int, end: int, readable: int, strict: bool) -> int:
        """:func:`varint_scan`, where the bytes up to ``readable`` may be read: compiled,
        a varint near ``end`` is measured in loads of 8 and 2 bytes too. The same answer."""
        return varint_scan(data, pos, end, strict)

    def varint_value(data: Bytes, pos: int, n: int) -> int:
        """Value of the ``n``-byte varint at ``pos``, already validated by varint_scan."""
        value = 0
        shift = 0
        for i in range(n):
            value |= (data[pos + i] & 0x7F) << shift
            shift += 7
        return value


def varint_error(status: int, offset: int) -> VarintError:
    """The exception for a negative varint_scan status at ``offset``."""
    if status == _TOO_LONG:
        return VarintError("varint is longer than the profile allows", offset)
    if status == _OVERFLOW:
        return VarintError("varint overflows 64 bits", offset)
    return VarintError("varint is not minimally encoded", offset)


if not cython.compiled:  # compiled, _varint.pxd holds these five, inlined where used

    def varint_size(value: int) -> int:
        """Bytes needed to encode ``value`` (already known to be in range)."""
        n = 1
        while value >= 0x80:
            value >>= 7
            n += 1
        return n

    def varint_write(out: WritableBytes, pos: int, value: int) -> int:
        """Write ``value`` at ``out[pos]`` (room already checked); return the end position."""
        while value >= 0x80:
            out[pos] = (value & 0x7F) | 0x80
            value >>= 7
            pos += 1
        out[pos] = value
        return pos + 1

    # Compiled, a varint of up to 8 bytes is one store, which may write past its end.
    varint_write_padded = varint_write

    def read_le(data: Bytes, pos: int, width: int) -> int:
        """The little-endian ``width``-byte value at ``data[pos]`` (room already checked)."""
        value = 0
        for i in range(width):
            value |= data[pos + i] << (8 * i)
        return value

    def write_le(out: WritableBytes, pos: int, value: int, width: int) -> int:
        """Write ``value`` as ``width`` little-endian bytes at ``out[pos]``; return the end."""
        for i in range(width):
            out[pos + i] = (value >> (8 * i)) & 0xFF
        return pos + width


# --- buffer access ---------------------------------------------------------


def byte_view(buffer: object, writable: bool) -> memoryview:
    """A flat byte-format view of ``buffer``."""
    view = memoryview(buffer)  # type: ignore[arg-type]
    if cython.compiled and is_flat_bytes(view, writable):  # bytes, bytearray: no attribute read
        return view
    if writable and view.readonly:
        raise BufferError("buffer is read-only")
    if not view.c_contiguous:
        raise BufferError("buffer is not contiguous")
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def position(offset: object) -> int:
    """``offset`` as a C-sized index: negative is refused, beyond any buffer is clamped.

    A clamped offset is still past the end of every buffer, so the bounds
    check that follows raises the usual codec error instead of an
    ``OverflowError``.
    """
    number = offset if type(offset) is int else operator.index(offset)  # type: ignore[arg-type]
    if number < 0:
        raise ValueError(f"offset must not be negative, got {number}")
    return number if number <= _MAX_OFFSET else _MAX_OFFSET


def stream_base(base: object, length: int) -> int:
    """``base``, the stream offset of the first of ``length`` bytes, as a C-sized index.

    Every offset in those bytes (and one past them) must fit, so that an
    error's offset is never wrapped: a larger base is a ValueError.
    """
    number = position(base)  # negative refused, beyond any buffer clamped
    limit = PY_SSIZE_T_MAX - length - 1  # _MAX_OFFSET's, in C
    if number > limit:
        raise ValueError(f"base must be at most {limit} for {length} bytes, got {base}")
    return number


def acquire(buffer: object, view: object, flags: int) -> None:
    """Compiled only: ``PyObject_GetBuffer`` with the exporter's complaints as BufferError.

    numpy reports a read-only or non-contiguous array with ``ValueError``; the
    uncompiled build (:func:`byte_view`) raises ``BufferError`` for both.
    """
    if cython.compiled:
        try:
            PyObject_GetBuffer(buffer, view, flags)
        except ValueError as exc:
            raise BufferError(str(exc)) from exc


# --- argument checks -------------------------------------------------------


def _as_int(value: object, what: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise EncodeError(f"{what} must be an integer, not {type(value).__name__}") from None


def _in_range(value: object, bounds: tuple[int, int], what: str) -> int:
    low, high = bounds
    number = _as_int(value, what)
    if number < low or number >= high:
        raise EncodeError(f"{what} {number} is outside [{low}, {high})")
    return number


def _unsigned(value: object, strict: bool) -> int:
    return _in_range(value, _UINT63 if strict else _UINT64, "varint value")


# --- public API ------------------------------------------------------------


def size(value: int, *, strict: bool = False) -> int:
    """Number of bytes of the minimal varint encoding of ``value``."""
    return varint_size(_unsigned(value, strict))


def encode(value: int, *, strict: bool = False) -> bytes:
    """The minimal varint encoding of ``value`` as new ``bytes``."""
    number = _unsigned(value, strict)
    out = bytearray(varint_size(number))
    varint_write(out, 0, number)
    return bytes(out)


def encode_into(value: int, buffer: object, offset: int = 0, *, strict: bool = False) -> int:
    """Write ``value`` as a minimal varint at ``offset`` of a writable buffer.

    Returns the offset just past the varint. Raises :class:`EncodeError` for a
    value outside the profile's range or when the varint does not fit; the
    buffer is then unchanged.
    """
    return _store(_unsigned(value, strict), buffer, offset, 0)


def decode(buffer: object, offset: int = 0, *, strict: bool = False) -> tuple[int, int]:
    """Read the varint at ``offset``; return ``(value, end_offset)``.

    Raises :class:`TruncatedError` when the buffer ends inside the varint and
    :class:`VarintError` when it is malformed for the profile.
    """
    return _load(buffer, offset, 0, strict)


def zigzag_encode(value: int) -> int:
    """Map a signed 64-bit integer to an unsigned one (sint64): 0, -1, 1, -2 -> 0, 1, 2, 3."""
    return zigzag(_in_range(value, _INT64, "sint64 value"))


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode` for an unsigned 64-bit integer."""
    return unzigzag(_in_range(value, _UINT64, "zigzag value"))


def zigzag_encode32(value: int) -> int:
    """Map a signed 32-bit integer to an unsigned one (sint32): sint64's map, on a smaller range."""
    return zigzag(_in_range(value, _INT32, "sint32 value"))


def zigzag_decode32(value: int) -> int:
    """Inverse of :func:`zigzag_encode32`. Like protobuf, only the low 32 bits count."""
    return unzigzag(_in_range(value, _UINT64, "zigzag value") & 0xFFFFFFFF)


# --- fixed-width values ----------------------------------------------------


def _store(value: int, buffer: object, offset: object, width: int) -> int:
    """Write ``value`` at ``offset``: a varint if ``width`` is 0, else ``width`` LE bytes."""
    start = position(offset)
    if cython.compiled:
        acquire(buffer, cython.address(view), PyBUF_WRITABLE)
        try:
            return _store_at(cython.cast(cython.p_uchar, view.buf), view.len, start, value, width)
        finally:
            PyBuffer_Release(cython.address(view))
    with byte_view(buffer, True) as data:
        return _store_at(data, len(data), start, value, width)


def _store_at(out: WritableBytes, length: int, offset: int, value: int, width: int) -> int:
    n = width or varint_size(value)
    if offset > length or n > length - offset:
        raise EncodeError(f"no room for {n} bytes at offset {offset} of a {length}-byte buffer")
    if width:
        return write_le(out, offset, value, width)
    return varint_write(out, offset, value)


def _load(buffer: object, offset: object, width: int, strict: bool) -> tuple[int, int]:
    """Read ``(value, end)`` at ``offset``: a varint if ``width`` is 0, else ``width`` LE bytes."""
    start = position(offset)
    if cython.compiled:
        acquire(buffer, cython.address(view), PyBUF_SIMPLE)
        try:
            return _load_at(cython.cast(cython.p_uchar, view.buf), view.len, start, width, strict)
        finally:
            PyBuffer_Release(cython.address(view))
    with byte_view(buffer, False) as data:
        return _load_at(data, len(data), start, width, strict)


def _load_at(data: Bytes, length: int, offset: int, width: int, strict: bool) -> tuple[int, int]:
    if width:
        if offset > length or width > length - offset:
            raise TruncatedError(
                f"buffer ends inside a {width}-byte value",
                offset,
                missing=width - (length - offset) if offset <= length else width,
            )
        return read_le(data, offset, width), offset + width
    n = varint_scan(data, offset, length, strict)
    if n == 0:
        raise TruncatedError("buffer ends inside a varint", offset)
    if n < 0:
        raise varint_error(n, offset)
    return varint_value(data, offset, n), offset + n


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def encode_fixed32_into(value: int, buffer: object, offset: int = 0) -> int:
    """Write an unsigned 32-bit little-endian value (fixed32); return the end offset."""
    number = _in_range(value, _UINT32, "fixed32 value")
    return _store(number, buffer, offset, 4)


def encode_fixed64_into(value: int, buffer: object, offset: int = 0) -> int:
    """Write an unsigned 64-bit little-endian value (fixed64); return the end offset."""
    number = _in_range(value, _UINT64, "fixed64 value")
    return _store(number, buffer, offset, 8)


def encode_sfixed32_into(value: int, buffer: object, offset: int = 0) -> int:
    """Write a signed 32-bit little-endian value (sfixed32); return the end offset."""
    number = _in_range(value, _INT32, "sfixed32 value")
    return _store(number & 0xFFFFFFFF, buffer, offset, 4)


def encode_sfixed64_into(value: int, buffer: object, offset: int = 0) -> int:
    """Write a signed 64-bit little-endian value (sfixed64); return the end offset."""
    number = _in_range(value, _INT64, "sfixed64 value")
    return _store(number & 0xFFFFFFFFFFFFFFFF, buffer, offset, 8)


def decode_fixed32(buffer: object, offset: int = 0) -> tuple[int, int]:
    """Read a fixed32 at ``offset``; return ``(value, end_offset)``."""
    return _load(buffer, offset, 4, False)


def decode_fixed64(buffer: object, offset: int = 0) -> tuple[int, int]:
    """Read a fixed64 at ``offset``; return ``(value, end_offset)``."""
    return _load(buffer, offset, 8, False)


def decode_sfixed32(buffer: object, offset: int = 0) -> tuple[int, int]:
    """Read an sfixed32 at ``offset``; return ``(value, end_offset)``."""
    value, end = _load(buffer, offset, 4, False)
    return _signed(value, 32), end


def decode_sfixed64(buffer: object, offset: int = 0) -> tuple[int, int]:
    """Read an sfixed64 at ``offset``; return ``(value, end_offset)``."""
    value, end = _load(buffer, offset, 8, False)
    return _signed(value, 64), end


if not cython.compiled:  # compiled, _varint.pxd holds these seven, inlined where used

    def float32_bits(value: float) -> int:
        """IEEE binary32 bits of ``value`` rounded to single precision (overflow gives inf).

        A NaN keeps its sign and the high bits of its payload, a signaling one too.
        """
        if value != value:
            wide = float64_bits(value)
            bits = (wide >> 32 & 0x80000000) | 0x7F800000 | (wide >> 29 & 0x7FFFFF)
            return bits if bits & 0x7FFFFF else bits | 0x400000
        try:
            return struct.unpack("<I", struct.pack("<f", value))[0]  # type: ignore[no-any-return]
        except OverflowError:  # finite but beyond float32: round to infinity, as C does
            return 0xFF800000 if value < 0 else 0x7F800000

    def float64_bits(value: float) -> int:
        """IEEE binary64 bits of ``value``."""
        return struct.unpack("<Q", struct.pack("<d", value))[0]  # type: ignore[no-any-return]

    def bits_float32(bits: int) -> float:
        """The binary32 value of the low 32 bits of ``bits`` (a NaN's payload kept, bit for bit)."""
        low = bits & 0xFFFFFFFF
        if low & 0x7F800000 == 0x7F800000 and low & 0x7FFFFF:
            return bits_float64((low & 0x80000000) << 32 | 0x7FF << 52 | (low & 0x7FFFFF) << 29)
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]  # type: ignore[no-any-return]

    def bits_float64(bits: int) -> float:
        """The binary64 value of ``bits``."""
        return struct.unpack("<d", struct.pack("<Q", bits))[0]  # type: ignore[no-any-return]

    def twos_complement(number: int) -> int:
        """The 64-bit pattern of a signed 64-bit integer (int32's too: 10 bytes if negative)."""
        return number & 0xFFFFFFFFFFFFFFFF

    def zigzag(number: int) -> int:
        """ZigZag of a signed 64-bit integer: 0, -1, 1, -2 -> 0, 1, 2, 3 (sint32's too)."""
        return ((number << 1) ^ (number >> 63)) & 0xFFFFFFFFFFFFFFFF

    def unzigzag(value: int) -> int:
        """Inverse of :func:`zigzag` for an unsigned 64-bit integer."""
        return (value >> 1) ^ -(value & 1)


def _as_float(value: object) -> float:
    # float() would also parse strings; only numbers are accepted.
    if not (hasattr(type(value), "__float__") or hasattr(type(value), "__index__")):
        raise EncodeError(f"expected a real number, not {type(value).__name__}")
    return float(value)  # type: ignore[arg-type]


def encode_float_into(value: float, buffer: object, offset: int = 0) -> int:
    """Write a little-endian IEEE binary32 value (float); return the end offset."""
    return _store(float32_bits(_as_float(value)), buffer, offset, 4)


def encode_double_into(value: float, buffer: object, offset: int = 0) -> int:
    """Write a little-endian IEEE binary64 value (double); return the end offset."""
    return _store(float64_bits(_as_float(value)), buffer, offset, 8)


def decode_float(buffer: object, offset: int = 0) -> tuple[float, int]:
    """Read a little-endian binary32 at ``offset``; return ``(value, end_offset)``."""
    bits, end = _load(buffer, offset, 4, False)
    return bits_float32(bits), end


def decode_double(buffer: object, offset: int = 0) -> tuple[float, int]:
    """Read a little-endian binary64 at ``offset``; return ``(value, end_offset)``."""
    bits, end = _load(buffer, offset, 8, False)
    return bits_float64(bits), end
