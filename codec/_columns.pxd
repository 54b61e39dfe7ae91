# C types for _columns.py (Cython pure-Python mode).
cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from codec._varint cimport (
    unzigzag, varint_scan, varint_size, varint_value, varint_write, write_le, zigzag,
)
from codec._wire cimport BOOL, INT64, SINT32, SINT64, UINT32, UINT64, varint_length

ctypedef unsigned char uchar

cdef object checked_column(object field, Py_ssize_t code, object values, object numpy)

@cython.locals(n32=int32_t)
cdef uint64_t _column_element(const uchar *column, Py_ssize_t i, Py_ssize_t code) noexcept nogil

@cython.locals(total=Py_ssize_t, i=Py_ssize_t)
cdef Py_ssize_t column_size(const uchar *column, Py_ssize_t n, Py_ssize_t code) noexcept nogil

@cython.locals(i=Py_ssize_t, value=uint64_t, more1=uint64_t, more2=uint64_t, more3=uint64_t,
               word=uint32_t)
cdef Py_ssize_t write_column(uchar *out, Py_ssize_t pos, const uchar *column, Py_ssize_t n,
                             Py_ssize_t code) noexcept nogil

@cython.locals(pos=Py_ssize_t, n=Py_ssize_t, count=Py_ssize_t)
cdef Py_ssize_t count_varints(const uchar *data, Py_ssize_t start, Py_ssize_t end,
                              Py_ssize_t base) except -1

@cython.locals(i=Py_ssize_t, n=Py_ssize_t, value=uint64_t)
cdef void decode_varints(const uchar *data, Py_ssize_t pos, Py_ssize_t end, uchar *out,
                         Py_ssize_t count, Py_ssize_t code) noexcept nogil
