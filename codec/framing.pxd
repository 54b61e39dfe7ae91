# C types for framing.py (Cython pure-Python mode).
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release
from libc.stdint cimport uint64_t

from codec._buffer cimport (
    ReceiveWindow, WriteBuffer, byte_pointer, copy_bytes, make_room, release_claim, set_end,
    uninitialised,
)
from codec.structs._dispatch cimport (
    Parser, parser_for, payload_of, release_staged, staged_size, write_staged,
)
from codec._varint cimport (
    PyMemoryView_GET_BUFFER, acquire, is_flat_bytes, varint_error, varint_scan, varint_size,
    varint_value, varint_write,
)

ctypedef unsigned char uchar

@cython.locals(view=Py_buffer)
cdef Py_ssize_t _frame_into(bytearray data, Py_ssize_t offset, object payload, Py_ssize_t limit,
                            bint exact) except -1

@cython.locals(body=Py_ssize_t)
cdef Py_ssize_t _put_frame(bytearray data, Py_ssize_t offset, const uchar *source, Py_ssize_t size,
                           Py_ssize_t limit, bint exact) except -1

@cython.locals(staged=object, body=Py_ssize_t)
cdef Py_ssize_t _put_message(bytearray data, Py_ssize_t offset, object message, Py_ssize_t limit,
                             bint exact, bint partial, bint deterministic) except -1
cdef Py_ssize_t _resolved(bytearray data, Py_ssize_t offset) except -1
@cython.locals(body=Py_ssize_t)
cdef Py_ssize_t _frame_room(bytearray data, Py_ssize_t offset, Py_ssize_t size, Py_ssize_t limit,
                            bint exact) except -1

cdef class FrameEncoder(WriteBuffer):
    cdef Py_ssize_t _max_frame_size
    cdef bint _deterministic

    @cython.locals(end=Py_ssize_t, written=Py_ssize_t)
    cpdef Py_ssize_t write(self, object payload) except -1
    @cython.locals(start=Py_ssize_t, end=Py_ssize_t)
    cpdef Py_ssize_t encode(self, object message, bint partial=*) except -1

cdef class FrameDecoder(ReceiveWindow):
    cdef Py_ssize_t _max_frame_size
    cdef bint _strict
    cdef object _message_type
    cdef Parser _parser
    cdef bint _copy
    cdef Py_ssize_t _walked
    cdef object _error
    cdef Py_ssize_t _error_offset
    cdef bint _eof
    cdef Py_ssize_t _offered
    cdef bint _busy
    cdef int _claim(self) except -1
    cdef object _busy_error(self)
    cdef object _repeated(self)
    cpdef object next_frame(self)
    @cython.locals(count=Py_ssize_t, start=Py_ssize_t, stop=Py_ssize_t, pos=Py_ssize_t,
                   n=Py_ssize_t, data=cython.p_uchar)
    cpdef memoryview take_frames(self, object limit)
    @cython.locals(start=Py_ssize_t, n=Py_ssize_t, body=Py_ssize_t, end=Py_ssize_t,
                   data=cython.p_uchar)
    cdef object _take_frame(self)
    cdef int _commit(self, Py_ssize_t nbytes) except -1
    @cython.locals(pos=Py_ssize_t, end=Py_ssize_t, stop=Py_ssize_t, data=cython.p_uchar)
    cdef int _walk(self) except -1
    cdef int _check_receiving(self) except -1
    cdef int _poison(self, object error, Py_ssize_t pos) except -1
    cdef int _fail(self, object error, Py_ssize_t pos) except -1
    cdef object _parse(self, memoryview frame, Py_ssize_t start, Py_ssize_t prefix)

# The prefix rules (see framing.py), for the decoder and for readers of a stream in memory.
@cython.locals(n=Py_ssize_t, size=uint64_t)
cdef inline Py_ssize_t _frame_end(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                  Py_ssize_t max_frame_size, bint strict) noexcept
@cython.locals(n=Py_ssize_t)
cdef object _prefix_error(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                          Py_ssize_t max_frame_size, bint strict, Py_ssize_t base)
@cython.locals(n=Py_ssize_t)
cdef object _cut_error(const uchar *data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t base)
@cython.locals(end=Py_ssize_t, data="const uchar *", start=Py_ssize_t, stop=Py_ssize_t)
cpdef Py_ssize_t frames_end(memoryview view, Py_ssize_t pos, Py_ssize_t limit,
                            Py_ssize_t max_frame_size, bint strict,
                            Py_ssize_t max_bytes) except -1
@cython.locals(end=Py_ssize_t, data="const uchar *", stop=Py_ssize_t)
cpdef object frame_error(memoryview view, Py_ssize_t pos, Py_ssize_t max_frame_size, bint strict,
                         Py_ssize_t base)
cdef const uchar *_view_bytes(memoryview view) except? NULL
