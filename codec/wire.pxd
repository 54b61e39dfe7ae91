# C types for wire.py (Cython pure-Python mode).
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release
from cpython.number cimport PyNumber_Index
from cpython.exc cimport PyErr_Clear
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memmove

from codec._buffer cimport (
    MemoryViewPointer, PyMemoryView_FromObject, WriteBuffer, byte_pointer, close_region,
    copy_bytes, cut_to, open_region, release_claim, set_end, uninitialised,
)
from codec._columns cimport (
    checked_column, column_size, count_varints, decode_varints, write_column,
)
from codec._varint cimport (
    read_le, write_le, acquire, varint_scan, varint_size, varint_value,
    varint_write, float32_bits, float64_bits, twos_complement,
)
from codec._wire cimport (
    VARINT as _VARINT, I64 as _I64, LEN as _LEN, SGROUP as _SGROUP, EGROUP as _EGROUP,
    I32 as _I32, MAX_FIELD_NUMBER as _MAX_FIELD_NUMBER, MAX_PREFIX_BYTES,
    INT32, INT64, UINT32, UINT64, SINT32, SINT64, BOOL, ENUM, FIXED32, FIXED64, SFIXED32,
    SFIXED64, FLOAT, DOUBLE,
    fixed_end, kind_width, length_end, natural_wire_type, packed_width, read_tag, scalar_bits,
    scalar_kind,
    skip_group,
    stray_end_group, utf8_or_null, varint_length, varint_value_of,
)

ctypedef unsigned char uchar


# --- values ------------------------------------------------------------------

cdef object _index(object value)
@cython.locals(number=Py_ssize_t)
cdef Py_ssize_t _field_number(object field) except -1
cdef uint64_t _tag_of(object field, Py_ssize_t wire_type) except 0
cdef Py_ssize_t _kind_code(object field, object kind) except -1
cdef void _shift_right(uchar *data, Py_ssize_t start, Py_ssize_t size, Py_ssize_t by) noexcept

# --- writer ------------------------------------------------------------------

cdef class WireWriter:
    cdef readonly WriteBuffer buffer

    @cython.locals(pos=Py_ssize_t, needed=Py_ssize_t, data=bytearray)

    @cython.locals(bits=uint64_t, width=Py_ssize_t, pos=Py_ssize_t, out=cython.p_uchar,
                   tag=uint64_t, buffer=WriteBuffer)
    cdef int _put_scalar(self, object field, Py_ssize_t code, object value) except -1

    @cython.locals(pos=Py_ssize_t, out=cython.p_uchar, buffer=WriteBuffer)
    cdef int _put_len(self, uint64_t tag, const uchar *source, Py_ssize_t size) except -1

    @cython.locals(data="const char *", size=Py_ssize_t)
    cdef int _put_text(self, object field, uint64_t tag, object text) except -1

    @cython.locals(view=Py_buffer)
    cdef int _put_buffer(self, object field, uint64_t tag, object data) except -1

    @cython.locals(view=Py_buffer, n=Py_ssize_t, elements="const uchar *", size=Py_ssize_t,
                   pos=Py_ssize_t, out=cython.p_uchar, buffer=WriteBuffer)
    cdef int _put_varints(self, uint64_t tag, object column, Py_ssize_t code,
                          object numpy) except -1

    @cython.locals(start=Py_ssize_t, body=Py_ssize_t, width=Py_ssize_t, count=Py_ssize_t,
                   bits=uint64_t, pos=Py_ssize_t, out=cython.p_uchar, buffer=WriteBuffer)
    cdef int _put_sequence(self, object field, uint64_t tag, Py_ssize_t code,
                           object values) except -1

    @cython.locals(pos=Py_ssize_t, out=cython.p_uchar)
    cdef Py_ssize_t _reserve_length(self, uint64_t tag) except -1

    @cython.locals(buffer=WriteBuffer, end=Py_ssize_t, size=Py_ssize_t, extra=Py_ssize_t)
    cdef Py_ssize_t _patch_length(self, Py_ssize_t start, Py_ssize_t body, Py_ssize_t limit) except -1

    cdef void _rollback(self, Py_ssize_t start) noexcept


cdef class Delimited:
    cdef WireWriter _writer
    cdef uint64_t _tag
    cdef Py_ssize_t _limit, _start, _body

@cython.locals(buffer=WriteBuffer)
cdef WriteBuffer _claimed(WireWriter writer, bint whole)
@cython.locals(region=Delimited)
cdef Delimited _region(WireWriter writer, uint64_t tag, Py_ssize_t limit)
@cython.locals(writer=WireWriter)
cpdef Delimited open_frame(WriteBuffer buffer, Py_ssize_t limit)

# --- reader ------------------------------------------------------------------



cdef class WireReader:
    cdef memoryview _view
    cdef Py_ssize_t _pos, _end, _base, _depth, _max_depth

    cdef const uchar *_data(self) noexcept

    @cython.locals(pos=Py_ssize_t, end=Py_ssize_t, base=Py_ssize_t, data="const uchar *",
                   head=int64_t, tag=uint64_t, field=Py_ssize_t, wire_type=Py_ssize_t,
                   at=Py_ssize_t, n=Py_ssize_t, bounds=int64_t)
    cdef object _next_field(self)

    @cython.locals(view=memoryview, narrowed=MemoryViewPointer)
    cdef memoryview _slice(self, Py_ssize_t start, Py_ssize_t end)

    @cython.locals(address=size_t, origin=size_t, start=Py_ssize_t, size=Py_ssize_t)
    cdef Py_ssize_t _locate(self, memoryview view) except -1

    @cython.locals(data="const uchar *", count=Py_ssize_t, target=Py_buffer)
    cdef object _unpack(self, Py_ssize_t start, Py_ssize_t end, Py_ssize_t code, object numpy)
