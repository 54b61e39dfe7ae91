# C types for _wire.py (Cython pure-Python mode): the wire core both engines cimport.
# The readers every decoder calls per field have their bodies here, so each compiled
# module inlines them; the functions that raise live in _wire.py (the error path only).
cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from codec._varint cimport (
    bits_float32, bits_float64, uchar, unzigzag, varint_error, varint_scan, varint_value,
)

cdef enum:  # wire types
    VARINT = 0
    I64 = 1
    LEN = 2
    SGROUP = 3
    EGROUP = 4
    I32 = 5

cdef enum:
    MAX_PREFIX_BYTES = 5  # of a tag, and of the size of a length-delimited value
    MAX_FIELD_NUMBER = 536870911  # 2**29 - 1: a tag is at most 2**32 - 1

cdef enum:  # kinds of field value, in KIND_NAMES order
    INT32 = 0
    INT64 = 1
    UINT32 = 2
    UINT64 = 3
    SINT32 = 4
    SINT64 = 5
    BOOL = 6
    ENUM = 7
    FIXED32 = 8
    FIXED64 = 9
    SFIXED32 = 10
    SFIXED64 = 11
    FLOAT = 12
    DOUBLE = 13
    STRING = 14
    BYTES = 15
    MESSAGE = 16
    GROUP = 17

@cython.locals(kind=int)
cpdef int scalar_kind(object name) except? -2
cpdef int natural_wire_type(int kind) noexcept
cpdef Py_ssize_t kind_width(int kind) noexcept

@cython.locals(n=Py_ssize_t, tag=uint64_t)
cdef long long bad_tag(const uchar *data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base) except -1
cdef Py_ssize_t bad_varint(Py_ssize_t status, Py_ssize_t pos, Py_ssize_t base) except -1
@cython.locals(n=Py_ssize_t, size=uint64_t, left=Py_ssize_t)
cdef long long bad_length(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                          Py_ssize_t base) except -1
cdef Py_ssize_t bad_fixed(Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base,
                          Py_ssize_t width) except -1
cdef Py_ssize_t stray_end_group(uint64_t field, Py_ssize_t pos, Py_ssize_t base) except -1


cdef inline long long read_tag(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                               Py_ssize_t base) except -1:
    # the valid tag at pos, as tag << 3 | its byte count
    cdef Py_ssize_t n = varint_scan(data, pos, end, False)
    cdef uint64_t tag
    if 0 < n <= MAX_PREFIX_BYTES:
        tag = varint_value(data, pos, n)
        if tag >> 32 == 0 and tag >> 3 != 0 and (tag & 7) <= I32:
            return <long long>((tag << 3) | <uint64_t>n)
    return bad_tag(data, pos, end, base)


cdef inline Py_ssize_t varint_length(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                     Py_ssize_t base) except -1:
    # byte count of the valid varint at pos
    cdef Py_ssize_t n = varint_scan(data, pos, end, False)
    if n > 0:
        return n
    return bad_varint(n, pos, base)


cdef inline long long length_end(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                 Py_ssize_t base) except -1:
    # the end of the length-delimited value whose size is at pos << 3 | the size's bytes
    cdef Py_ssize_t n = varint_scan(data, pos, end, False)
    cdef uint64_t size
    if 0 < n <= MAX_PREFIX_BYTES:
        size = varint_value(data, pos, n)
        if size <= <uint64_t>(end - pos - n):
            return ((pos + n + <Py_ssize_t>size) << 3) | n
    return bad_length(data, pos, end, base)


cdef inline Py_ssize_t fixed_end(Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base,
                                 Py_ssize_t width) except -1:
    # end of the width-byte value at pos, checked
    if width <= end - pos:
        return pos + width
    return bad_fixed(pos, end, base, width)


cdef Py_ssize_t skip_value(const uchar *data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base,
                           int wire_type) except -1

@cython.locals(open_fields=list, head=cython.longlong, tag=uint64_t, after=Py_ssize_t,
               wire_type=int, innermost=uint64_t)
cdef long long skip_group(const uchar *data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base,
                          uint64_t field, Py_ssize_t start, Py_ssize_t depth,
                          Py_ssize_t max_depth) except -1


# The value of a scalar read from the wire.
cdef inline object varint_value_of(int kind, uint64_t raw):
    # int32, sint32 and enum keep the low 32 bits (protobuf's rule)
    if kind == UINT64:
        return raw
    if kind == BOOL:
        return raw != 0
    if kind == SINT64:
        return unzigzag(raw)
    if kind == INT64:
        return <int64_t>raw
    if kind == UINT32:
        return <uint32_t>raw
    if kind == SINT32:
        return unzigzag(<uint32_t>raw)
    return <int32_t><uint32_t>raw  # INT32, ENUM


cdef inline object fixed_value_of(int kind, uint64_t bits):
    if kind == FLOAT:
        return bits_float32(bits)
    if kind == DOUBLE:
        return bits_float64(bits)
    if kind == SFIXED32:
        return <int32_t><uint32_t>bits
    if kind == SFIXED64:
        return <int64_t>bits
    return bits  # FIXED32, FIXED64
