# C types for _buffer.py (Cython pure-Python mode).
cimport cython
from libc.string cimport memcpy, memmove, memset

ctypedef unsigned char uchar

cdef extern from *:
    """
    /* Copy n bytes, 8 <= n <= 32, with no branch on n: four 8-byte moves, at 0,
       min(8, n - 8), min(16, n - 8) and n - 8, which overlap to cover the n bytes
       and read none past them. Strings of such lengths mix across the size
       classes of memcpy, whose branch on them is mispredicted as often as not. */
    static CYTHON_INLINE void codec_copy_8_to_32(unsigned char *out, const char *data,
                                                 Py_ssize_t n) {
        Py_ssize_t last = n - 8;
        Py_ssize_t second = last < 8 ? last : 8;
        Py_ssize_t third = last < 16 ? last : 16;
        uint64_t a, b, c, d;
        memcpy(&a, data, 8);
        memcpy(&b, data + second, 8);
        memcpy(&c, data + third, 8);
        memcpy(&d, data + last, 8);
        memcpy(out, &a, 8);
        memcpy(out + second, &b, 8);
        memcpy(out + third, &c, 8);
        memcpy(out + last, &d, 8);
    }
    /* Copy n bytes of a string or bytes value, none read or written past them: 8 to 32
       as above; 4 to 7 in two overlapping 4-byte moves; 1 to 3 a byte at 0, n / 2 and
       n - 1; memcpy beyond (a call costs more than the copy of a short one). */
    static CYTHON_INLINE void codec_copy_value(unsigned char *out, const char *data,
                                               Py_ssize_t n) {
        if ((size_t)(n - 8) <= 24) {
            codec_copy_8_to_32(out, data, n);
        } else if (n >= 4 && n < 8) {
            uint32_t a, b;
            memcpy(&a, data, 4);
            memcpy(&b, data + n - 4, 4);
            memcpy(out, &a, 4);
            memcpy(out + n - 4, &b, 4);
        } else if (n > 0 && n < 4) {
            unsigned char first = data[0], middle = data[n >> 1], final = data[n - 1];
            out[0] = first;
            out[n >> 1] = middle;
            out[n - 1] = final;
        } else if (n > 0) {  /* an empty value may have no address */
            memcpy(out, data, n);
        }
    }
    """
    void codec_copy_8_to_32(uchar *out, const char *data, Py_ssize_t n) noexcept nogil
    void codec_copy_value(uchar *out, const char *data, Py_ssize_t n) noexcept nogil

cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_exports
    char *PyByteArray_AS_STRING(object data)
    int PyByteArray_Resize(object data, Py_ssize_t size) except -1
    ctypedef struct PyMemoryViewObject:
        Py_buffer view
    memoryview PyMemoryView_FromObject(object obj)
    bytes PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)

ctypedef PyMemoryViewObject *MemoryViewPointer

cdef Py_ssize_t _INITIAL_CAPACITY, _RECEIVE_CHUNK, _RECEIVE_SLACK

cdef uchar *byte_pointer(bytearray data) noexcept
cdef void copy_bytes(uchar *out, Py_ssize_t pos, const uchar *source, Py_ssize_t size) noexcept
cdef void move_bytes(uchar *data, Py_ssize_t start, Py_ssize_t size) noexcept
cdef void resize(bytearray data, Py_ssize_t size) except *
@cython.locals(previous=Py_ssize_t)
cdef void resize_zeroed(bytearray data, Py_ssize_t size) except *
cdef bint is_exported(bytearray data) except -1
cdef Py_ssize_t grown(Py_ssize_t capacity, Py_ssize_t needed) noexcept
cdef void make_room(bytearray data, Py_ssize_t end, bint exact) except *
cdef Py_ssize_t receive_capacity(Py_ssize_t capacity, Py_ssize_t needed) noexcept
cdef object uninitialised(object obj)

cdef class WriteBuffer:
    cdef bytearray _data
    cdef Py_ssize_t _length
    cdef bint _busy
    cdef Py_ssize_t _regions
    @cython.locals(pos=Py_ssize_t)
    cdef Py_ssize_t _room(self, Py_ssize_t size) except -1
    cdef int _claim(self, bint whole) except -1
    cdef object _busy_error(self, bint whole)

# A WriteBuffer's state changes here only, inlined where a writer uses it: a
# write claims the buffer (WriteBuffer._claim), moves its end, and releases it;
# a nested message or frame is a region, counted while it is open.
cdef inline void release_claim(WriteBuffer buffer) noexcept:
    buffer._busy = False

cdef inline void set_end(WriteBuffer buffer, Py_ssize_t end) noexcept:
    buffer._length = end

cdef inline void cut_to(WriteBuffer buffer, Py_ssize_t start) noexcept:
    if buffer._length > start:
        buffer._length = start

cdef inline void open_region(WriteBuffer buffer) noexcept:
    buffer._regions += 1

cdef inline void close_region(WriteBuffer buffer) noexcept:
    buffer._regions -= 1

cdef class ReceiveWindow:
    cdef bytearray _data
    cdef memoryview _view
    cdef Py_ssize_t _start, _end
    cdef readonly Py_ssize_t _base
    cdef int _make_room(self, Py_ssize_t size) except -1
    @cython.locals(unread=Py_ssize_t, capacity=Py_ssize_t)
    cdef int _trim(self) except -1
    @cython.locals(unread=Py_ssize_t, fresh=bytearray)
    cdef int _relocate(self, Py_ssize_t capacity) except -1
    cdef bytes _copied(self, Py_ssize_t start, Py_ssize_t end)
    cdef const uchar *_unread(self)
    @cython.locals(view=memoryview, narrowed=MemoryViewPointer)
    cdef memoryview _received(self, Py_ssize_t start, Py_ssize_t end)
