# C types for _varint.py (Cython pure-Python mode). Functions that other compiled
# modules cimport take a raw byte pointer and never raise.
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint64_t

ctypedef unsigned char uchar
ctypedef unsigned int uint

cdef Py_ssize_t _MAX_LEN, _STRICT_MAX_LEN, _TOO_LONG, _OVERFLOW, _NOT_MINIMAL

@cython.locals(limit=Py_ssize_t, n=Py_ssize_t, byte=uchar)
cdef Py_ssize_t varint_scan(const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
                            bint strict) noexcept nogil

@cython.locals(value=uint64_t, chunk=uint64_t, shift=uint, i=Py_ssize_t)
cdef uint64_t varint_value(const unsigned char *data, Py_ssize_t pos, Py_ssize_t n) noexcept nogil

cdef object varint_error(Py_ssize_t status, Py_ssize_t offset)

# The smallest primitives, with their bodies here: every compiled module that cimports
# them inlines them (a cdef function of another module is an indirect call). _varint.py
# keeps their uncompiled twins, behind ``if not cython.compiled``.
cdef extern from *:
    int __builtin_clzll(unsigned long long value) nogil


cdef inline Py_ssize_t varint_size(uint64_t value) noexcept nogil:
    # 1 byte per 7 bits of the highest set bit, without a loop
    return (9 * (63 - __builtin_clzll(value | 1)) + 73) >> 6


cdef inline Py_ssize_t varint_write(unsigned char *out, Py_ssize_t pos,
                                    uint64_t value) noexcept nogil:
    while value >= 0x80:
        out[pos] = <unsigned char>(value | 0x80)
        value >>= 7
        pos += 1
    out[pos] = <unsigned char>value
    return pos + 1


cdef inline uint64_t read_le(const unsigned char *data, Py_ssize_t pos,
                             Py_ssize_t width) noexcept nogil:
    cdef uint64_t value = 0
    cdef Py_ssize_t i
    for i in range(width):
        value |= (<uint64_t>data[pos + i]) << (8 * i)
    return value


cdef inline Py_ssize_t write_le(unsigned char *out, Py_ssize_t pos, uint64_t value,
                                Py_ssize_t width) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(width):
        out[pos + i] = <unsigned char>(value >> (8 * i))
    return pos + width

cdef int acquire(object buffer, Py_buffer *view, int flags) except -1
cdef Py_ssize_t position(object offset) except -1

@cython.locals(view=Py_buffer, start=Py_ssize_t)
cpdef Py_ssize_t _store(uint64_t value, object buffer, object offset, Py_ssize_t width) except -1

@cython.locals(n=Py_ssize_t)
cdef Py_ssize_t _store_at(unsigned char *out, Py_ssize_t length, Py_ssize_t offset,
                          uint64_t value, Py_ssize_t width) except -1

@cython.locals(view=Py_buffer, start=Py_ssize_t)
cpdef tuple _load(object buffer, object offset, Py_ssize_t width, bint strict)

@cython.locals(n=Py_ssize_t)
cdef tuple _load_at(const unsigned char *data, Py_ssize_t length, Py_ssize_t offset,
                    Py_ssize_t width, bint strict)
