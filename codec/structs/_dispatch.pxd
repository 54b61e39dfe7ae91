# C types for _dispatch.py (Cython pure-Python mode).
cimport cython

from codec.structs._decode cimport Decoder
from codec.structs._encode cimport measure
from codec.structs._struct cimport Struct

cdef extern from "Python.h":
    int PyObject_CheckBuffer(object obj)

cdef object payload_of(object message, bint partial)
cdef bint _has_buffer(object value) noexcept
@cython.locals(serialize=object)
cdef bytes _serialized(object message, bint partial)
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
