# C types for _wire.py (Cython pure-Python mode): the wire core both engines cimport.
# The readers every decoder calls per field have their bodies here, so each compiled
# module inlines them; the functions that raise live in _wire.py (the error path only).
cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.number cimport PyNumber_Index

from codec._varint cimport (
    bits_float32, bits_float64, float32_bits, float64_bits, twos_complement, uchar, unzigzag,
    varint_error, varint_scan, varint_scan_in, varint_value, zigzag,
)

cdef extern from *:
    """
    /* A str's UTF-8 bytes (CPython keeps them), read in place for an ASCII string;
       NULL with an exception set for a lone surrogate. */
    static CYTHON_INLINE const char *codec_utf8(PyObject *text, Py_ssize_t *size) {
        if (PyUnicode_IS_COMPACT_ASCII(text)) {
            *size = PyUnicode_GET_LENGTH(text);
            return (const char *)PyUnicode_DATA(text);
        }
        return PyUnicode_AsUTF8AndSize(text, size);
    }
    """
    # NULL is a lone surrogate: the caller raises EncodeError(LONE_SURROGATE).
    const char *utf8_or_null "codec_utf8"(object text, Py_ssize_t *size) noexcept

cdef extern from *:
    """
    /* An exact int read in place as a C integer: before 3.12, an int below 2**63 in
       magnitude (at most three 30-bit digits, so timestamps in nanoseconds too); from
       3.12, a compact int (|value| < 2**30). 0 for any other int, which takes
       PyLong_AsLongLongAndOverflow. */
    static CYTHON_INLINE int codec_small_int(PyObject *number, long long *value) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject *)number)) return 0;
        *value = (long long)PyUnstable_Long_CompactValue((PyLongObject *)number);
    #else
        Py_ssize_t size = Py_SIZE(number);
        const digit *digits = ((PyLongObject *)number)->ob_digit;
        unsigned long long magnitude;
        if ((size_t)(size + 1) <= 2) {  /* at most one digit, and its sign */
            *value = size ? (long long)size * (long long)digits[0] : 0;  /* 0's digit is unset */
            return 1;
        }
        switch (size < 0 ? -size : size) {
        case 2: magnitude = digits[0] | ((unsigned long long)digits[1] << PyLong_SHIFT); break;
    #if PyLong_SHIFT == 30
        case 3:
            if (digits[2] >> 3) return 0;  /* 2**63 or more */
            magnitude = digits[0] | ((unsigned long long)digits[1] << 30)
                        | ((unsigned long long)digits[2] << 60);
            break;
    #endif
        default: return 0;
        }
        *value = size < 0 ? -(long long)magnitude : (long long)magnitude;
    #endif
        return 1;
    }
    """
    bint codec_small_int(object number, long long *value) noexcept
    double PyFloat_AS_DOUBLE(object number) noexcept
    long long PyLong_AsLongLongAndOverflow(object number, int *overflow) noexcept
    unsigned long long PyLong_AsUnsignedLongLong(object number) noexcept

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
cdef Py_ssize_t bad_packed(Py_ssize_t start, Py_ssize_t end, Py_ssize_t base,
                           Py_ssize_t width) except -1
cdef Py_ssize_t stray_end_group(uint64_t field, Py_ssize_t pos, Py_ssize_t base) except -1


cdef inline long long read_tag(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                               Py_ssize_t base) except -1:
    # the valid tag at pos, as tag << 3 | its byte count
    cdef Py_ssize_t n
    cdef uint64_t tag
    if pos + 1 < end and data[pos] >= 0x80 and data[pos + 1] < 0x80:  # two bytes, in place
        n = 2  # (fields 16 to 2047)
        tag = (data[pos] & 0x7F) | (<uint64_t>data[pos + 1] << 7)
    else:
        n = varint_scan(data, pos, end, False)
        if not 0 < n <= MAX_PREFIX_BYTES:
            return bad_tag(data, pos, end, base)
        tag = varint_value(data, pos, n)
    if tag >> 32 == 0 and tag >> 3 != 0 and (tag & 7) <= I32:
        return <long long>((tag << 3) | <uint64_t>n)
    return bad_tag(data, pos, end, base)


cdef inline Py_ssize_t varint_length(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                     Py_ssize_t base) except -1:
    # byte count of the valid varint at pos
    return varint_length_in(data, pos, end, end, base)


cdef inline Py_ssize_t varint_length_in(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                        Py_ssize_t readable, Py_ssize_t base) except -1:
    # varint_length, where the bytes up to readable may be loaded (see varint_scan_in)
    cdef Py_ssize_t n = varint_scan_in(data, pos, end, readable, False)
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


cdef inline Py_ssize_t packed_width(int wire_type, Py_ssize_t start, Py_ssize_t end,
                                    Py_ssize_t base) except -1:
    # the byte width of a packed run's elements on wire_type (0: varints), checked
    cdef Py_ssize_t width = 4 if wire_type == I32 else 8 if wire_type == I64 else 0
    if width and (end - start) % width:
        return bad_packed(start, end, base, width)
    return width


cdef Py_ssize_t skip_value(const uchar *data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base,
                           int wire_type) except -1

@cython.locals(wire_type=int)
cdef Py_ssize_t skip_field(const uchar *data, Py_ssize_t start, Py_ssize_t pos, Py_ssize_t end,
                           uint64_t tag, Py_ssize_t base, Py_ssize_t depth,
                           Py_ssize_t max_depth) except -1
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


# The value of a scalar to write (see _wire.py).
@cython.locals(number=double, value=object)
cdef uint64_t checked_bits(object owner, int kind, object lent) except? 0xFFFFFFFFFFFFFFFE
@cython.locals(signed=cython.longlong, overflow=int, unsigned=uint64_t)
cdef uint64_t integer_bits(object owner, int kind, object value) except? 0xFFFFFFFFFFFFFFFE
cdef object integer_of(object owner, int kind, object value, bint assigning)
cdef bint truth_of(object owner, object value, bint assigning) except -1
cdef double real_of(object owner, int kind, object value, bint assigning) except? -1.0
cdef bint _is_numpy(object value, str name) except -1
cpdef str describe(object owner)
cdef object wrong_type(object owner, str expected, object value, bint assigning)
cdef object out_of_range(object owner, int kind, object number)
cdef tuple _LOW, _HIGH


cdef extern from *:
    """
    /* The signed 64-bit numbers of each integer kind, by kind number: _LOW and _HIGH
       of _wire.py with the high end inclusive and at most INT64_MAX. Two loads in
       place of a switch on the kind. */
    static const int64_t codec_kind_low[12] = {
        INT32_MIN, INT64_MIN, 0, 0, INT32_MIN, INT64_MIN, 0, INT32_MIN, 0, 0, INT32_MIN, INT64_MIN};
    static const int64_t codec_kind_high[12] = {
        INT32_MAX, INT64_MAX, UINT32_MAX, INT64_MAX, INT32_MAX, INT64_MAX, 1, INT32_MAX,
        UINT32_MAX, INT64_MAX, INT32_MAX, INT64_MAX};
    """
    const int64_t *codec_kind_low
    const int64_t *codec_kind_high


cdef inline void int64_range(int kind, int64_t *low, int64_t *high) noexcept nogil:
    # the signed 64-bit numbers in the range of an integer kind (not a float, string,
    # bytes or message kind): low to high, inclusive
    low[0] = codec_kind_low[kind]
    high[0] = codec_kind_high[kind]


cdef inline bint fits(int kind, int64_t number) noexcept nogil:
    # whether a signed 64-bit number is in the range of an integer kind
    cdef int64_t low, high
    int64_range(kind, &low, &high)
    return low <= number <= high


cdef inline bint zigzagged(int kind) noexcept nogil:
    # whether an integer kind is written zigzag-encoded
    return kind == SINT32 or kind == SINT64


cdef inline uint64_t integer_pattern(int kind, int64_t number) noexcept nogil:
    # the bits of a number that fits an integer kind
    if zigzagged(kind):
        return zigzag(number)
    if kind == SFIXED32:
        return <uint32_t>number
    return twos_complement(number)  # int32, enum: negative values take 10 bytes


cdef inline uint64_t double_bits(object owner, object value) except? 0xFFFFFFFFFFFFFFFE:
    # scalar_bits for a double
    if type(value) is float:
        return float64_bits(PyFloat_AS_DOUBLE(value))
    return checked_bits(owner, DOUBLE, value)


cdef inline uint64_t scalar_bits(object owner, int kind, object value) except? 0xFFFFFFFFFFFFFFFE:
    # the bits written for a value of a scalar kind, checked: an exact int of an integer
    # kind, or an exact float of a double, is read here; any other value by checked_bits
    cdef long long small
    if (type(value) is int and kind < FLOAT and kind != BOOL
            and codec_small_int(value, &small) and fits(kind, small)):
        return integer_pattern(kind, small)
    if kind == DOUBLE:
        return double_bits(owner, value)
    return checked_bits(owner, kind, value)


cdef inline uint64_t plain_varint_bits(object owner, int kind, object value) except? 0xFFFFFFFFFFFFFFFE:
    # scalar_bits for a kind written as a plain varint (int32, int64, uint32, uint64, enum):
    # none of its tests of the kind
    cdef long long small
    if type(value) is int and codec_small_int(value, &small) and fits(kind, small):
        return twos_complement(small)
    return checked_bits(owner, kind, value)
