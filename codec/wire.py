"""Wire: protobuf fields written straight into reusable buffers, and read back without copying.

Strategy, writing: :class:`WireWriter` appends tag + value to the
``bytearray`` of a :class:`~codec._buffer.WriteBuffer` (a ``FrameEncoder`` is
one). Every value is checked before a byte of its field is written, so a
refused value leaves the buffer as it was, and a field written in several
steps (a packed run from a sequence, a nested message, a frame) is rolled
back as a whole. The storage is taken again after every resize, never held
across one. Each write claims the buffer for its duration (a flag on the
buffer, see ``codec._buffer``), and an open nested message or frame is
counted on it, so a write made meanwhile, from another thread or from a
value's ``__index__``, raises :class:`RuntimeError` instead of landing inside
another field.

Nested messages and frames reserve one byte for their length and write the
body after it; on exit the length goes into that byte, and a body of 128
bytes or more is first moved right to make room for a longer prefix
(protobuf.js v8's reserve-and-backpatch), so the output is canonical without
measuring anything first.

Packed columns from numpy: a fixed-width column of the kind's little-endian
dtype is copied with one ``memcpy``; a varint column is measured, then
written, by a C loop over the array's memory (compiled) or by vectorised
numpy (uncompiled). Python sequences are checked and written element by
element.

Strategy, reading: :class:`WireReader` iterates ``(field, wire_type, value)``
over any contiguous buffer, with LEN values and group bodies as zero-copy
``memoryview`` slices. Every length is compared with the bytes left before it
is used, and its varint may take at most 5 bytes (upb's rule; padded ones
included); nothing is reserved from a declared length, and groups are skipped
by a loop with a depth counter and a stack of open field numbers, never by
recursion. Errors are :class:`~codec.errors.DecodeError` subclasses whose
``offset`` counts from the start of the buffer the outermost reader was
built on: a bad tag is reported at the tag, a malformed or truncated varint
at its first byte, a truncated fixed-width value where it starts, a LEN value
running past the end or whose size takes more than 5 bytes at its size, a
group never closed at its start tag, and a group nested too deep at its
start tag.

This file is Cython pure-Python mode: ``wire.pxd`` gives the C types, and the
C-only statements sit behind ``if cython.compiled:``.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from types import TracebackType
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._buffer import WriteBuffer, not_copied
from codec._columns import numpy_varints
from codec._introspection import InitSignature
from codec._varint import Bytes, byte_view
from codec._wire import (
    DEFAULT_MAX_DEPTH,
    LONE_SURROGATE,
    NUMPY_DTYPES,
    checked_count,
)

if not cython.compiled:  # compiled, wire.pxd cimports these C functions and constants
    from codec._buffer import (
        byte_pointer,
        close_region,
        copy_bytes,
        cut_to,
        open_region,
        release_claim,
        set_end,
        uninitialised,
    )
    from codec._columns import (
        checked_column,
        column_size,
        count_varints,
        decode_varints,
        write_column,
    )
    from codec._varint import (
        read_le,
        varint_scan,
        varint_size,
        varint_value,
        varint_write,
        write_le,
    )
    from codec._wire import (
        BOOL,
        DOUBLE,
        ENUM,
        FIXED32,
        FIXED64,
        FLOAT,
        INT32,
        INT64,
        MAX_PREFIX_BYTES,
        SFIXED32,
        SFIXED64,
        SINT32,
        SINT64,
        UINT32,
        UINT64,
        fixed_end,
        kind_width,
        length_end,
        natural_wire_type,
        packed_width,
        read_tag,
        scalar_bits,
        scalar_kind,
        skip_group,
        stray_end_group,
        varint_length,
        varint_value_of,
    )
    from codec._wire import EGROUP as _EGROUP
    from codec._wire import I32 as _I32
    from codec._wire import I64 as _I64
    from codec._wire import LEN as _LEN
    from codec._wire import MAX_FIELD_NUMBER as _MAX_FIELD_NUMBER
    from codec._wire import SGROUP as _SGROUP
    from codec._wire import VARINT as _VARINT
from codec.errors import (
    DepthLimitError,
    EncodeError,
    FrameTooLargeError,
)

COMPILED: bool = cython.compiled

# Wire types (the low 3 bits of a tag), from the wire core.
VARINT: int = _VARINT  # int32, int64, uint32, uint64, sint32, sint64, bool, enum
I64: int = _I64  # fixed64, sfixed64, double
LEN: int = _LEN  # string, bytes, messages, packed repeated fields
SGROUP: int = _SGROUP  # start of a group (proto2, deprecated)
EGROUP: int = _EGROUP  # end of a group
I32: int = _I32  # fixed32, sfixed32, float

MAX_FIELD_NUMBER: int = _MAX_FIELD_NUMBER  # a tag is field << 3 | wire type, below 2**32
# The size of a length-delimited value takes at most 5 bytes (non-minimal ones
# included), as upb reads it: no writer pads a size further (protozero pads to 4),
# and 5 bytes hold every size a message can have.
MAX_SIZE_BYTES: int = MAX_PREFIX_BYTES


def _numpy() -> Any:
    """numpy, imported on first use (``import codec`` does not need it)."""
    import numpy

    return numpy


# --- values ------------------------------------------------------------------


def _index(value: object) -> int:
    """``operator.index(value)`` (the C-API call, compiled)."""
    if cython.compiled:
        return PyNumber_Index(value)
    return operator.index(value)  # type: ignore[arg-type]


def _field_number(field: object) -> int:
    """``field`` as a valid field number, or EncodeError."""
    try:
        number = _index(field)  # compiled: a C integer, OverflowError far out of range
    except TypeError:
        raise EncodeError(f"field number must be an integer, not {type(field).__name__}") from None
    except OverflowError:
        number = 0
    if number < 1 or number > _MAX_FIELD_NUMBER:
        raise EncodeError(f"field number {_index(field)} is outside [1, {MAX_FIELD_NUMBER}]")
    return number


def _tag_of(field: object, wire_type: int) -> int:
    """The tag of ``field`` with ``wire_type`` (never 0)."""
    return (_field_number(field) << 3) | wire_type


def _kind_code(field: object, kind: object) -> int:
    """The code of a scalar kind named ``kind`` (the kinds a packed field may have)."""
    code = scalar_kind(kind)
    if code < 0:
        raise EncodeError(f"field {field}: unknown packed kind {kind!r}")
    return code


def _shift_right(data: bytearray, start: int, size: int, by: int) -> None:
    """Move ``data[start:start + size]`` ``by`` bytes to the right (room already made)."""
    if cython.compiled:
        memmove(data + start + by, data + start, size)
        return
    with memoryview(data) as view:
        view[start + by : start + by + size] = view[start : start + size]


# --- writer ------------------------------------------------------------------


class WireWriter:
    """Writes protobuf fields (tag + value) into a reusable buffer.

    ``WireWriter(buffer)`` appends to a :class:`~codec._buffer.WriteBuffer`
    (a :class:`~codec.FrameEncoder` is one); without one it makes its own,
    exposed as :attr:`buffer` (``bytes(writer.buffer.getbuffer())`` holds the
    output). Each method takes a field number and a value and writes both.
    A value out of range or of the wrong type raises
    :class:`~codec.errors.EncodeError` naming the field, and nothing of that
    field is written. Like the buffer itself, the writer refuses to grow it
    while a view from ``getbuffer()`` is alive (:class:`BufferError`).

    Integer kinds follow protobuf: ``int32``/``int64``/``enum`` write negative
    values as 10-byte two's complement varints, ``sint32``/``sint64`` use
    ZigZag, ``fixed*``/``sfixed*``/``float``/``double`` are little-endian.

    A field is written whole or not at all: a write to the same buffer while
    one is under way (from another thread, or from Python code the first runs,
    such as a packed value's ``__index__``) raises :class:`RuntimeError`, as
    :meth:`codec.FrameEncoder.clear` and whole frames do while a nested
    message or frame is open. The writer is not thread-safe: this only turns
    misuse into an error.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self, buffer: WriteBuffer | None = None) -> None:
        """Write into ``buffer``, or into a new WriteBuffer."""
        if self.buffer is not None:
            raise RuntimeError("WireWriter is already initialised")
        if buffer is None:
            buffer = WriteBuffer()
        elif not isinstance(buffer, WriteBuffer):
            raise TypeError(f"buffer must be a WriteBuffer, not {type(buffer).__name__}")
        self.buffer: WriteBuffer = buffer

    def __reduce__(self) -> Any:
        raise not_copied(self)

    # --- scalars ----------------------------------------------------------

    def varint(self, field: int, value: int) -> None:
        """A raw varint: any value in [0, 2**64) (uint64 semantics)."""
        self._put_scalar(field, UINT64, value)

    def int32(self, field: int, value: int) -> None:
        """An int32 in [-2**31, 2**31); negative values take 10 bytes."""
        self._put_scalar(field, INT32, value)

    def int64(self, field: int, value: int) -> None:
        """An int64 in [-2**63, 2**63); negative values take 10 bytes."""
        self._put_scalar(field, INT64, value)

    def uint32(self, field: int, value: int) -> None:
        """A uint32 in [0, 2**32)."""
        self._put_scalar(field, UINT32, value)

    def uint64(self, field: int, value: int) -> None:
        """A uint64 in [0, 2**64)."""
        self._put_scalar(field, UINT64, value)

    def sint32(self, field: int, value: int) -> None:
        """A sint32 in [-2**31, 2**31), ZigZag-encoded."""
        self._put_scalar(field, SINT32, value)

    def sint64(self, field: int, value: int) -> None:
        """A sint64 in [-2**63, 2**63), ZigZag-encoded."""
        self._put_scalar(field, SINT64, value)

    def enum(self, field: int, value: int) -> None:
        """An enum value (int32 semantics)."""
        self._put_scalar(field, ENUM, value)

    def fixed32(self, field: int, value: int) -> None:
        """A fixed32 in [0, 2**32), 4 bytes little-endian."""
        self._put_scalar(field, FIXED32, value)

    def fixed64(self, field: int, value: int) -> None:
        """A fixed64 in [0, 2**64), 8 bytes little-endian."""
        self._put_scalar(field, FIXED64, value)

    def sfixed32(self, field: int, value: int) -> None:
        """An sfixed32 in [-2**31, 2**31), 4 bytes little-endian two's complement."""
        self._put_scalar(field, SFIXED32, value)

    def sfixed64(self, field: int, value: int) -> None:
        """An sfixed64 in [-2**63, 2**63), 8 bytes little-endian two's complement."""
        self._put_scalar(field, SFIXED64, value)

    def double(self, field: int, value: float) -> None:
        """A double: IEEE binary64, little-endian."""
        self._put_scalar(field, DOUBLE, value)

    # --- length-delimited -------------------------------------------------

    def string(self, field: int, text: str) -> None:
        """A string field: the UTF-8 bytes of ``text``.

        Compiled, the bytes are copied straight from the ``str`` (CPython
        keeps an ASCII string's UTF-8 form in place and caches any other's).
        A ``str`` with lone surrogates raises EncodeError.
        """
        self._put_text(field, _tag_of(field, _LEN), text)

    def tag(self, field: int, wire_type: int) -> None:
        """A bare tag, for hand-written encoders (follow it with :meth:`raw`)."""
        if not isinstance(wire_type, int) or not 0 <= wire_type <= 5:
            raise EncodeError(f"field {field}: wire type must be in [0, 5], not {wire_type!r}")
        tag = _tag_of(field, wire_type)
        buffer = _claimed(self, False)
        try:
            pos = self.buffer._room(varint_size(tag))
            set_end(buffer, varint_write(byte_pointer(buffer._data), pos, tag))
        finally:
            release_claim(buffer)

    def raw(self, data: Any) -> None:
        """Bytes as they are (any contiguous buffer), for hand-written encoders."""
        self._put_buffer(None, 0, data)

    def message(self, field: int) -> Delimited:
        """A nested message: ``with writer.message(3): writer.uint32(1, x)``.

        Entering writes the tag and reserves one byte for the length; the
        block writes the body with this writer (``as`` gives it back). On
        exit the minimal length is back-patched (the body moves right when
        the length needs more than one byte). An exception inside the block
        removes the whole field.
        """
        return _region(self, _tag_of(field, _LEN), sys.maxsize)

    def packed(self, field: int, kind: str, values: Any) -> None:
        """A packed repeated field of ``kind`` ("int32", ..., "double") from ``values``.

        ``values`` is a numpy array of the kind's dtype (``int32`` for
        int32/sint32/enum, ``int64`` for int64/sint64, ``uint32``, ``uint64``,
        ``bool``, and little-endian ``<u4 <i4 <f4 <u8 <i8 <f8`` for
        fixed32/sfixed32/float/fixed64/sfixed64/double; any other dtype raises
        EncodeError), or any iterable of Python numbers, checked one by one.
        A fixed-width column is copied with one ``memcpy``; a varint column is
        encoded by a compiled loop without making Python objects. No values:
        nothing is written (proto3).
        """
        code = _kind_code(field, kind)
        tag = _tag_of(field, _LEN)
        numpy = sys.modules.get("numpy")
        if numpy is None or not isinstance(values, numpy.ndarray):
            self._put_sequence(field, tag, code, values)
            return
        column = checked_column(field, code, values, numpy)
        if len(column) == 0:
            return  # proto3: an empty packed field is not written
        if kind_width(code):
            self._put_buffer(field, tag, column)  # one memcpy
        else:
            self._put_varints(tag, column, code, numpy)

    def bytes(self, field: int, data: Any) -> None:
        """A bytes field from any contiguous buffer, copied once."""
        self._put_buffer(field, _tag_of(field, _LEN), data)

    def float(self, field: int, value: float) -> None:
        """A float: IEEE binary32, little-endian (values beyond its range become infinities)."""
        self._put_scalar(field, FLOAT, value)

    def bool(self, field: int, value: object) -> None:
        """A bool: 1 for true (any non-zero integer), 0 for false."""
        self._put_scalar(field, BOOL, value)

    # --- internals ----------------------------------------------------------

    def _put_scalar(self, field: object, code: int, value: object) -> None:
        tag = _tag_of(field, natural_wire_type(code))
        bits = scalar_bits(field, code, value)  # may run Python code: before the claim
        width = kind_width(code)
        buffer = _claimed(self, False)
        try:
            pos = self.buffer._room(varint_size(tag) + (width or varint_size(bits)))
            out = byte_pointer(buffer._data)
            pos = varint_write(out, pos, tag)
            pos = write_le(out, pos, bits, width) if width else varint_write(out, pos, bits)
            set_end(buffer, pos)
        finally:
            release_claim(buffer)

    def _put_len(self, tag: int, source: Bytes, size: int) -> None:
        """Write ``tag`` and ``varint(size)`` (neither if ``tag`` is 0), then ``size`` bytes."""
        buffer = _claimed(self, False)
        try:
            pos = self.buffer._room((varint_size(tag) + varint_size(size) if tag else 0) + size)
            out = byte_pointer(buffer._data)
            if tag:
                pos = varint_write(out, pos, tag)
                pos = varint_write(out, pos, size)
            copy_bytes(out, pos, source, size)
            set_end(buffer, pos + size)
        finally:
            release_claim(buffer)

    def _put_text(self, field: object, tag: int, text: object) -> None:
        """:meth:`_put_len` of the UTF-8 bytes of a ``str``."""
        if not isinstance(text, str):
            raise EncodeError(
                f"field {field}: string value must be a str, not {type(text).__name__}"
            )
        if cython.compiled:
            data = utf8_or_null(text, cython.address(size))
            if data == cython.NULL:
                PyErr_Clear()
                raise EncodeError(f"field {field}: {LONE_SURROGATE}")
            self._put_len(tag, cython.cast(cython.p_uchar, data), size)
        else:
            try:
                encoded = text.encode()  # the uncompiled build makes one temporary
            except UnicodeEncodeError:
                raise EncodeError(f"field {field}: {LONE_SURROGATE}") from None
            self._put_len(tag, memoryview(encoded), len(encoded))

    def _put_buffer(self, field: object, tag: int, data: object) -> None:
        """:meth:`_put_len` from any contiguous buffer; a bad one raises EncodeError."""
        what = "raw data" if field is None else f"field {field}"
        if cython.compiled:
            try:
                acquire(data, cython.address(view), PyBUF_SIMPLE)
            except (TypeError, BufferError) as exc:
                raise EncodeError(f"{what}: expected a contiguous buffer: {exc}") from None
            try:
                self._put_len(tag, cython.cast(cython.p_uchar, view.buf), view.len)
            finally:
                PyBuffer_Release(cython.address(view))
        else:
            try:
                source = byte_view(data, False)
            except (TypeError, BufferError) as exc:
                raise EncodeError(f"{what}: expected a contiguous buffer: {exc}") from None
            with source:
                self._put_len(tag, source, len(source))

    def _put_varints(self, tag: int, column: Any, code: int, numpy: Any) -> None:
        """A packed varint field from a checked, non-empty numpy column.

        Compiled: measured, then written, by C loops over the array's memory.
        """
        if cython.compiled:
            n = len(column)
            acquire(column, cython.address(view), PyBUF_SIMPLE)
            try:
                elements = cython.cast(cython.p_uchar, view.buf)
                size = column_size(elements, n, code)
                buffer = _claimed(self, False)
                try:
                    # write_column may store up to three bytes past the end
                    pos = self.buffer._room(varint_size(tag) + varint_size(size) + size + 3)
                    out = byte_pointer(buffer._data)
                    pos = varint_write(out, pos, tag)
                    pos = varint_write(out, pos, size)
                    set_end(buffer, write_column(out, pos, elements, n, code))
                finally:
                    release_claim(buffer)
            finally:
                PyBuffer_Release(cython.address(view))
        else:
            encoded = numpy_varints(column, code, numpy)
            self._put_len(tag, memoryview(encoded), len(encoded))

    def _put_sequence(self, field: object, tag: int, code: int, values: Any) -> None:
        """A packed field from an iterable, checked element by element, rolled back on error."""
        try:
            items = iter(values)
        except TypeError:
            raise EncodeError(
                f"field {field}: packed values must be a numpy array or an iterable, "
                f"not {type(values).__name__}"
            ) from None
        buffer = _claimed(self, False)  # held while iterating: the values run Python code
        try:
            start = buffer._length
            body = self._reserve_length(tag)
            width = kind_width(code)
            count = 0
            try:
                for value in items:
                    bits = scalar_bits(field, code, value)
                    pos = self.buffer._room(width or varint_size(bits))
                    out = byte_pointer(buffer._data)
                    if width:
                        set_end(buffer, write_le(out, pos, bits, width))
                    else:
                        set_end(buffer, varint_write(out, pos, bits))
                    count += 1
            except BaseException:
                self._rollback(start)
                raise
            if count:
                self._patch_length(start, body, sys.maxsize)
            else:
                self._rollback(start)  # proto3: an empty packed field is not written
        finally:
            release_claim(buffer)

    def _reserve_length(self, tag: int) -> int:
        """Write ``tag`` (none if 0) and one reserved length byte; return where the body goes."""
        pos = self.buffer._room((varint_size(tag) if tag else 0) + 1)
        out = byte_pointer(self.buffer._data)
        if tag:
            pos = varint_write(out, pos, tag)
        out[pos] = 0
        set_end(self.buffer, pos + 1)
        return pos + 1

    def _patch_length(self, start: int, body: int, limit: int) -> int:
        """Back-patch the length of the body since :meth:`_reserve_length`; return the length.

        ``start`` is where the field began: a body over ``limit`` bytes, or a
        failure to make room for a longer prefix, removes the field.
        """
        buffer = self.buffer
        end = buffer._length  # never below body: clear() refuses while a region is open
        size = end - body
        if size > limit:
            self._rollback(start)
            raise FrameTooLargeError(size, limit)
        extra = varint_size(size) - 1
        if extra:
            try:
                self.buffer._room(extra)
            except BaseException:
                self._rollback(start)
                raise
            _shift_right(byte_pointer(buffer._data), body, size, extra)
            set_end(buffer, end + extra)
        varint_write(byte_pointer(buffer._data), body - 1, size)
        return size

    def _rollback(self, start: int) -> None:
        """Forget everything written after ``start``."""
        cut_to(self.buffer, start)


class Delimited:
    """A length-delimited region being written: a nested message, or a frame.

    Returned by :meth:`WireWriter.message` and :meth:`codec.FrameEncoder.frame`;
    use it once, in a ``with`` statement, which gives the writer. While it is
    open it is counted on the buffer, which then refuses ``clear()``,
    ``getbuffer()`` and whole frames (:class:`RuntimeError`).
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self, writer: WireWriter, tag: int, limit: int) -> None:
        """A region of ``writer``'s buffer: field ``tag`` (0: a frame), of at most ``limit``."""
        self._writer = writer
        self._tag = tag  # 0 for a frame, which has no tag
        self._limit = limit
        self._start = 0  # where the region begins, while it is open
        self._body = 0  # where its body begins while it is open (never 0), else 0

    def __enter__(self) -> WireWriter:
        writer = self._writer
        if writer is None:
            raise RuntimeError(
                "Delimited is not initialised: WireWriter.message() and "
                "FrameEncoder.frame() make them"
            )
        if self._body:
            raise RuntimeError("this nested message or frame is already open")
        buffer = _claimed(writer, self._tag == 0)  # a frame starts between frames only
        try:
            self._start = buffer._length
            self._body = writer._reserve_length(self._tag)
            open_region(buffer)
        finally:
            release_claim(buffer)
        return writer

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._body:
            raise RuntimeError("this nested message or frame is not open")
        writer = self._writer
        buffer = _claimed(writer, False)
        body = self._body
        self._body = 0
        try:
            if exc_type is None:
                writer._patch_length(self._start, body, self._limit)
            else:
                writer._rollback(self._start)  # and the exception goes on
        finally:
            close_region(buffer)
            release_claim(buffer)


def _claimed(writer: WireWriter, whole: bool) -> WriteBuffer:
    """The writer's buffer, claimed for one write (release: ``release_claim(buffer)``)."""
    buffer = writer.buffer
    if buffer is None:
        raise uninitialised(writer)
    buffer._claim(whole)
    return buffer


def _region(writer: WireWriter, tag: int, limit: int) -> Delimited:
    """A new :class:`Delimited`, without the cost of ``__init__``'s argument parsing."""
    region = Delimited.__new__(Delimited)
    region._writer = writer
    region._tag = tag
    region._limit = limit
    return region


def open_frame(buffer: WriteBuffer, limit: int) -> Delimited:
    """A frame of at most ``limit`` payload bytes, written into ``buffer`` (for FrameEncoder)."""
    writer = WireWriter.__new__(WireWriter)
    writer.buffer = buffer
    return _region(writer, 0, limit)


# --- reader ------------------------------------------------------------------


class WireReader:
    """Iterates the fields of a protobuf message: ``(field_number, wire_type, value)``.

    ``buffer`` is any contiguous buffer (``bytes``, ``bytearray``,
    ``memoryview``, numpy ``uint8`` array); it cannot be resized while the
    reader or a value from it is alive. ``value`` is the raw unsigned integer
    for VARINT, I64 and I32 fields, and a zero-copy ``memoryview`` of the
    bytes for LEN fields and for a group's body (wire type SGROUP; its
    EGROUP tag is consumed). Wire types are not checked against any schema.

    Errors (each with the offset where it happened, from the start of the
    outermost reader's buffer): :class:`~codec.errors.WireFormatError` for
    field 0, a tag over 5 bytes or over 2**32 - 1, wire type 6 or 7, a LEN
    size over 5 bytes (``MAX_SIZE_BYTES``, as upb), an end of group without a
    start or for another field; :class:`TruncatedError`
    for a value or a group running past the end;
    :class:`~codec.errors.VarintError` for a malformed varint;
    :class:`DepthLimitError` for groups or messages nested deeper than
    ``max_depth`` (a reader's top level is depth 0). Iterating again after an
    error raises it again.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self, buffer: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        """Read the fields of ``buffer``, from its start."""
        max_depth = checked_count("max_depth", max_depth)
        self._view = byte_view(buffer, False)
        self._pos = 0
        self._end = len(self._view)
        self._base = 0  # offset of _view[0] in the outermost buffer
        self._depth = 0
        self._max_depth = max_depth

    def __reduce__(self) -> Any:
        raise not_copied(self)

    @property
    def offset(self) -> int:
        """Offset of the next field, from the start of the outermost buffer."""
        return self._base + self._pos

    @property
    def depth(self) -> int:
        """Nesting depth of this reader's message: 0 at the top, 1 for :meth:`nested`, ..."""
        return self._depth

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        return self

    def __next__(self) -> tuple[int, int, Any]:
        field = self._next_field()
        if field is None:
            raise StopIteration
        return field

    def nested(self, value: memoryview) -> WireReader:
        """A reader over a LEN value (or group body) this reader yielded, one level deeper.

        Its error offsets continue from this reader's. Raises
        :class:`DepthLimitError` beyond ``max_depth``, and ValueError for a
        value that is not part of this reader's buffer.
        """
        view = byte_view(value, False)
        start = self._locate(view)
        depth = self._depth + 1
        if depth > self._max_depth:
            raise DepthLimitError(
                f"messages nested deeper than {self._max_depth}", self._base + start
            )
        reader = WireReader(view, max_depth=self._max_depth)
        reader._base = self._base + start
        reader._depth = depth
        return reader

    def packed(self, value: memoryview, kind: str) -> Any:
        """The elements of a packed repeated field (a LEN value yielded here) as a numpy array.

        Fixed-width kinds are a zero-copy view (dtype ``<u4``, ``<i4``,
        ``<f4``, ``<u8``, ``<i8``, ``<f8``); a length that is not a multiple
        of the element size raises :class:`WireFormatError`. Varint kinds are
        decoded into a new array (int32/sint32/enum: ``int32``, int64/sint64:
        ``int64``, ``uint32``, ``uint64``, ``bool``), truncating to 32 bits
        as protobuf does; a truncated or malformed varint raises
        :class:`TruncatedError` or :class:`~codec.errors.VarintError`. The
        array holds at most one element per byte of ``value``.
        """
        code = scalar_kind(kind)
        if code < 0:
            raise ValueError(f"unknown packed kind {kind!r}")
        view = byte_view(value, False)
        start = self._locate(view)
        size = len(view)
        numpy = _numpy()
        if packed_width(natural_wire_type(code), start, start + size, self._base):
            return numpy.frombuffer(view, dtype=NUMPY_DTYPES[code])
        return self._unpack(start, start + size, code, numpy)

    # --- internals ----------------------------------------------------------

    def _data(self) -> Bytes:
        """The bytes being read: a pointer compiled, the byte view uncompiled."""
        if cython.compiled:
            return cython.cast(cython.p_uchar, cython.cast(MemoryViewPointer, self._view).view.buf)
        return self._view

    def _unpack(self, start: int, end: int, code: int, numpy: Any) -> Any:
        """The packed varints in ``_view[start:end]`` as a new array of kind ``code``."""
        data = self._data()
        count = count_varints(data, start, end, self._base)  # checks them all first
        out = numpy.empty(count, dtype=NUMPY_DTYPES[code])
        if cython.compiled:
            acquire(out, cython.address(target), PyBUF_WRITABLE)
            try:
                decode_varints(
                    data, start, end, cython.cast(cython.p_uchar, target.buf), count, code
                )
            finally:
                PyBuffer_Release(cython.address(target))
            return out
        pos = start
        for i in range(count):
            n = varint_scan(data, pos, end, False)
            out[i] = varint_value_of(code, varint_value(data, pos, n))
            pos += n
        return out

    def _next_field(self) -> tuple[int, int, Any] | None:
        """The next field, or None at the end."""
        pos = self._pos
        end = self._end
        if pos >= end:
            return None
        data = self._data()
        base = self._base
        head = read_tag(data, pos, end, base)
        tag = head >> 3
        field = tag >> 3
        wire_type = tag & 7
        at = pos + (head & 7)
        value: Any
        if wire_type == _VARINT:
            n = varint_length(data, at, end, base)
            value = varint_value(data, at, n)
            self._pos = at + n
        elif wire_type == _LEN:
            bounds = length_end(data, at, end, base)
            self._pos = bounds >> 3
            value = self._slice(at + (bounds & 7), self._pos)
        elif wire_type == _I64:
            self._pos = fixed_end(at, end, base, 8)
            value = read_le(data, at, 8)
        elif wire_type == _I32:
            self._pos = fixed_end(at, end, base, 4)
            value = read_le(data, at, 4)
        elif wire_type == _SGROUP:
            bounds = skip_group(data, at, end, base, field, pos, self._depth + 1, self._max_depth)
            self._pos = bounds >> 3
            value = self._slice(at, self._pos - (bounds & 7))  # the body, without the end tag
        else:
            stray_end_group(field, pos, base)
        return field, wire_type, value

    def _slice(self, start: int, end: int) -> memoryview:
        """A zero-copy view of ``_view[start:end]``."""
        if cython.compiled:
            # Narrow a copy of the whole view in place: the generic slicing
            # path (slice object, index checks) costs more than a small field.
            view = PyMemoryView_FromObject(self._view)
            narrowed = cython.cast(MemoryViewPointer, view)
            narrowed.view.buf = cython.cast(cython.p_char, narrowed.view.buf) + start
            narrowed.view.len = end - start
            narrowed.view.shape[0] = end - start
            return view  # type: ignore[no-any-return]
        return self._view[start:end]

    def _locate(self, view: memoryview) -> int:
        """Position of ``view`` (a byte view) in this reader's buffer; ValueError if outside."""
        if self._view is None:
            raise uninitialised(self)
        if cython.compiled:
            address = cython.cast(cython.size_t, cython.cast(MemoryViewPointer, view).view.buf)
            origin = cython.cast(cython.size_t, cython.cast(MemoryViewPointer, self._view).view.buf)
            start = cython.cast(cython.Py_ssize_t, address - origin)  # negative if before
            size = cython.cast(MemoryViewPointer, view).view.len
        else:
            numpy = _numpy()
            address = numpy.frombuffer(view, dtype=numpy.uint8).__array_interface__["data"][0]
            origin = numpy.frombuffer(self._view, dtype=numpy.uint8).__array_interface__["data"][0]
            start = int(address - origin)
            size = len(view)
        if start < 0 or start > self._end or size > self._end - start:
            raise ValueError("the value is not part of this reader's buffer")
        return start


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(WireWriter, buffer=None)
    fields_as_allocated(Delimited, _writer=None, _tag=0, _limit=0, _start=0, _body=0)
    fields_as_allocated(WireReader, _view=None, _pos=0, _end=0, _base=0, _depth=0, _max_depth=0)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "EGROUP",
    "I32",
    "I64",
    "LEN",
    "MAX_FIELD_NUMBER",
    "MAX_SIZE_BYTES",
    "SGROUP",
    "VARINT",
    "Delimited",
    "WireReader",
    "WireWriter",
]
