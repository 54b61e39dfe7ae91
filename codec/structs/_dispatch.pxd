# C types for _dispatch.py (Cython pure-Python mode).
cimport cython

from codec._buffer cimport MemoryViewPointer, byte_pointer, copy_bytes
from codec.structs._decode cimport Decoder
from codec.structs._encode cimport Tape, measure, release, write_tape
from codec.structs._struct cimport Struct

cdef extern from "Python.h":
    int PyObject_CheckBuffer(object obj)
    char *PyBytes_AS_STRING(object data)

cdef object payload_of(object message, bint partial, bint deterministic)
@cython.locals(size=Py_ssize_t)
cdef Py_ssize_t staged_size(object staged) except -1
@cython.locals(size=Py_ssize_t, source=cython.p_uchar)
cdef Py_ssize_t write_staged(object staged, bytearray data, Py_ssize_t pos) except -1
cdef void release_staged(object staged) except *
cdef bint _has_buffer(object value) noexcept
@cython.locals(serialize=object)
cdef bytes _serialized(object message, bint partial, bint deterministic)
cdef list _last_serializers
@cython.locals(last=tuple, method=object)
cdef object _serializer(type cls, bint partial)

@cython.final
cdef class Parser:
    cdef readonly Decoder decoder
    cdef readonly object message_type
    cdef object parse(self, memoryview frame, Py_ssize_t offset, Py_ssize_t prefix)

@cython.locals(decoder=Decoder)
cdef Parser parser_for(object message_type)
